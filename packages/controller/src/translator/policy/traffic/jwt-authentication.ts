// spec.traffic.jwtAuthentication → jwtAuth, or with `mcp` → mcpAuthentication (the gateway as an
// OAuth protected resource for MCP clients; one provider, whose issuer clients are sent to). JWKS come
// inline, from a URL, or from a Service serving them at `/`; a provider without usable keys gets an
// empty JWKS and the mode becomes strict. An inline JWKS that is not one, or a CEL token location
// that does not compile, is invalid.
import { checkJwks, checkTokenLocation } from '@gw/api';
import { defined, EMPTY_JWKS, lowerFirst } from '../context.ts';
import { mcpAuthentication, remoteJwks } from '../mcp-authentication.ts';
import { type TrafficMapper, tokenLocation } from '../spec.ts';

type Jwks = { inline: string } | { url: string };

/** Where a field of the standalone mcpAuthentication is in jwtAuthentication. */
const MCP_FIELDS: Record<string, (string | number)[]> = {
  issuer: ['providers', 0, 'issuer'],
  jwks: ['providers', 0, 'jwks', 'inline'],
  resourceMetadata: ['mcp', 'resourceMetadata'],
  authorizationLocation: ['location'],
};

export const jwtAuthentication: TrafficMapper<'jwtAuthentication'> = {
  map(spec, ctx, out, at) {
    const { field } = at;
    ctx.rest(field, spec, ['mode', 'providers', 'location', 'preserveToken', 'mcp']);
    let broken = false;
    const providers = spec.providers.map((p, i) => {
      const pf = `${field}.providers[${i}].jwks`;
      let jwks: Jwks | undefined;
      if (p.jwks.inline !== undefined) {
        const problems = checkJwks(p.jwks.inline, [...at.path, 'providers', i, 'jwks', 'inline']);
        ctx.check(problems);
        if (problems.length === 0) jwks = { inline: p.jwks.inline };
      } else if (p.jwks.remote) {
        ctx.rest(`${pf}.remote`, p.jwks.remote, ['url', 'backendRef', 'jwksPath']);
        jwks = remoteJwks(ctx, `${pf}.remote`, p.jwks.remote);
      }
      if (!jwks) broken = true;
      return { issuer: p.issuer, audiences: p.audiences, jwks };
    });
    const location = spec.location && tokenLocation(spec.location);
    if (spec.location) ctx.check(checkTokenLocation(tokenLocation(spec.location), [...at.path, 'location']));
    if (spec.mcp) {
      const m = spec.mcp;
      const [first] = providers;
      if (providers.length !== 1 || !first) {
        ctx.check([
          {
            path: [...at.path, 'providers'],
            message: `mcp needs exactly one provider, not ${providers.length}: its issuer is the authorization server MCP clients are sent to`,
          },
        ]);
        return;
      }
      if (spec.preserveToken)
        ctx.problem(
          `${field}.preserveToken`,
          'not honoured with mcp: an MCP server never gets the client’s token',
        );
      out.mcpAuthentication = mcpAuthentication(
        ctx,
        field,
        {
          issuer: first.issuer,
          audiences: first.audiences,
          jwks: first.jwks,
          mode: spec.mode,
          provider: m.provider,
          resourceMetadata: m.resourceMetadata,
          clientId: m.clientId,
          location,
        },
        ([k, ...rest]) => [
          ...at.path,
          ...(MCP_FIELDS[String(k)] ?? [String(k)]),
          ...rest.slice(k === 'jwks' ? 1 : 0),
        ],
      );
      return;
    }
    if (broken)
      ctx.problem(
        field,
        'a provider has no usable keys: tokens it issued are rejected and the mode is Strict',
      );
    out.jwtAuth = defined({
      mode: broken ? 'strict' : lowerFirst(spec.mode),
      providers: providers.map((p) =>
        defined({
          issuer: p.issuer,
          audiences: p.audiences && [...p.audiences],
          jwks: p.jwks ?? { inline: EMPTY_JWKS },
        }),
      ),
      location,
      preserveToken: spec.preserveToken,
    });
  },
};
