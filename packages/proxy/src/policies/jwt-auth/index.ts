// jwtAuth: validates a JWT from the configured location against the providers' JWKS (inline, or
// remote with caching and refetch on an unknown key id). `iss` picks the provider, `aud` must be one
// of its audiences when set, and the token needs a `kid` and an `exp`. Claims become `jwt.*` in CEL.
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  decodeJwt,
  errors,
  type JWTVerifyGetKey,
  jwtVerify,
} from 'jose';
import { GwError } from '../../errors.ts';
import {
  BEARER,
  compileLocation,
  normalizeMode,
  readCredential,
} from '../../pipeline/credential-location.ts';
import type { PolicyDefinition } from '../types.ts';

/**
 * After a fetch, a token with an unknown key id triggers another fetch only after this long: key
 * rotation is picked up within seconds, and tokens with made-up key ids cannot hammer the IdP.
 */
const REFETCH_COOLDOWN_MS = 5_000;
const VERIFIED_CACHE_MAX = 10_000;

interface Provider {
  issuer: string;
  audiences: string[] | undefined;
  keys: JWTVerifyGetKey;
}

function keySet(jwks: { inline: string } | { file: string } | { url: string }): JWTVerifyGetKey {
  if ('url' in jwks)
    return createRemoteJWKSet(new URL(jwks.url), {
      cooldownDuration: REFETCH_COOLDOWN_MS,
      cacheMaxAge: 600_000,
    });
  // The loader has already turned `file` into `inline`.
  const text = 'inline' in jwks ? jwks.inline : '';
  return createLocalJWKSet(JSON.parse(text));
}

function reason(err: unknown): string {
  if (err instanceof errors.JWTExpired) return 'token expired';
  if (err instanceof errors.JWTClaimValidationFailed) return `claim ${err.claim} is not valid`;
  if (err instanceof errors.JWKSNoMatchingKey) return 'no key in the JWKS matches the token';
  if (err instanceof errors.JWSSignatureVerificationFailed) return 'signature does not verify';
  if (err instanceof errors.JWKSTimeout || err instanceof errors.JOSEError) return err.message;
  return 'token cannot be verified';
}

export const jwtAuth: PolicyDefinition<'jwtAuth'> = {
  name: 'jwtAuth',
  build(config) {
    const list =
      config.providers ??
      (config.issuer && config.jwks
        ? [{ issuer: config.issuer, audiences: config.audiences, jwks: config.jwks }]
        : []);
    const providers = new Map<string, Provider>(
      list.map((p) => [p.issuer, { issuer: p.issuer, audiences: p.audiences, keys: keySet(p.jwks) }]),
    );
    const mode = normalizeMode(config.mode);
    const location = compileLocation(config.location, BEARER);
    const unauthorized = (detail: string) =>
      new GwError(
        detail === 'missing' ? 'GW_ERR_UNAUTHENTICATED' : 'GW_ERR_JWT_INVALID',
        detail === 'missing' ? 'JWT is missing' : `invalid JWT: ${detail}`,
        {
          headers: { 'www-authenticate': 'Bearer' },
        },
      );
    // Tokens that verified, until their `exp`: a client sends the same token on every request, and an
    // RS256 check costs tens of microseconds. Issuer, audience and keys are fixed for this policy.
    const verified = new Map<string, { claims: Record<string, unknown>; expMs: number }>();
    return async (ctx, next) => {
      const cred = readCredential(ctx, location);
      if (!cred) {
        if (mode === 'strict') throw unauthorized('missing');
        return next(ctx);
      }
      let iss: string | undefined;
      try {
        iss = decodeJwt(cred.value).iss;
      } catch {
        if (mode === 'permissive') return next(ctx);
        throw unauthorized('malformed token');
      }
      const cached = verified.get(cred.value);
      if (cached && cached.expMs > Date.now()) {
        ctx.ext.jwt = cached.claims;
        if (!config.preserveToken) cred.remove(ctx);
        return next(ctx);
      }
      if (cached) verified.delete(cred.value);
      const provider = iss ? providers.get(iss) : undefined;
      try {
        if (!provider)
          throw new GwError(
            'GW_ERR_JWT_INVALID',
            `invalid JWT: issuer ${JSON.stringify(iss ?? '')} is not trusted`,
          );
        const { payload, protectedHeader } = await jwtVerify(cred.value, provider.keys, {
          issuer: provider.issuer,
          ...(provider.audiences ? { audience: provider.audiences } : {}),
          requiredClaims: ['exp'],
        });
        if (!protectedHeader.kid)
          throw new GwError('GW_ERR_JWT_INVALID', 'invalid JWT: the header has no kid');
        ctx.ext.jwt = payload as Record<string, unknown>;
        if (verified.size >= VERIFIED_CACHE_MAX) verified.clear();
        verified.set(cred.value, { claims: ctx.ext.jwt, expMs: (payload.exp as number) * 1000 });
      } catch (err) {
        if (mode === 'permissive') return next(ctx);
        if (err instanceof GwError) {
          err.headers = { 'www-authenticate': 'Bearer' };
          throw err;
        }
        throw unauthorized(reason(err));
      }
      if (!config.preserveToken) cred.remove(ctx);
      return next(ctx);
    };
  },
};
