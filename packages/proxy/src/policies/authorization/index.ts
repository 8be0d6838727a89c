// authorization: CEL rules over the request, the source address, JWT claims and API key metadata;
// a denial is 403. Runs after authentication, so `jwt.*` and `apiKey.*` are there when valid. A rule
// that reads `request.body` has the body read first (up to the buffer limit), as agentgateway does.
import { GwError } from '../../errors.ts';
import { readRequestBody } from '../../pipeline/body.ts';
import type { Layer } from '../../pipeline/layer.ts';
import type { PolicyDefinition } from '../types.ts';
import { compileRules, decide } from './decision.ts';

export const authorization: PolicyDefinition<'authorization'> = {
  name: 'authorization',
  build(config, env) {
    const rules = compileRules(config);
    const check: Layer = (ctx, next) => {
      const d = decide(rules, ctx.celContext());
      if (!d.allowed) {
        ctx.obs?.event(ctx, 'authorization', { allowed: false, reason: d.reason }, null, 'warn');
        throw new GwError('GW_ERR_FORBIDDEN', 'authorization denied');
      }
      return next(ctx);
    };
    if (!rules.some((r) => r.expr.reads('request', 'body'))) return check;
    const limit = env.global.maxBufferSize;
    return async (ctx, next) => {
      await readRequestBody(ctx, limit);
      return check(ctx, next);
    };
  },
};
