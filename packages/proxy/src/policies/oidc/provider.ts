// The OpenID provider as the oidc policy sees it: its metadata (discovered from the issuer, kept an
// hour and fetched again after a failure, or given explicitly), its token endpoint (code exchange and
// refresh, with client_secret_basic or client_secret_post) and the ID tokens it signs (verified with
// jose against its JWKS: issuer, audience = client id, expiry, nonce at login).
import { createLocalJWKSet, createRemoteJWKSet, errors, type JWTVerifyGetKey, jwtVerify } from 'jose';
import type { OidcIR } from '../../config/ir.ts';
import { GwError } from '../../errors.ts';
import { Agent, request } from '../../upstream/undici.ts';

const DISCOVERY_TTL_MS = 60 * 60_000;
const PROVIDER_TIMEOUT_MS = 10_000;
/** Discovery documents and token answers are small; anything bigger is not one. */
const MAX_DOCUMENT = 256 * 1024;
/** Seconds of clock difference tolerated between the gateway and the provider. */
const CLOCK_TOLERANCE_S = 30;

let agent: Agent | undefined;
const dispatcher = () => {
  agent ??= new Agent({ keepAliveTimeout: 30_000 });
  return agent;
};

export type TokenEndpointAuth = 'clientSecretBasic' | 'clientSecretPost';

export interface ProviderMetadata {
  authorizationEndpoint: string;
  tokenEndpoint: string;
  /** RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0), when the provider has one. */
  endSessionEndpoint: string | undefined;
  tokenEndpointAuth: TokenEndpointAuth;
  keys: JWTVerifyGetKey;
}

/** What a token endpoint answers with (RFC 6749 §5.1, OpenID Connect Core §3.1.3.3). */
export interface TokenAnswer {
  idToken: string | undefined;
  refreshToken: string | undefined;
  /** Seconds the access token lives, when the provider says. */
  expiresIn: number | undefined;
}

const unavailable = (detail: string, cause?: unknown) =>
  new GwError('GW_ERR_OIDC_PROVIDER', `the OpenID provider did not answer: ${detail}`, { cause });

function keySet(j: { inline: string } | { url: string } | { file: string }): JWTVerifyGetKey {
  if ('url' in j)
    return createRemoteJWKSet(new URL(j.url), { cooldownDuration: 5_000, cacheMaxAge: 600_000 });
  // the loader has read a file into inline
  return createLocalJWKSet(JSON.parse('inline' in j ? j.inline : '{}'));
}

/** client_secret_basic unless the provider lists only client_secret_post (absent: basic, the default). */
function authFromMethods(methods: unknown): TokenEndpointAuth {
  if (!Array.isArray(methods) || methods.includes('client_secret_basic')) return 'clientSecretBasic';
  if (methods.includes('client_secret_post')) return 'clientSecretPost';
  throw unavailable(
    `it supports neither client_secret_basic nor client_secret_post at its token endpoint (${methods.join(', ')})`,
  );
}

export class OidcProvider {
  readonly #config: OidcIR;
  readonly issuer: string;
  #meta: ProviderMetadata | undefined;
  #until = 0;
  #pending: Promise<ProviderMetadata> | undefined;
  #jwksUri: string | undefined;

