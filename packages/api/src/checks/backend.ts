// Checks of backend policies (the standalone BackendPolicies shape) across fields: a client
// certificate needs its key, skipping verification excludes verifying names, mcpAuthentication and
// backendAuth.
import type { BackendPolicies } from '../config/schema.ts';
import type { FieldPath } from '../config/source.ts';
import { checkBackendAuth } from './backend-auth.ts';
import { checkMcpAuthentication } from './mcp-authentication.ts';
import type { Problem } from './problem.ts';
import { checkTransformations } from './transformations.ts';

export function checkBackendPolicies(p: BackendPolicies, path: FieldPath): Problem[] {
  const out: Problem[] = [];
  if (p.mcpAuthentication)
    out.push(...checkMcpAuthentication(p.mcpAuthentication, [...path, 'mcpAuthentication']));
  if (p.backendAuth) out.push(...checkBackendAuth(p.backendAuth, [...path, 'backendAuth']));
  if (p.transformations) out.push(...checkTransformations(p.transformations, [...path, 'transformations']));
  const t = p.backendTLS;
  if (!t) return out;
  const tp = [...path, 'backendTLS'];
  if (Boolean(t.cert) !== Boolean(t.key))
    out.push({ path: tp, message: 'cert and key must be set together for mTLS' });
  if (t.insecure && t.subjectAltNames)
    out.push({ path: tp, message: 'at most one of insecure and subjectAltNames' });
  return out;
}
