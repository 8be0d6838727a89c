// spec.traffic.authorization → authorization (the GwPolicy form: one action per block). Its match
// expressions are checked as CEL.
import { checkAuthorization } from '@gw/api';
import type { TrafficMapper, TrafficSpec } from '../spec.ts';

type AuthorizationSpec = NonNullable<TrafficSpec['authorization']>;

/** The GwPolicy block as the standalone's; frontend networkAuthorization has the same shape. */
export function authorizationBlock(a: AuthorizationSpec) {
  return { action: a.action, policy: { matchExpressions: [...a.policy.matchExpressions] } };
}

export const authorization: TrafficMapper<'authorization'> = {
  map(spec, ctx, out, at) {
    out.authorization = authorizationBlock(spec);
    ctx.check(checkAuthorization(out.authorization, at.path));
  },
};
