// GwPolicy spec.traffic → TrafficPolicies: one mapper per field (traffic/<field>.ts), in the order the
// output lists them. A traffic field without an entry here is a type error.
import { MapContext, type ServicePolicyLookup } from './context.ts';
import type { PolicyResult } from './result.ts';
import { mapSections, type SectionMap } from './section.ts';
import type { TrafficPolicies, TrafficSpec } from './spec.ts';
import { apiKeyAuthentication } from './traffic/api-key-authentication.ts';
import { authorization } from './traffic/authorization.ts';
import { basicAuthentication } from './traffic/basic-authentication.ts';
import { buffer } from './traffic/buffer.ts';
import { concurrencyLimit } from './traffic/concurrency-limit.ts';
import { cors } from './traffic/cors.ts';
import { csrf } from './traffic/csrf.ts';
import { delay } from './traffic/delay.ts';
import { directResponse } from './traffic/direct-response.ts';
import { extAuth } from './traffic/ext-auth.ts';
import { extProc } from './traffic/ext-proc.ts';
import { headerModifiers } from './traffic/header-modifiers.ts';
import { hostRewrite } from './traffic/host-rewrite.ts';
import { ipAccessControl } from './traffic/ip-access-control.ts';
import { jwtAuthentication } from './traffic/jwt-authentication.ts';
import { phase } from './traffic/phase.ts';
import { rateLimit } from './traffic/rate-limit.ts';
import { retry } from './traffic/retry.ts';
import { timeouts } from './traffic/timeouts.ts';
import { transformation } from './traffic/transformation.ts';

export const TRAFFIC_SECTIONS = {
  phase,
  timeouts,
  ipAccessControl,
  retry,
  cors,
  csrf,
  authorization,
  jwtAuthentication,
  basicAuthentication,
  apiKeyAuthentication,
  extAuth,
  extProc,
  rateLimit,
  concurrencyLimit,
  buffer,
  transformation,
  headerModifiers,
  directResponse,
  hostRewrite,
  delay,
} satisfies SectionMap<TrafficSpec, TrafficPolicies>;

/** The traffic fields that decide who gets in: an invalid policy holding one fails closed. */
export const ACCESS_CONTROL: readonly (keyof TrafficSpec)[] = [
  'ipAccessControl',
  'authorization',
  'jwtAuthentication',
  'basicAuthentication',
  'apiKeyAuthentication',
  'extAuth',
];

/** GwPolicy spec.traffic → TrafficPolicies. `field` prefixes the problems (default `traffic`). */
export function trafficPolicy(
  spec: TrafficSpec,
  namespace: string,
  lookup: MapContext['lookup'],
  field = 'traffic',
  services?: ServicePolicyLookup,
): PolicyResult<TrafficPolicies> {
  const ctx = new MapContext(namespace, lookup);
  if (services) ctx.services = services;
  const out: TrafficPolicies = {};
  mapSections(TRAFFIC_SECTIONS, spec, ctx, out, { field, path: ['spec', field] });
  return { policies: out, problems: ctx.problems, invalid: ctx.invalid };
}
