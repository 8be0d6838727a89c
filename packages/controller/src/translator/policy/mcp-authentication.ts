// The two CRD forms of MCP authentication → the standalone mcpAuthentication, so both reach the proxy
// as the same policy: traffic.jwtAuthentication.mcp (the one JWT provider's issuer, audiences and keys
// plus the MCP settings; a route policy, before the others) and the deprecated
// backend.mcp.authentication (one block; a policy of the mcp backend, after the route's). @gw/api's
// check runs on the result and its problems are moved to the CRD fields the user wrote.
import { checkMcpAuthentication, type FieldPath, type McpAuthentication, type Problem } from '@gw/api';
import { defined, EMPTY_JWKS, lowerFirst, type MapContext, serviceAddress } from './context.ts';

type Jwks = { inline: string } | { url: string };

/**
 * A CRD JWKS remote (url, or a Service serving the keys at jwksPath, `/` when the policy names none);
 * undefined when it names none.
 */
export function remoteJwks(
  ctx: MapContext,
  field: string,
  r: {
    url?: string | undefined;
    backendRef?: Parameters<typeof serviceAddress>[2] | undefined;
    jwksPath?: string | undefined;
  },
): Jwks | undefined {
  if (r.url !== undefined) return { url: r.url };
  if (!r.backendRef) return undefined;
  const svc = serviceAddress(ctx, `${field}.backendRef`, r.backendRef);
  const path = r.jwksPath === undefined ? '' : r.jwksPath.startsWith('/') ? r.jwksPath : `/${r.jwksPath}`;
  return svc?.resolved ? { url: `${svc.https ? 'https' : 'http'}://${svc.hostPort}${path}` } : undefined;
}

const PROVIDERS = {
  Auth0: { auth0: {} },
  Authentik: { authentik: {} },
  Descope: { descope: {} },
  Entra: { entra: {} },
  Keycloak: { keycloak: {} },
  Okta: { okta: {} },
} as const;

export interface McpAuthenticationParts {
  issuer: string;
  audiences: readonly string[] | undefined;
  /** undefined: the keys could not be found (the caller reported why); tokens are then refused. */
  jwks: Jwks | undefined;
  mode: 'Strict' | 'Optional' | 'Permissive';
  provider: keyof typeof PROVIDERS | 'Generic' | undefined;
  resourceMetadata: Record<string, unknown> | undefined;
  clientId: string | undefined;
  location?: McpAuthentication['authorizationLocation'];
}

/**
 * The standalone policy, checked. `crdPath` maps a field of the standalone shape to where the user
 * wrote it. Keys that cannot be found fail closed: no keys and mode strict.
 */
export function mcpAuthentication(
  ctx: MapContext,
  field: string,
  parts: McpAuthenticationParts,
  crdPath: (standalone: FieldPath) => FieldPath,
): McpAuthentication {
  if (!parts.jwks)
    ctx.problem(field, 'the provider has no usable keys: every token is rejected and the mode is Strict');
  const out = defined({
    issuer: parts.issuer,
    audiences: parts.audiences && [...parts.audiences],
    jwks: parts.jwks ?? { inline: EMPTY_JWKS },
    mode: parts.jwks ? lowerFirst(parts.mode) : ('strict' as const),
    provider: parts.provider && parts.provider !== 'Generic' ? { ...PROVIDERS[parts.provider] } : undefined,
    resourceMetadata: parts.resourceMetadata && { ...parts.resourceMetadata },
    clientId: parts.clientId,
    authorizationLocation: parts.location,
  }) as McpAuthentication;
  ctx.check(
    checkMcpAuthentication(out, []).map((p): Problem => ({ path: crdPath(p.path), message: p.message })),
  );
  return out;
}
