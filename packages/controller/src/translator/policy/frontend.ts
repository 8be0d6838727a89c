// GwPolicy spec.frontend → FrontendPolicies: one mapper per field (frontend/<field>.ts). A frontend
// field without an entry here is a type error.
import { MapContext, type ServicePolicyLookup } from './context.ts';
import { accessLog } from './frontend/access-log.ts';
import { connect } from './frontend/connect.ts';
import { http } from './frontend/http.ts';
import { metrics } from './frontend/metrics.ts';
import { networkAuthorization } from './frontend/network-authorization.ts';
import { proxyProtocol } from './frontend/proxy-protocol.ts';
import { tcp } from './frontend/tcp.ts';
import { tls } from './frontend/tls.ts';
import { tracing } from './frontend/tracing.ts';
import type { PolicyResult } from './result.ts';
import { mapSections, type SectionMap } from './section.ts';
import type { FrontendPolicies, FrontendSpec } from './spec.ts';

export const FRONTEND_SECTIONS = {
  networkAuthorization,
  accessLog,
  tcp,
  tls,
  http,
  tracing,
  metrics,
  proxyProtocol,
  connect,
} satisfies SectionMap<FrontendSpec, FrontendPolicies>;

/** GwPolicy spec.frontend → FrontendPolicies. `field` prefixes the problems (default `frontend`). */
export function frontendPolicy(
  spec: FrontendSpec,
  namespace: string,
  lookup: MapContext['lookup'],
  field = 'frontend',
  services?: ServicePolicyLookup,
): PolicyResult<FrontendPolicies> {
  const ctx = new MapContext(namespace, lookup);
  if (services) ctx.services = services;
  const out: FrontendPolicies = {};
  mapSections(FRONTEND_SECTIONS, spec, ctx, out, { field, path: ['spec', field] });
  return { policies: out, problems: ctx.problems, invalid: ctx.invalid };
}
