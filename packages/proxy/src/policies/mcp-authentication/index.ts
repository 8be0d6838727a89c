// mcpAuthentication: the gateway as an OAuth 2.1 protected resource, the way the MCP authorization
// specification asks. Discovery requests are answered here (well-known.ts); every other request needs
// a bearer token from the issuer whose audience is the resource (the configured audiences, else the
// resource's URL). A request without one gets 401 with a WWW-Authenticate header that points at the
// protected resource metadata, which is how an MCP client learns where to get a token. Claims become
// `jwt.*`, so mcpAuthorization rules can use them; the token is not forwarded.
import type { McpAuthentication } from '@gw/api';
import { entraEndpoints } from '@gw/api/runtime';
import type { McpAuthenticationIR } from '../../config/ir.ts';
import { GwError } from '../../errors.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import {
  BEARER,
  compileLocation,
  normalizeMode,
  readCredential,
} from '../../pipeline/credential-location.ts';
import { type JwksSource, JwtVerifier } from '../jwt-auth/verifier.ts';
import type { PolicyDefinition } from '../types.ts';
import {
  answerDiscovery,
  type Discovery,
  discovery,
  isDiscoveryPath,
  MetadataCache,
  metadataUrlFor,
  resourceFor,
} from './well-known.ts';

/**
 * Where the keys are when the config names none: agentgateway's derivation, by provider (Keycloak
 * publishes them under protocol/openid-connect, authentik at jwks/ under the application's issuer
 * https://<host>/application/o/<slug>/, Entra at the tenant's discovery/v2.0/keys, the others at
 * .well-known/jwks.json).
 */
export function derivedJwks(config: Pick<McpAuthentication, 'issuer' | 'provider'>): { url: string } {
  const issuer = config.issuer.replace(/\/+$/, '');
  if (config.provider && 'keycloak' in config.provider)
    return { url: `${issuer}/protocol/openid-connect/certs` };
  if (config.provider && 'authentik' in config.provider) return { url: `${issuer}/jwks/` };
  if (config.provider && 'entra' in config.provider) {
    // the loader checked that the issuer names a tenant
    const e = entraEndpoints(config.issuer);
    if (typeof e !== 'string') return { url: e.jwksUri };
  }
  return { url: `${issuer}/.well-known/jwks.json` };
}

function jwksOf(config: McpAuthenticationIR): JwksSource {
  const j = config.jwks;
  if (j === undefined || j === null) return derivedJwks(config);
  // agentgateway writes an inline JWKS as a plain string
  return typeof j === 'string' ? { inline: j } : j;
}

/** `"` and `\` cannot appear inside a quoted auth-param (RFC 9110 §11.2) without escaping. */
const quoted = (s: string) => `"${s.replace(/["\\]/g, (c) => `\\${c}`)}"`;

function challenge(d: Discovery, ctx: RequestContext, error?: string): string {
  const params = [];
  if (error) params.push(`error="invalid_token"`, `error_description=${quoted(error)}`);
  params.push(`resource_metadata=${quoted(metadataUrlFor(d, ctx, ctx.path))}`);
  return `Bearer ${params.join(', ')}`;
}

export const mcpAuthentication: PolicyDefinition<'mcpAuthentication'> = {
  name: 'mcpAuthentication',
  build(config) {
    const d = discovery(config);
    const cache = new MetadataCache();
    const verifier = new JwtVerifier(
      [{ issuer: config.issuer, jwks: jwksOf(config) }],
      config.jwtValidationOptions?.requiredClaims,
    );
    const mode = normalizeMode(config.mode);
    const location = compileLocation(config.authorizationLocation, BEARER);
    return async (ctx, next) => {
      if (isDiscoveryPath(ctx.path)) {
        ctx.response = await answerDiscovery(d, ctx, cache);
        return;
      }
      const cred = readCredential(ctx, location);
      if (!cred) {
        if (mode === 'strict')
          throw new GwError('GW_ERR_UNAUTHENTICATED', `a bearer token from ${config.issuer} is required`, {
            headers: { 'www-authenticate': challenge(d, ctx) },
          });
        return next(ctx);
      }
      try {
        ctx.ext.jwt = await verifier.verify(cred.value, d.audiences ?? [resourceFor(d, ctx, ctx.path)]);
      } catch (err) {
        if (mode === 'permissive') return next(ctx);
        if (err instanceof GwError) err.headers = { 'www-authenticate': challenge(d, ctx, err.detail) };
        throw err;
      }
      // MCP servers must not receive the client's token (the specification forbids passing it through).
      cred.remove(ctx);
      return next(ctx);
    };
  },
};
