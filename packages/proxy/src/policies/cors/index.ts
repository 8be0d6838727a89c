// cors: answers preflights from allowed origins itself (so they never need authentication) and adds
// the Access-Control-* headers to responses for allowed origins.
import { parseGoDuration } from '@gw/api/runtime';
import type { PolicyDefinition } from '../types.ts';

function originMatcher(patterns: string[]): (origin: string) => boolean {
  if (patterns.includes('*')) return () => true;
  const exact = new Set(patterns.filter((p) => !p.includes('*')).map((p) => p.toLowerCase()));
  const globs = patterns
    .filter((p) => p.includes('*'))
    .map((p) => new RegExp(`^${p.toLowerCase().split('*').map(escapeRe).join('[^/]*')}$`));
  return (origin) => {
    const o = origin.toLowerCase();
    return exact.has(o) || globs.some((g) => g.test(o));
  };
}
const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

declare module '../../pipeline/context.ts' {
  interface RequestExtensions {
    /** A cors policy wrote the response's CORS headers (an outer one, the gateway phase's, leaves them). */
    corsAnswered?: boolean;
  }
}

export const cors: PolicyDefinition<'cors'> = {
  name: 'cors',
  build(config) {
    const allowed = originMatcher(config.allowOrigins ?? []);
    const anyOrigin = (config.allowOrigins ?? []).includes('*') && !config.allowCredentials;
    const methods = (config.allowMethods ?? []).join(', ');
    const headers = (config.allowHeaders ?? []).join(', ');
    // A browser does not take `*` as a wildcard in an answer to a request with credentials: then a
    // preflight is answered with the method and headers it asks for.
    const reflectMethod = !!config.allowCredentials && (config.allowMethods ?? []).includes('*');
    const reflectHeaders = !!config.allowCredentials && (config.allowHeaders ?? []).includes('*');
    const expose = (config.exposeHeaders ?? []).join(', ');
    const maxAge = config.maxAge ? String(Math.floor((parseGoDuration(config.maxAge) ?? 0) / 1000)) : '';
    return async (ctx, next) => {
      const origin = ctx.headers.origin;
      if (typeof origin !== 'string' || !allowed(origin)) return next(ctx);
      const allowOrigin = anyOrigin ? '*' : origin;
      if (ctx.method === 'OPTIONS' && ctx.headers['access-control-request-method'] !== undefined) {
        const h: Record<string, string> = { 'access-control-allow-origin': allowOrigin };
        const askedMethod = ctx.headers['access-control-request-method'];
        const askedHeaders = ctx.headers['access-control-request-headers'];
        if (reflectMethod && typeof askedMethod === 'string') h['access-control-allow-methods'] = askedMethod;
        else if (methods) h['access-control-allow-methods'] = methods;
        if (reflectHeaders) {
          if (typeof askedHeaders === 'string' && askedHeaders !== '')
            h['access-control-allow-headers'] = askedHeaders;
        } else if (headers) h['access-control-allow-headers'] = headers;
        if (maxAge) h['access-control-max-age'] = maxAge;
        if (config.allowCredentials) h['access-control-allow-credentials'] = 'true';
        if (!anyOrigin)
          h.vary =
            reflectMethod || reflectHeaders
              ? 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers'
              : 'Origin';
        ctx.response = { status: 200, headers: h, body: null };
        return;
      }
      await next(ctx);
      const r = ctx.response;
      // a route's own cors (inside a gateway-phase one) answered for this origin: the more specific wins
      if (!r || ctx.ext.corsAnswered) return;
      ctx.ext.corsAnswered = true;
      r.headers['access-control-allow-origin'] = allowOrigin;
      if (config.allowCredentials) r.headers['access-control-allow-credentials'] = 'true';
      if (expose) r.headers['access-control-expose-headers'] = expose;
      if (!anyOrigin) {
        const vary = r.headers.vary;
        const list = vary === undefined ? '' : Array.isArray(vary) ? vary.join(', ') : vary;
        if (!/(^|,)\s*origin\s*(,|$)/i.test(list)) r.headers.vary = list ? `${list}, Origin` : 'Origin';
      }
    };
  },
};