  constructor(config: OidcIR) {
    this.#config = config;
    this.issuer = config.issuer;
    if (config.authorizationEndpoint && config.tokenEndpoint && config.jwks) {
      this.#meta = {
        authorizationEndpoint: config.authorizationEndpoint,
        tokenEndpoint: config.tokenEndpoint,
        endSessionEndpoint: undefined,
        tokenEndpointAuth: config.tokenEndpointAuth ?? 'clientSecretBasic',
        keys: keySet(config.jwks),
      };
      this.#until = Number.POSITIVE_INFINITY;
    }
  }

  /** The provider's metadata: discovered (and kept an hour) unless the config gave it. */
  metadata(): Promise<ProviderMetadata> {
    if (this.#meta && this.#until > Date.now()) return Promise.resolve(this.#meta);
    this.#pending ??= this.#discover().then(
      (m) => {
        this.#meta = m;
        this.#until = Date.now() + DISCOVERY_TTL_MS;
        this.#pending = undefined;
        return m;
      },
      (err: unknown) => {
        this.#pending = undefined;
        throw err;
      },
    );
    return this.#pending;
  }

  /** Forgets discovered metadata, so the next request fetches it again (endpoints may have moved). */
  invalidate(): void {
    if (this.#until !== Number.POSITIVE_INFINITY) this.#until = 0;
  }

  async #discover(): Promise<ProviderMetadata> {
    const d = this.#config.discovery;
    const url =
      d && 'url' in d ? d.url : `${this.issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
    let doc: Record<string, unknown>;
    if (d && 'inline' in d) doc = JSON.parse(d.inline) as Record<string, unknown>;
    else {
      const r = await call(url, { method: 'GET', headers: {} });
      if (r.status !== 200) throw unavailable(`discovery ${url} answered ${r.status}`);
      const parsed = parseJson(r.body);
      if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
        throw unavailable(`discovery ${url} did not answer with a JSON object`);
      doc = parsed as Record<string, unknown>;
    }
    if (doc['issuer'] !== this.issuer)
      throw unavailable(
        `discovery names issuer ${JSON.stringify(doc['issuer'])}, not ${JSON.stringify(this.issuer)}`,
      );
    const str = (k: string) => {
      const v = doc[k];
      if (typeof v !== 'string' || !/^https?:\/\//.test(v)) throw unavailable(`discovery has no ${k}`);
      return v;
    };
    const end = doc['end_session_endpoint'];
    const jwksUri = str('jwks_uri');
    // a key set at the same URL keeps its cache
    const keys = this.#meta && this.#jwksUri === jwksUri ? this.#meta.keys : keySet({ url: jwksUri });
    this.#jwksUri = jwksUri;
    return {
      authorizationEndpoint: str('authorization_endpoint'),
      tokenEndpoint: str('token_endpoint'),
      endSessionEndpoint: typeof end === 'string' && /^https?:\/\//.test(end) ? end : undefined,
      tokenEndpointAuth: authFromMethods(doc['token_endpoint_auth_methods_supported']),
      keys,
    };
  }
  /** A grant at the token endpoint (authorization_code or refresh_token). */
  async token(params: Record<string, string>): Promise<TokenAnswer> {
    const meta = await this.metadata();
    const { clientId } = this.#config;
    const secret = this.#config.clientSecret.reveal();
    const body = new URLSearchParams(params);
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
    if (meta.tokenEndpointAuth === 'clientSecretPost') {
      body.set('client_id', clientId);
      body.set('client_secret', secret);
    } else {
      // RFC 6749 §2.3.1: both are form-encoded before they are joined
      const enc = (s: string) => new URLSearchParams({ s }).toString().slice(2);
      headers['authorization'] = `Basic ${Buffer.from(`${enc(clientId)}:${enc(secret)}`).toString('base64')}`;
    }
    let r: Awaited<ReturnType<typeof call>>;
    try {
      r = await call(meta.tokenEndpoint, { method: 'POST', headers, body: body.toString() });
    } catch (err) {
      this.invalidate();
      throw err;
    }
    const answer = parseJson(r.body) as Record<string, unknown> | undefined;
    if (r.status >= 500 || !answer || typeof answer !== 'object') {
      this.invalidate();
      throw unavailable(`its token endpoint answered ${r.status}`);
    }
    if (r.status !== 200) {
      const desc = typeof answer['error_description'] === 'string' ? ` (${answer['error_description']})` : '';
      throw new GwError(
        'GW_ERR_OIDC_LOGIN',
        `the OpenID provider refused the ${params['grant_type']} grant: ${String(answer['error'] ?? r.status)}${desc}`,
      );
    }
    const s = (k: string) =>
      typeof answer[k] === 'string' && answer[k] !== '' ? (answer[k] as string) : undefined;
    const expiresIn = Number(answer['expires_in']);
    return {
      idToken: s('id_token'),
      refreshToken: s('refresh_token'),
      expiresIn: Number.isFinite(expiresIn) && expiresIn > 0 ? expiresIn : undefined,
    };
  }

  /**
   * The claims of an ID token from this provider for this client; `nonce`, when given, must be the
   * token's. A token that does not verify is GW_ERR_OIDC_LOGIN (401), keys that cannot be fetched
   * GW_ERR_OIDC_PROVIDER (502).
   */
  async verifyIdToken(token: string, nonce?: string): Promise<Record<string, unknown>> {
    const meta = await this.metadata();
    let claims: Record<string, unknown>;
    try {
      const { payload } = await jwtVerify(token, meta.keys, {
        issuer: this.issuer,
        audience: this.#config.clientId,
        requiredClaims: ['exp', 'iat', 'sub'],
        clockTolerance: CLOCK_TOLERANCE_S,
      });
      claims = payload as Record<string, unknown>;
    } catch (err) {
      const why = idTokenProblem(err);
      if (why === undefined) {
        this.invalidate();
        throw unavailable(`its JWKS could not be fetched: ${(err as Error).message}`, err);
      }
      throw new GwError('GW_ERR_OIDC_LOGIN', `invalid ID token: ${why}`);
    }
    // OpenID Connect Core §3.1.3.7: with several audiences, azp names the client
    const aud = claims['aud'];
    if (Array.isArray(aud) && aud.length > 1 && claims['azp'] !== this.#config.clientId)
      throw new GwError('GW_ERR_OIDC_LOGIN', 'invalid ID token: azp is not this client');
    if (nonce !== undefined && claims['nonce'] !== nonce)
      throw new GwError('GW_ERR_OIDC_LOGIN', 'invalid ID token: nonce does not match the login');
    return claims;
  }
}

/** Why a token did not verify; undefined when the keys could not be had (the provider's fault). */
function idTokenProblem(err: unknown): string | undefined {
  if (err instanceof errors.JWTExpired) return 'token expired';
  if (err instanceof errors.JWTClaimValidationFailed) return `claim ${err.claim} is not valid`;
  if (err instanceof errors.JWKSNoMatchingKey) return 'no key in the JWKS matches the token';
  if (err instanceof errors.JWSSignatureVerificationFailed) return 'signature does not verify';
  if (err instanceof errors.JOSEAlgNotAllowed || err instanceof errors.JOSENotSupported)
    return 'its algorithm is not supported';
  if (err instanceof errors.JWSInvalid || err instanceof errors.JWTInvalid) return 'malformed token';
  return undefined;
}

async function call(
  url: string,
  init: { method: 'GET' | 'POST'; headers: Record<string, string>; body?: string },
): Promise<{ status: number; body: Buffer }> {
  try {
    const r = await request(url, {
      method: init.method,
      headers: { accept: 'application/json', ...init.headers },
      ...(init.body !== undefined ? { body: init.body } : {}),
      dispatcher: dispatcher(),
      headersTimeout: PROVIDER_TIMEOUT_MS,
      bodyTimeout: PROVIDER_TIMEOUT_MS,
    });
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const c of r.body) {
      size += (c as Buffer).length;
      if (size > MAX_DOCUMENT) {
        r.body.destroy();
        throw unavailable(`${url} answered with more than ${MAX_DOCUMENT} bytes`);
      }
      chunks.push(c as Buffer);
    }
    return { status: r.statusCode, body: Buffer.concat(chunks) };
  } catch (err) {
    if (err instanceof GwError) throw err;
    const e = err as Error & { code?: string };
    throw unavailable(`${url}: ${e.code ?? e.message}`, err);
  }
}

function parseJson(b: Buffer): unknown {
  try {
    return JSON.parse(b.toString('utf8'));
  } catch {
    return undefined;
  }
}
