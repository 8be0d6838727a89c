// Checks of backend policies (the standalone BackendPolicies shape) across fields: a client
// certificate needs its key, skipping verification excludes verifying names, key exchange groups the
// TLS library knows, a tunnel's credential in a header, active health timings, mcpAuthentication and
// backendAuth.
import type { BackendPolicies, BackendTLS } from '../config/schema.ts';
import type { FieldPath } from '../config/source.ts';
import { keyExchangeGroupAvailable } from '../tls-names.ts';
import { checkBackendAuth } from './backend-auth.ts';
import { checkBackendHealth } from './health.ts';
import { checkMcpAuthentication } from './mcp-authentication.ts';
import type { Problem } from './problem.ts';
import { checkTransformations } from './transformations.ts';

/** backendTLS's cross-field rules (also for TLS to a policy's own service, such as ext_authz). */
export function checkTls(t: BackendTLS, tp: FieldPath): Problem[] {
  const out: Problem[] = [];
  if (Boolean(t.cert) !== Boolean(t.key))
    out.push({ path: tp, message: 'cert and key must be set together for mTLS' });
  if (t.insecure && t.subjectAltNames)
    out.push({ path: tp, message: 'at most one of insecure and subjectAltNames' });
  (t.keyExchangeGroups ?? []).forEach((g, i) => {
    if (!keyExchangeGroupAvailable(g))
      out.push({
        path: [...tp, 'keyExchangeGroups', i],
        message: `key exchange group ${g} is not available in this build's TLS library (OpenSSL ${process.versions.openssl})`,
      });
  });
  return out;
}

export function checkBackendPolicies(p: BackendPolicies, path: FieldPath): Problem[] {
  const out: Problem[] = [];
  if (p.mcpAuthentication)
    out.push(...checkMcpAuthentication(p.mcpAuthentication, [...path, 'mcpAuthentication']));
  if (p.backendAuth) out.push(...checkBackendAuth(p.backendAuth, [...path, 'backendAuth']));
  if (p.transformations) out.push(...checkTransformations(p.transformations, [...path, 'transformations']));
  if (p.backendTLS) out.push(...checkTls(p.backendTLS, [...path, 'backendTLS']));
  if (p.health) out.push(...checkBackendHealth(p.health, [...path, 'health']));
  const tunnel = p.backendTunnel?.policies;
  if (tunnel) {
    const tp = [...path, 'backendTunnel', 'policies'];
    if (tunnel.backendTLS) out.push(...checkTls(tunnel.backendTLS, [...tp, 'backendTLS']));
    const key = tunnel.backendAuth && 'key' in tunnel.backendAuth ? tunnel.backendAuth.key : undefined;
    const location = key && typeof key === 'object' && 'value' in key ? key.location : undefined;
    if (location && !('header' in location))
      out.push({
        path: [...tp, 'backendAuth', 'key', 'location'],
        message:
          'the credential of a backendTunnel proxy is sent in a header (Proxy-Authorization by default)',
      });
  }
  return out;
}
