// Every route policy's build function, keyed by config field. A missing entry is a type error.
import type { ResolvedBackendPolicies, RoutePolicies } from '../config/ir.ts';
import type { Layer } from '../pipeline/layer.ts';
import { apiKey } from './api-key/index.ts';
import { authorization } from './authorization/index.ts';
import { backendAuth } from './backend-auth/index.ts';
import { basicAuth } from './basic-auth/index.ts';
import { buffer } from './buffer/index.ts';
import { concurrencyLimit } from './concurrency-limit/index.ts';
import { cors } from './cors/index.ts';
import { csrf } from './csrf/index.ts';
import { delay } from './delay/index.ts';
import { directResponse } from './direct-response/index.ts';
import { extAuthz } from './ext-authz/index.ts';
import { extProc } from './ext-proc/index.ts';
import { requestHeaderModifier, responseHeaderModifier } from './header-modifier/index.ts';
import { ipAccessControl } from './ip-access-control/index.ts';
import { jwtAuth } from './jwt-auth/index.ts';
import { localRateLimit } from './local-rate-limit/index.ts';
import { mcpAuthentication } from './mcp-authentication/index.ts';
import { oidc } from './oidc/index.ts';
import { BACKEND_ORDER, POLICY_ORDER } from './order.ts';
import { remoteRateLimit } from './remote-rate-limit/index.ts';
import { requestMirror } from './request-mirror/index.ts';
import { requestRedirect } from './request-redirect/index.ts';
import { retry } from './retry/index.ts';
import { timeout } from './timeout/index.ts';
import { transformations } from './transformations/index.ts';
import type { BackendPolicyName, BuildEnv, PolicyDefinition, PolicyName } from './types.ts';
import { urlRewrite } from './url-rewrite/index.ts';

export const POLICIES: { [K in PolicyName]: PolicyDefinition<K> } = {
  timeout,
  ipAccessControl,
  cors,
  mcpAuthentication,
  jwtAuth,
  oidc,
  basicAuth,
  apiKey,
  extAuthz,
  extProc,
  authorization,
  localRateLimit,
  remoteRateLimit,
  concurrencyLimit,
  buffer,
  csrf,
  requestHeaderModifier,
  responseHeaderModifier,
  urlRewrite,
  requestRedirect,
  delay,
  directResponse,
  requestMirror,
  transformations,
  retry,
  backendAuth,
};

/** The layers of a route's effective policy, in POLICY_ORDER. */
export function buildLayers(
  policies: RoutePolicies,
  global: BuildEnv['global'],
  route: string,
  shared: BuildEnv['shared'],
): { name: PolicyName; layer: Layer }[] {
  const env: BuildEnv = { global, policies, route, shared };
  const out: { name: PolicyName; layer: Layer }[] = [];
  for (const name of POLICY_ORDER) {
    const config = policies[name];
    if (config === undefined) continue;
    const def = POLICIES[name] as PolicyDefinition<typeof name>;
    out.push({ name, layer: def.build(config as never, env) });
  }
  return out;
}

/** The layers of a backend's own policies, in BACKEND_ORDER. */
export function buildBackendLayers(
  policies: Pick<ResolvedBackendPolicies, BackendPolicyName>,
  global: BuildEnv['global'],
  backend: string,
): { name: BackendPolicyName; layer: Layer }[] {
  // Backend policies keep no state across workers, so memory is local to this compile.
  const env: BuildEnv = { global, policies: {}, route: backend, shared: (_k, n) => new SharedArrayBuffer(n) };
  const out: { name: BackendPolicyName; layer: Layer }[] = [];
  for (const name of BACKEND_ORDER) {
    const config = policies[name];
    if (config === undefined) continue;
    const def = POLICIES[name] as PolicyDefinition<typeof name>;
    out.push({ name, layer: def.build(config as never, env) });
  }
  return out;
}
