// spec.backend.mcp (a GwPolicy on an mcp GwBackend or one of its targets; GwBackend spec.policies.mcp)
// → mcpAuthorization, mcpGuardrails and (deprecated) mcpAuthentication. Each GwPolicy authorization
// block has one action; the standalone rules spell it per rule. A processor is called at its url or
// its Service's address; the authentication block becomes the mcp backend's own mcpAuthentication.
import { checkAuthorization, checkCelMap } from '@gw/api';
import { type At, below, defined, type MapContext, serviceAddress } from '../context.ts';
import { mcpAuthentication, remoteJwks } from '../mcp-authentication.ts';
import type { BackendMapper, BackendPolicies, BackendSpec } from '../spec.ts';
import { authorizationBlock } from '../traffic/authorization.ts';

type McpAuthorizationRules = NonNullable<BackendPolicies['mcpAuthorization']>['rules'];
type McpGuardrailsSpec = NonNullable<NonNullable<BackendSpec['mcp']>['guardrails']>;
type Processor = NonNullable<BackendPolicies['mcpGuardrails']>['processors'][number];

export const mcp: BackendMapper<'mcp'> = {
  map(spec, ctx, out, at) {
    ctx.rest(at.field, spec, ['authorization', 'authentication', 'guardrails']);
    if (spec.authentication) authentication(spec.authentication, ctx, out, below(at, 'authentication'));
    if (spec.guardrails) guardrails(spec.guardrails, ctx, out, below(at, 'guardrails'));
    const a = spec.authorization;
    if (!a) return;
    // the standalone's rule keys are the actions in lower case (allow, deny, and the third)
    const key = a.action.toLowerCase() as 'allow' | 'deny';
    const rules = a.policy.matchExpressions.map((e) => ({ [key]: e })) as McpAuthorizationRules;
    out.mcpAuthorization = { rules: [...(out.mcpAuthorization?.rules ?? []), ...rules] };
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
  // the spec's jwks.remote, or agentgateway's form with the endpoint directly under jwks
  const remote = a.jwks.remote ?? a.jwks;
  const jf = a.jwks.remote ? `${at.field}.jwks.remote` : `${at.field}.jwks`;
  ctx.rest(jf, remote, ['url', 'backendRef', 'jwksPath', ...(a.jwks.remote ? [] : ['remote'])]);
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
      jwks: remoteJwks(ctx, jf, remote),
      mode: a.mode,
      provider: a.provider,
      resourceMetadata: a.resourceMetadata,
      clientId: a.clientId,
    },
    (p) => [...at.path, ...p],
  );
}

function guardrails(g: McpGuardrailsSpec, ctx: MapContext, out: BackendPolicies, at: At): void {
  const processors: Processor[] = [];
  let unusable = false;
  g.processors.forEach((p, i) => {
    const field = `${at.field}.processors[${i}].remote`;
    const r = p.remote;
    let host = r.url;
    let failureMode = r.failureMode === 'FailOpen' ? 'failOpen' : 'failClosed';
    if (r.backendRef) {
      const svc = serviceAddress(ctx, `${field}.backendRef`, r.backendRef);
      if (!svc) {
        unusable = true;
        return;
      }
      host = `${svc.https ? 'https' : 'http'}://${svc.hostPort}`;
      if (!svc.resolved && failureMode === 'failOpen') {
        // FailOpen is for an outage of a processor that exists; a dangling reference is a mistake.
        ctx.problem(field, 'failureMode is FailClosed until the backendRef resolves');
        failureMode = 'failClosed';
      }
    }
    if (host === undefined) return; // the CRD requires exactly one of url and backendRef
    ctx.check(checkCelMap(r.metadata, [...at.path, 'processors', i, 'remote', 'metadata']));
    const headers = defined({ allowed: r.allowedRequestHeaders, disallowed: r.disallowedRequestHeaders });
    processors.push(
      defined({
        host,
        failureMode: failureMode as 'failOpen' | 'failClosed',
        metadata: r.metadata,
        requestHeaders: Object.keys(headers).length > 0 ? headers : undefined,
        methods: p.methods,
      }),
    );
  });
  if (unusable) {
    // A guardrail that cannot be called must not leave the backend unguarded: it refuses everything.
    ctx.problem(at.field, 'a processor has no address to call: every MCP request is refused');
    out.mcpAuthorization = { rules: [{ deny: 'true' }, ...(out.mcpAuthorization?.rules ?? [])] };
    return;
  }
  out.mcpGuardrails = { processors };
}
