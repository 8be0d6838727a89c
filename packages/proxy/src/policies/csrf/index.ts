// csrf: rejects state-changing browser requests from other origins. Same-origin requests, requests
// from `additionalOrigins`, and non-browser requests (no Sec-Fetch-Site and no Origin) pass.
import { GwError } from '../../errors.ts';
import type { PolicyDefinition } from '../types.ts';

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE']);

export const csrf: PolicyDefinition<'csrf'> = {
  name: 'csrf',
  build(config) {
    const trusted = new Set((config.additionalOrigins ?? []).map((o) => o.toLowerCase()));
    return (ctx, next) => {
      if (SAFE.has(ctx.method)) return next(ctx);
      const site = ctx.headers['sec-fetch-site'];
      if (site === 'same-origin' || site === 'none') return next(ctx);
      const origin = ctx.headers.origin;
      if (typeof origin !== 'string' || origin === '') {
        // A browser always sends one of the two on cross-site requests; without both it is not one.
        if (site === undefined) return next(ctx);
        throw new GwError('GW_ERR_CSRF');
      }
      const o = origin.toLowerCase();
      if (trusted.has(o)) return next(ctx);
      let originHost: string;
      try {
        originHost = new URL(o).host;
      } catch {
        throw new GwError('GW_ERR_CSRF');
      }
      if (originHost === ctx.authority.toLowerCase()) return next(ctx);
      throw new GwError('GW_ERR_CSRF', `cross-site request from ${origin} rejected (CSRF)`);
    };
  },
};
