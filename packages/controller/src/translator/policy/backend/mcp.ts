// spec.backend.mcp (a GwPolicy on an mcp GwBackend or one of its targets; GwBackend spec.policies.mcp)
// → mcpAuthorization. Each GwPolicy block has one action; the standalone rules spell it per rule.
// The deprecated authentication block becomes the mcp backend's own mcpAuthentication.
import { checkAuthorization } from '@gw/api';
import { below } from '../context.ts';
import { mcpAuthentication, remoteJwks } from '../mcp-authentication.ts';
import type { BackendMapper, BackendPolicies } from '../spec.ts';
import { authorizationBlock } from '../traffic/authorization.ts';

type McpAuthorizationRules = NonNullable<BackendPolicies['mcpAuthorization']>['rules'];

export const mcp: BackendMapper<'mcp'> = {
  map(spec, ctx, out, at) {
    ctx.rest(at.field, spec, ['authorization', 'authentication']);
    if (spec.authentication) authentication(spec.authentication, ctx, out, below(at, 'authentication'));
    const a = spec.authorization;
    if (!a) return;
    // the standalone's rule keys are the actions in lower case (allow, deny, and the third)
    const key = a.action.toLowerCase() as 'allow' | 'deny';
    const rules = a.policy.matchExpressions.map((e) => ({ [key]: e })) as McpAuthorizationRules;
    out.mcpAuthorization = { rules };
    // checked in the GwPolicy form, so problems name the CRD's fields (policy.matchExpressions[i])
    ctx.check(checkAuthorization(authorizationBlock(a), below(at, 'authorization').path));
  },
};

/** backend.mcp.authentication (deprecated: traffic.jwtAuthentication.mcp runs before the route's policies). */
function authentication(
  a: NonNullable<Parameters<BackendMapper<'mcp'>['map']>[0]['authentication']>,
  ctx: Parameters<BackendMapper<'mcp'>['map']>[1],
  out: BackendPolicies,
  at: ReturnType<typeof below>,
): void {
  ctx.rest(at.field, a, ['resourceMetadata', 'provider', 'issuer', 'audiences', 'jwks', 'mode', 'clientId']);
  ctx.rest(`${at.field}.jwks.remote`, a.jwks.remote, ['url', 'backendRef']);
  if (a.issuer === undefined) {
    ctx.check([
      { path: [...at.path, 'issuer'], message: 'issuer is required: MCP clients are sent to it for tokens' },
    ]);
    return;
  }
  out.mcpAuthentication = mcpAuthentication(
    ctx,
    at.field,
    {
      issuer: a.issuer,
      audiences: a.audiences,
      jwks: remoteJwks(ctx, `${at.field}.jwks.remote`, a.jwks.remote),
      mode: a.mode,
      provider: a.provider,
      resourceMetadata: a.resourceMetadata,
      clientId: a.clientId,
    },
    (p) => [...at.path, ...p],
  );
}
