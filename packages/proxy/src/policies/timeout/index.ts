// timeout: `requestTimeout` bounds the whole exchange, from arrival until the response is complete;
// `backendRequestTimeout` bounds each upstream attempt (read by the upstream caller);
// `responseIdleTimeout` bounds each wait for more of a backend's response body (upstream/call.ts
// watches it, from what this layer leaves on the request).
import { parseGoDuration } from '@gw/api/runtime';
import { GwError } from '../../errors.ts';
import type { PolicyDefinition } from '../types.ts';

declare module '../../pipeline/context.ts' {
  interface RequestExtensions {
    /** timeout.responseIdleTimeout in ms: the longest an upstream response body may go without data. */
    responseIdleMs?: number;
  }
}

export const timeout: PolicyDefinition<'timeout'> = {
  name: 'timeout',
  build(config) {
    const ms = config.requestTimeout ? (parseGoDuration(config.requestTimeout) ?? 0) : 0;
    const idle = config.responseIdleTimeout ? (parseGoDuration(config.responseIdleTimeout) ?? 0) : 0;
    if (ms <= 0 && idle <= 0) return (ctx, next) => next(ctx);
    if (ms <= 0)
      return (ctx, next) => {
        ctx.ext.responseIdleMs = idle;
        return next(ctx);
      };
    return async (ctx, next) => {
      if (idle > 0) ctx.ext.responseIdleMs = idle;
      const remaining = ms - (performance.now() - ctx.startTime);
      const timer = setTimeout(() => ctx.abort(new GwError('GW_ERR_TIMEOUT')), Math.max(0, remaining));
      // The timer runs until the response is fully written (or the client goes away).
      ctx.res.once('close', () => clearTimeout(timer));
      await next(ctx);
    };
  },
};
