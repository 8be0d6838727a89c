// Verifying a JWT against trusted providers: `iss` picks the provider, its JWKS (inline, or remote
// with caching and a refetch on an unknown key id) checks the signature, `aud` must be one of the
// audiences when any are given, and the token needs a `kid` and an `exp` (a provider's requiredClaims
// may say otherwise, as agentgateway's jwtValidationOptions). Shared by jwtAuth and
// mcpAuthentication; a failure is a GwError whose detail says why.
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  decodeJwt,
  errors,
  type JWTVerifyGetKey,
  jwtVerify,
} from 'jose';
import { GwError } from '../../errors.ts';

/**
 * How far exp and nbf may be off, in seconds: the clocks of an identity provider and the gateway
 * are never quite the same (agentgateway allows 60 s past exp too, as Envoy's jwt_authn does).
 */
export const CLOCK_SKEW_S = 60;

/**
 * After a fetch, a token with an unknown key id triggers another fetch only after this long: key
 * rotation is picked up within seconds, and tokens with made-up key ids cannot hammer the IdP.
 */
const REFETCH_COOLDOWN_MS = 5_000;
const VERIFIED_CACHE_MAX = 10_000;

export type JwksSource = { inline: string } | { file: string } | { url: string };

export interface JwtProviderConfig {
  issuer: string;
  audiences?: string[] | undefined;
  jwks: JwksSource;
  /** Registered claims the token must carry; unset: those the verifier was made with (exp). */
  requiredClaims?: string[] | undefined;
}

interface Provider {
  issuer: string;
  audiences: string[] | undefined;
  keys: JWTVerifyGetKey;
  /** The provider's own required claims (agentgateway's jwtValidationOptions), exactly. */
  requiredClaims: string[] | undefined;
}

function keySet(jwks: JwksSource): JWTVerifyGetKey {
  if ('url' in jwks)
    return createRemoteJWKSet(new URL(jwks.url), {
      cooldownDuration: REFETCH_COOLDOWN_MS,
      cacheMaxAge: 600_000,
    });
  // The loader has already turned `file` into `inline`.
  const text = 'inline' in jwks ? jwks.inline : '';
  return createLocalJWKSet(JSON.parse(text));
}

/** Why a token did not verify, in words for the 401 a client gets. */
function reason(err: unknown): string {
  if (err instanceof errors.JWTExpired) return 'token expired';
  if (err instanceof errors.JWTClaimValidationFailed) return `claim ${err.claim} is not valid`;
  if (err instanceof errors.JWKSNoMatchingKey) return 'no key in the JWKS matches the token';
  if (err instanceof errors.JWSSignatureVerificationFailed) return 'signature does not verify';
  if (err instanceof errors.JWKSTimeout || err instanceof errors.JOSEError) return err.message;
  return 'token cannot be verified';
}

const invalid = (detail: string) => new GwError('GW_ERR_JWT_INVALID', `invalid JWT: ${detail}`);

export class JwtVerifier {
  readonly #providers: Map<string, Provider>;
  readonly #requiredClaims: string[];
  // Tokens that verified, until their `exp`: a client sends the same token on every request, and an
  // RS256 check costs tens of microseconds. Keyed by the audiences asked for and the token.
  readonly #verified = new Map<string, { claims: Record<string, unknown>; expMs: number }>();

  constructor(providers: readonly JwtProviderConfig[], requiredClaims: readonly string[] = ['exp']) {
    this.#providers = new Map(
      providers.map((p) => [
        p.issuer,
        { issuer: p.issuer, audiences: p.audiences, keys: keySet(p.jwks), requiredClaims: p.requiredClaims },
      ]),
    );
    this.#requiredClaims = [...new Set(['exp', ...requiredClaims])];
  }

  /**
   * The claims of a token that verifies; otherwise a GwError GW_ERR_JWT_INVALID. `audiences`, when
   * given, replaces the provider's own list.
   */
  async verify(token: string, audiences?: readonly string[]): Promise<Record<string, unknown>> {
    let iss: string | undefined;
    try {
      iss = decodeJwt(token).iss;
    } catch {
      throw invalid('malformed token');
    }
    const key = audiences ? `${audiences.join(' ')}\n${token}` : token;
    const cached = this.#verified.get(key);
    if (cached && cached.expMs > Date.now()) return cached.claims;
    if (cached) this.#verified.delete(key);
    const provider = iss ? this.#providers.get(iss) : undefined;
    if (!provider) throw invalid(`issuer ${JSON.stringify(iss ?? '')} is not trusted`);
    const audience = audiences ? [...audiences] : provider.audiences;
    let claims: Record<string, unknown>;
    try {
      const { payload, protectedHeader } = await jwtVerify(token, provider.keys, {
        issuer: provider.issuer,
        ...(audience ? { audience } : {}),
        requiredClaims: provider.requiredClaims ?? this.#requiredClaims,
        clockTolerance: CLOCK_SKEW_S,
      });
      if (!protectedHeader.kid) throw invalid('the header has no kid');
      claims = payload as Record<string, unknown>;
    } catch (err) {
      if (err instanceof GwError) throw err;
      throw invalid(reason(err));
    }
    // a token without exp (a provider requiring none) is checked each time
    if (typeof claims['exp'] !== 'number') return claims;
    if (this.#verified.size >= VERIFIED_CACHE_MAX) this.#verified.clear();
    this.#verified.set(key, { claims, expMs: (claims['exp'] + CLOCK_SKEW_S) * 1000 });
    return claims;
  }
}
