// cors: answers preflights itself (so they never need authentication; one from an origin it does not
// allow without CORS headers) and adds the Access-Control-* headers to responses for allowed origins.
import { parseGoDuration } from '@gw/api/runtime';
import { GwError } from '../../errors.ts';
import type { Headers } from '../../pipeline/context.ts';
import { GATEWAY_PHASE_KEY, type PolicyDefinition } from '../types.ts';

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
  build(config, env) {
    const gatewayPhase = env.route.endsWith(GATEWAY_PHASE_KEY);
    const allowed = originMatcher(config.allowOrigins ?? []);
    const anyOrigin = (config.allowOrigins ?? []).includes('*') && !config.allowCredentials;
    const methods = (config.allowMethods ?? []).join(', ');
    const headers = (config.allowHeaders ?? []).join(', ');
    // `*` is answered with what the preflight asks for: a browser takes no wildcard in an answer to
    // a request with credentials, and `Access-Control-Allow-Headers: *` never covers Authorization.
    const reflectMethod = (config.allowMethods ?? []).includes('*');
    const reflectHeaders = (config.allowHeaders ?? []).includes('*');
    const expose = (config.exposeHeaders ?? []).join(', ');
    const maxAge = config.maxAge ? String(Math.floor((parseGoDuration(config.maxAge) ?? 0) / 1000)) : '';
    /** What an answer to an allowed origin carries (a response, or an error the gateway answers). */
    const answerHeaders = (h: Headers, allowOrigin: string) => {
      h['access-control-allow-origin'] = allowOrigin;
      if (config.allowCredentials) h['access-control-allow-credentials'] = 'true';
      if (expose) h['access-control-expose-headers'] = expose;
      if (!anyOrigin) {
        const vary = h.vary;
        const list = vary === undefined ? '' : Array.isArray(vary) ? vary.join(', ') : vary;
        if (!/(^|,)\s*origin\s*(,|$)/i.test(list)) h.vary = list ? `${list}, Origin` : 'Origin';
      }
    };
    return async (ctx, next) => {
      const origin = ctx.headers.origin;
      if (typeof origin !== 'string') return next(ctx);
      const preflight =
        ctx.method === 'OPTIONS' && ctx.headers['access-control-request-method'] !== undefined;
      if (!allowed(origin)) {
        // a preflight from an origin the policy does not allow is answered here, without CORS
        // headers (the browser then refuses the request), as agentgateway answers it: sent on, the
        // backend's own CORS answer could allow what the policy does not. In the gateway phase it
        // goes on to the route, whose own cors may allow it.
        if (!preflight || gatewayPhase) return next(ctx);
        ctx.response = { status: 200, headers: { vary: 'Origin' }, body: null };
        return;
      }
      const allowOrigin = anyOrigin ? '*' : origin;
      if (preflight) {
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
        const vary = [
          ...(anyOrigin ? [] : ['Origin']),
          ...(reflectMethod ? ['Access-Control-Request-Method'] : []),
          ...(reflectHeaders ? ['Access-Control-Request-Headers'] : []),
        ];
        if (vary.length > 0) h.vary = vary.join(', ');
        ctx.response = { status: 200, headers: h, body: null };
        return;
      }
      try {
        await next(ctx);
      } catch (err) {
        // an error the gateway answers (a timeout, an unreachable backend, a refusal after cors)
        // carries the headers too, so a browser sees the error, not a CORS failure
        if (err instanceof GwError && !ctx.ext.corsAnswered) {
          ctx.ext.corsAnswered = true;
          err.editHeaders((h) => answerHeaders(h, allowOrigin));
        }
        throw err;
      }
      const r = ctx.response;
      // a route's own cors (inside a gateway-phase one) answered for this origin: the more specific wins
      if (!r || ctx.ext.corsAnswered) return;
      ctx.ext.corsAnswered = true;
      answerHeaders(r.headers, allowOrigin);
    };
  },
};
