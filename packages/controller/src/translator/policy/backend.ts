// GwPolicy spec.backend and GwBackend spec.policies → BackendPolicies: one mapper per field
// (backend/<field>.ts). A backend field without an entry here is a type error.
import { checkBackendPolicies, type FieldPath } from '@gw/api';
import { ai } from './backend/ai.ts';
import { auth } from './backend/auth.ts';
import { extAuth } from './backend/ext-auth.ts';
import { health } from './backend/health.ts';
import { http } from './backend/http.ts';
import { mcp } from './backend/mcp.ts';
import { tcp } from './backend/tcp.ts';
import { tls } from './backend/tls.ts';
import { transformation } from './backend/transformation.ts';
import { tunnel } from './backend/tunnel.ts';
import { MapContext } from './context.ts';
import type { BackendPolicyResult } from './result.ts';
import { mapSections, type SectionMap } from './section.ts';
import type { BackendPolicies, BackendSpec, GwBackendPoliciesSpec } from './spec.ts';

const CRD_NAMES: Record<string | number, string> = {
  backendTLS: 'tls',
  backendAuth: 'auth',
  backendTunnel: 'tunnel',
};

export const BACKEND_SECTIONS = {
  tcp,
  http,
  tls,
  tunnel,
  auth,
  transformation,
  health,
  ai,
  mcp,
  extAuth,
} satisfies SectionMap<BackendSpec, BackendPolicies>;

/**
 * GwPolicy spec.backend or GwBackend spec.policies → BackendPolicies. `field` prefixes the problems
 * (default `backend`; `policies` for a GwBackend) and `path` is its CRD path (default spec.<field>).
 */
export function backendPolicy(
  spec: BackendSpec | GwBackendPoliciesSpec,
  namespace: string,
  lookup: MapContext['lookup'],
  field = 'backend',
  path: FieldPath = ['spec', field],
  /** The kind whose spec this is (a cross-namespace reference needs a ReferenceGrant for it). */
  owner = 'GwPolicy',
): BackendPolicyResult<BackendPolicies> {
  const ctx = new MapContext(namespace, lookup, owner);
  const out: BackendPolicies = {};
  const at = { field, path };
  mapSections(BACKEND_SECTIONS, spec as BackendSpec, ctx, out, at);
  // the standalone calls the TLS settings backendTLS and the credential backendAuth; the CRD tls and auth
  // transformations were checked by their mapper, at the CRD's list paths
  const { transformations: _checked, ...rest } = out;
  ctx.check(
    checkBackendPolicies(rest, at.path).map((p) => ({
      ...p,
      path: p.path.map((s, i) => (i === at.path.length ? (CRD_NAMES[s] ?? s) : s)),
    })),
  );
  return { policies: out, problems: ctx.problems, invalid: ctx.invalid, failClosed: ctx.failClosed };
}
