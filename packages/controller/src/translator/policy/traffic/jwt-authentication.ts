// spec.traffic.jwtAuthentication → jwtAuth. JWKS come inline, from a URL, or from a Service serving
// them at `/`; a provider without usable keys gets an empty JWKS and the mode becomes strict. An
// inline JWKS that is not one, or a CEL token location that does not compile, is invalid.
import { checkJwks, checkTokenLocation } from '@gw/api';
import { defined, EMPTY_JWKS, lowerFirst, serviceAddress } from '../context.ts';
import { type TrafficMapper, type TrafficPolicies, tokenLocation } from '../spec.ts';

type Jwks = NonNullable<NonNullable<TrafficPolicies['jwtAuth']>['jwks']>;

export const jwtAuthentication: TrafficMapper<'jwtAuthentication'> = {
  map(spec, ctx, out, at) {
    const { field } = at;
    ctx.rest(field, spec, ['mode', 'providers', 'location', 'preserveToken']);
    let broken = false;
    const providers = spec.providers.map((p, i) => {
      const pf = `${field}.providers[${i}].jwks`;
      let jwks: Jwks | undefined;
      if (p.jwks.inline !== undefined) {
        const problems = checkJwks(p.jwks.inline, [...at.path, 'providers', i, 'jwks', 'inline']);
        ctx.check(problems);
        if (problems.length === 0) jwks = { inline: p.jwks.inline };
      } else if (p.jwks.remote) {
        const r = p.jwks.remote;
        ctx.rest(`${pf}.remote`, r, ['url', 'backendRef']);
        if (r.url !== undefined) jwks = { url: r.url };
        else if (r.backendRef) {
          const svc = serviceAddress(ctx, `${pf}.remote.backendRef`, r.backendRef);
          if (svc?.resolved) jwks = { url: `${svc.https ? 'https' : 'http'}://${svc.hostPort}` };
        }
      }
      if (!jwks) {
        broken = true;
        jwks = { inline: EMPTY_JWKS };
      }
      return defined({ issuer: p.issuer, audiences: p.audiences && [...p.audiences], jwks });
    });
    if (broken)
      ctx.problem(
        field,
        'a provider has no usable keys: tokens it issued are rejected and the mode is Strict',
      );
    if (spec.location) ctx.check(checkTokenLocation(tokenLocation(spec.location), [...at.path, 'location']));
    out.jwtAuth = defined({
      mode: broken ? 'strict' : lowerFirst(spec.mode),
      providers,
      location: spec.location && tokenLocation(spec.location),
      preserveToken: spec.preserveToken,
    });
  },
};
