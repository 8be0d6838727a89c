// timeout: `requestTimeout` bounds the whole exchange, from arrival until the response is complete;
// `backendRequestTimeout` bounds each upstream attempt (read by the upstream caller).
import { parseGoDuration } from '@gw/api/runtime';
import { GwError } from '../../errors.ts';
import type { PolicyDefinition } from '../types.ts';

export const timeout: PolicyDefinition<'timeout'> = {
  name: 'timeout',
  build(config) {
    const ms = config.requestTimeout ? (parseGoDuration(config.requestTimeout) ?? 0) : 0;
    if (ms <= 0) return (ctx, next) => next(ctx);
    return async (ctx, next) => {
      const remaining = ms - (performance.now() - ctx.startTime);
      const timer = setTimeout(() => ctx.abort(new GwError('GW_ERR_TIMEOUT')), Math.max(0, remaining));
      // The timer runs until the response is fully written (or the client goes away).
      ctx.res.once('close', () => clearTimeout(timer));
      await next(ctx);
    };
  },
};
