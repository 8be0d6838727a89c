// authorization: CEL rules over the request, the source address, JWT claims and API key metadata;
// a denial is 403. Runs after authentication, so `jwt.*` and `apiKey.*` are there when valid.
import { GwError } from '../../errors.ts';
import type { PolicyDefinition } from '../types.ts';
import { compileRules, decide } from './decision.ts';

export const authorization: PolicyDefinition<'authorization'> = {
  name: 'authorization',
  build(config) {
    const rules = compileRules(config);
    return (ctx, next) => {
      const d = decide(rules, ctx.celContext());
      if (!d.allowed) {
        ctx.obs?.event(ctx, 'authorization', { allowed: false, reason: d.reason }, null, 'warn');
        throw new GwError('GW_ERR_FORBIDDEN', 'authorization denied');
      }
      return next(ctx);
    };
  },
};
