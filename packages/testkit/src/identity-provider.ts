// A real OAuth 2.0 / OpenID Connect identity provider for tests: `oidc-provider` (npm) on loopback
// port 0, in memory, issuing JWT access tokens through the client_credentials grant and, for
// interactive clients, the authorization code grant with PKCE (optionally with dynamic client
// registration). Its login and consent pages are driven headlessly by `authorize`. Its signing keys
// can be replaced while it runs (same issuer, same port) to exercise key rotation.
import { createPrivateKey, sign as cryptoSign, type JsonWebKey, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Configuration, Provider } from 'oidc-provider';

/** A private signing JWK (e.g. jose's `exportJWK` of an extractable private key) with its key id. */
export type SigningJwk = { kty: string; kid: string; [param: string]: unknown };

export interface IdentityProviderClient {
  clientId: string;
  /** Unset: the client authenticates with private_key_jwt and `jwks`. */
  clientSecret?: string;
  /** Space-separated scopes the client may request. */
  scope?: string;
  /** Grants beside client_credentials, e.g. a custom one of `grants`. */
  grantTypes?: string[];
  /** Default client_secret_basic (private_key_jwt without a secret). */
  tokenEndpointAuthMethod?: 'client_secret_basic' | 'client_secret_post' | 'private_key_jwt';
  /** Public keys of a private_key_jwt client. */
  jwks?: { keys: Record<string, unknown>[] };
}

/** What a custom grant handler gets: the token request as the provider parsed and authenticated it. */
export interface GrantRequest {
  grantType: string;
  clientId: string;
  params: Record<string, string | string[] | undefined>;
  /** Signs claims as a JWT with the provider's key (iss, iat, exp and jti set), `typ` in the header. */
  sign(claims: Record<string, unknown>, ttlSeconds: number, typ?: string): Promise<string>;
}

/** A token response, or an OAuth error (400 invalid_grant unless said otherwise). */
export type GrantAnswer =
  | {
      access_token: string;
      token_type: string;
      expires_in?: number;
      issued_token_type?: string;
      scope?: string;
    }
  | { error: string; error_description?: string; status?: number };

/**
 * A custom grant type at the token endpoint (oidc-provider's registerGrantType): RFC 8693 token
 * exchange, RFC 7523 jwt-bearer. `params` names the form parameters it takes besides grant_type,
 * `repeated` those that may occur more than once.
 */
export interface CustomGrant {
  params: string[];
  repeated?: string[];
  handle(req: GrantRequest): Promise<GrantAnswer> | GrantAnswer;
}

export interface ResourceServer {
  /** The `aud` of access tokens issued for this resource indicator. */
  audience: string;
  /** Space-separated scopes that can be granted for it. */
  scope?: string;
  /** Access token lifetime in seconds (default 300). */
  accessTokenTTL?: number;
}

/** A client of the authorization code grant without a secret (PKCE). */
export interface PublicClient {
  clientId: string;
  redirectUris: string[];
}

/**
 * A confidential client of the authorization code grant (a web application, or a gateway's oidc
 * policy): it authenticates at the token endpoint with its secret and always gets a refresh token.
 */
export interface WebClient {
  clientId: string;
  clientSecret: string;
  redirectUris: string[];
  /** Default client_secret_basic. */
  tokenEndpointAuthMethod?: 'client_secret_basic' | 'client_secret_post';
}

export interface IdentityProviderOptions {
  /** Signing keys; the first RS256 key signs. */
  keys: SigningJwk[];
  clients: IdentityProviderClient[];
  /**
   * Resource indicator (an absolute URL) → resource server; tokens for these are RS256 JWTs. A
   * function decides for any indicator (undefined: not a resource of this provider).
   */
  resources: Record<string, ResourceServer> | ((indicator: string) => ResourceServer | undefined);
  /** Scopes resource servers may grant besides those named in `resources` and `clients`. */
  scopes?: string[];
  /** Who can log in (authorization code grant): account id (the `sub`) → extra access token claims. */
  accounts?: Record<string, Record<string, unknown>>;
  /** Clients of the authorization code grant registered up front. */
  publicClients?: PublicClient[];
  /** Dynamic client registration (RFC 7591), advertised as registration_endpoint. */
  registration?: boolean;
  /** Confidential clients of the authorization code grant. */
  webClients?: WebClient[];
  /** Lifetime in seconds of ID tokens and of access tokens that are not for a resource (default 300). */
  tokenTTL?: number;
  /** Custom grant types by their grant_type URN. */
  grants?: Record<string, CustomGrant>;
}

export interface TokenRequest {
  clientId: string;
  clientSecret: string;
  /** The resource indicator. */
  resource: string;
  scope?: string;
}

export interface IdentityProvider {
  /** `http://127.0.0.1:<port>`, the `iss` of its tokens. */
  issuer: string;
  port: number;
  /** Its OpenID Provider metadata (`/.well-known/openid-configuration`), fetched at start. */
  metadata: { issuer: string; jwks_uri: string; token_endpoint: string } & Record<string, unknown>;
  /** Times (Date.now()) at which its JWKS was fetched, oldest first. */
  jwksFetches: number[];
  /** Client ids it issued through dynamic client registration, oldest first. */
  registrations: string[];
  /** The requests its custom grants answered, oldest first. */
  grantRequests: Omit<GrantRequest, 'sign'>[];
  /**
   * Follows an authorization request (its URL, as a client sends a browser there) through the
   * provider's login and consent as `account`, and returns the URL the browser is sent back to:
   * the client's redirect URI with `code` (or `error`).
   */
  authorize(url: string, account: string): Promise<URL>;
  /** Gets an access token with the client_credentials grant; rejects on a non-200 answer. */
  token(req: TokenRequest): Promise<string>;
  /**
   * Replaces the signing keys (the first signs new tokens) by swapping in a new provider instance
   * behind the same listener: the issuer and URLs stay, outstanding in-memory grants are dropped.
   */
  setKeys(keys: SigningJwk[]): Promise<void>;
  close(): Promise<void>;
}

type Stored = { payload: Record<string, unknown>; expiresAt: number };

type GrantContext = {
  oidc: { params: Record<string, unknown>; client: { clientId: string } };
  status: number;
  body: unknown;
};

async function signJwt(
  keys: SigningJwk[],
  issuer: string,
  claims: Record<string, unknown>,
  ttlSeconds: number,
  typ?: string,
): Promise<string> {
  const jwk = keys.find((k) => k.kty === 'RSA') ?? keys[0];
  if (!jwk) throw new Error('no signing key');
  const now = Math.floor(Date.now() / 1000);
  const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const header = { alg: 'RS256', kid: jwk.kid, ...(typ ? { typ } : {}) };
  const payload = { ...claims, iss: issuer, iat: now, exp: now + ttlSeconds, jti: randomUUID() };
  const input = `${b64(header)}.${b64(payload)}`;
  const key = createPrivateKey({ key: jwk as JsonWebKey, format: 'jwk' });
  return `${input}.${cryptoSign('sha256', Buffer.from(input), key).toString('base64url')}`;
}

/** A minimal in-memory adapter (one store per provider instance, no development-only warning). */
function memoryAdapter() {
  const store = new Map<string, Stored>();
  const live = (key: string) => {
    const entry = store.get(key);
    if (entry && entry.expiresAt <= Date.now()) store.delete(key);
    return store.get(key);
  };
  const findBy = (model: string, field: string, value: unknown) => {
    for (const [key, entry] of store)
      if (key.startsWith(`${model}:`) && entry.payload[field] === value && live(key)) return entry.payload;
    return undefined;
  };
  return (model: string) => ({
    async upsert(id: string, payload: Record<string, unknown>, expiresIn?: number) {
      const expiresAt = typeof expiresIn === 'number' ? Date.now() + expiresIn * 1000 : Infinity;
      store.set(`${model}:${id}`, { payload, expiresAt });
    },
    async find(id: string) {
      return live(`${model}:${id}`)?.payload;
    },
    async findByUid(uid: string) {
      return findBy(model, 'uid', uid);
    },
    async findByUserCode(userCode: string) {
      return findBy(model, 'userCode', userCode);
    },
    async consume(id: string) {
      const entry = live(`${model}:${id}`);
      if (entry) entry.payload['consumed'] = Math.floor(Date.now() / 1000);
    },
    async destroy(id: string) {
      store.delete(`${model}:${id}`);
    },
    async revokeByGrantId(grantId: string) {
      for (const [key, entry] of store) if (entry.payload['grantId'] === grantId) store.delete(key);
    },
  });
}

export async function startIdentityProvider(opts: IdentityProviderOptions): Promise<IdentityProvider> {
  // Loaded on first use so that importing @gw/testkit does not load Koa and the provider.
  const { Provider: ProviderClass, errors } = await import('oidc-provider');
  const jwksFetches: number[] = [];
  const registrations: string[] = [];
  const grantRequests: IdentityProvider['grantRequests'] = [];
  let handler: ((req: http.IncomingMessage, res: http.ServerResponse) => Promise<void>) | undefined;
  let current: Provider | undefined;
  const server = http.createServer((req, res) => {
    const path = req.url?.split('?')[0] ?? '';
    if (path === '/jwks') jwksFetches.push(Date.now());
    if (!handler || !current) {
      res.writeHead(503).end();
      return;
    }
    if (path.startsWith('/interaction/')) {
      interaction(current, req, res).catch((err: Error) => res.writeHead(500).end(err.message));
      return;
    }
    if (path === '/reg' && req.method === 'POST') {
      res.on('finish', () => {
        const id = (res as { registeredClient?: string }).registeredClient;
        if (id) registrations.push(id);
      });
    }
    handler(req, res).catch(() => res.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const issuer = `http://127.0.0.1:${port}`;

  // Client metadata may only name scopes the provider knows.
  const scopes = new Set(['openid', 'offline_access', ...(opts.scopes ?? [])]);
  const listed = typeof opts.resources === 'function' ? [] : Object.values(opts.resources);
  for (const s of [...opts.clients, ...listed])
    for (const scope of s.scope?.split(' ') ?? []) if (scope) scopes.add(scope);
  const resourceServer = (indicator: string) =>
    typeof opts.resources === 'function' ? opts.resources(indicator) : opts.resources[indicator];
  const accounts = opts.accounts ?? {};

  const build = (keys: SigningJwk[]): Provider => {
    const configuration: Configuration = {
      adapter: memoryAdapter(),
      scopes: [...scopes],
      jwks: { keys },
      clients: [
        ...opts.clients.map((c) => ({
          client_id: c.clientId,
          ...(c.clientSecret !== undefined ? { client_secret: c.clientSecret } : {}),
          grant_types: ['client_credentials', ...(c.grantTypes ?? [])],
          redirect_uris: [],
          response_types: [],
          token_endpoint_auth_method:
            c.tokenEndpointAuthMethod ??
            (c.clientSecret === undefined ? 'private_key_jwt' : 'client_secret_basic'),
          ...(c.jwks ? { jwks: c.jwks } : {}),
          ...(c.scope ? { scope: c.scope } : {}),
        })),
        ...(opts.webClients ?? []).map((c) => ({
          client_id: c.clientId,
          client_secret: c.clientSecret,
          token_endpoint_auth_method: c.tokenEndpointAuthMethod ?? 'client_secret_basic',
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
          redirect_uris: c.redirectUris,
        })),
        ...(opts.publicClients ?? []).map((c) => ({
          client_id: c.clientId,
          token_endpoint_auth_method: 'none',
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
          redirect_uris: c.redirectUris,
        })),
      ],
      findAccount: (_ctx: unknown, id: string) =>
        id in accounts ? { accountId: id, claims: () => ({ ...accounts[id], sub: id }) } : undefined,
      // Each account's extra claims are released with the openid scope, into ID tokens too.
      claims: { openid: ['sub', ...new Set(Object.values(accounts).flatMap((a) => Object.keys(a)))] },
      conformIdTokenClaims: false,
      // Web clients always get a refresh token (no offline_access and consent prompt needed).
      issueRefreshToken: async (
        _ctx: unknown,
        client: { clientId: string; grantTypeAllowed(t: string): boolean },
      ) =>
        client.grantTypeAllowed('refresh_token') &&
        (opts.webClients ?? []).some((c) => c.clientId === client.clientId),
      // Each account's extra claims go into its access tokens, for CEL rules on jwt.*.
      extraTokenClaims: (_ctx: unknown, token: { accountId?: string }) =>
        token.accountId ? accounts[token.accountId] : undefined,
      interactions: { url: (_ctx: unknown, i: { uid: string }) => `/interaction/${i.uid}` },
      features: {
        devInteractions: { enabled: false },
        clientCredentials: { enabled: true },
        introspection: { enabled: false },
        revocation: { enabled: false },
        registration: {
          enabled: opts.registration ?? false,
          // remembered so that a test can tell whom the provider registered
          idFactory: (ctx: { res: { registeredClient?: string } }) => {
            const id = `dcr-${randomUUID()}`;
            ctx.res.registeredClient = id;
            return id;
          },
        },
        resourceIndicators: {
          enabled: true,
          defaultResource: (_ctx: unknown, _client: unknown, oneOf?: string | string[]) => oneOf,
          useGrantedResource: () => true,
          getResourceServerInfo: (_ctx: unknown, resourceIndicator: string) => {
            const rs = resourceServer(resourceIndicator);
            if (!rs) throw new errors.InvalidTarget();
            return {
              scope: rs.scope ?? '',
              audience: rs.audience,
              accessTokenTTL: rs.accessTokenTTL ?? 300,
              accessTokenFormat: 'jwt',
              jwt: { sign: { alg: 'RS256' } },
            };
          },
        },
      },
      ttl: {
        ClientCredentials: (_ctx: unknown, token: { resourceServer?: { accessTokenTTL?: number } }) =>
          token.resourceServer?.accessTokenTTL ?? 300,
        AccessToken: (_ctx: unknown, token: { resourceServer?: { accessTokenTTL?: number } }) =>
          token.resourceServer?.accessTokenTTL ?? opts.tokenTTL ?? 300,
        IdToken: opts.tokenTTL ?? 300,
        Interaction: 600,
        Session: 3600,
        Grant: 3600,
      },
      cookies: { keys: ['gw-testkit-cookie-key'] },
    };
    const provider = new ProviderClass(issuer, configuration);
    for (const [grantType, grant] of Object.entries(opts.grants ?? {}))
      provider.registerGrantType(
        grantType,
        async (ctx: GrantContext) => {
          const params: GrantRequest['params'] = {};
          for (const k of grant.params) params[k] = ctx.oidc.params[k] as string | string[] | undefined;
          const req = { grantType, clientId: ctx.oidc.client.clientId, params };
          grantRequests.push(req);
          const answer = await grant.handle({
            ...req,
            sign: (c, ttl, typ) => signJwt(keys, issuer, c, ttl, typ),
          });
          if ('error' in answer) {
            ctx.status = answer.status ?? 400;
            ctx.body = { error: answer.error, error_description: answer.error_description };
            return;
          }
          ctx.body = answer;
        },
        grant.params,
        grant.repeated ?? [],
      );
    return provider;
  };
  const install = (keys: SigningJwk[]) => {
    current = build(keys);
    handler = current.callback();
  };
  install(opts.keys);

  const res = await fetch(`${issuer}/.well-known/openid-configuration`);
  if (res.status !== 200) throw new Error(`discovery answered ${res.status}: ${await res.text()}`);
  const metadata = (await res.json()) as IdentityProvider['metadata'];

  return {
    issuer,
    port,
    metadata,
    jwksFetches,
    registrations,
    grantRequests,
    authorize: (url, account) => authorizeHeadless(issuer, url, account),
    async token(req) {
      const body = new URLSearchParams({ grant_type: 'client_credentials', resource: req.resource });
      if (req.scope) body.set('scope', req.scope);
      const basic = Buffer.from(
        `${encodeURIComponent(req.clientId)}:${encodeURIComponent(req.clientSecret)}`,
      ).toString('base64');
      const r = await fetch(metadata.token_endpoint, {
        method: 'POST',
        headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded' },
        body,
      });
      const text = await r.text();
      if (r.status !== 200) throw new Error(`token endpoint answered ${r.status}: ${text}`);
      return (JSON.parse(text) as { access_token: string }).access_token;
    },
    async setKeys(keys) {
      install(keys);
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/**
 * The provider's login and consent pages, reduced to what a test needs: GET tells which prompt is
 * pending; POST …/login with `account=<id>` logs in; POST …/confirm grants what the client asked
 * for (OpenID scopes and claims, and the scopes of each resource indicator).
 */
async function interaction(provider: Provider, req: http.IncomingMessage, res: http.ServerResponse) {
  const details = await provider.interactionDetails(req, res);
  const action = (req.url ?? '').split('?')[0]?.split('/')[3];
  if (req.method === 'GET' || action === undefined) {
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ prompt: details.prompt.name }));
    return;
  }
  let body = '';
  for await (const chunk of req) body += chunk;
  if (action === 'login') {
    const accountId = new URLSearchParams(body).get('account') ?? '';
    await provider.interactionFinished(
      req,
      res,
      { login: { accountId } },
      { mergeWithLastSubmission: false },
    );
    return;
  }
  const { accountId } = details.session ?? {};
  const grant = details.grantId
    ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId, clientId: details.params['client_id'] as string });
  if (!grant) throw new Error('the grant of this interaction is gone');
  const missing = details.prompt.details;
  if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
  if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
  for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {}))
    grant.addResourceScope(indicator, scopes.join(' '));
  const grantId = await grant.save();
  await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
}

/** A browser with a cookie jar, following redirects on the provider and submitting its forms. */
async function authorizeHeadless(issuer: string, start: string, account: string): Promise<URL> {
  const jar = new Map<string, string>();
  const send = async (url: string, init: RequestInit = {}) => {
    const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
    const headers = new Headers(init.headers);
    if (cookie) headers.set('cookie', cookie);
    const r = await fetch(url, { ...init, headers, redirect: 'manual' });
    for (const c of r.headers.getSetCookie()) {
      const [pair = ''] = c.split(';');
      const eq = pair.indexOf('=');
      if (eq > 0) jar.set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
    }
    await r.arrayBuffer();
    return r;
  };
  let url = start;
  for (let hop = 0; hop < 20; hop++) {
    const at = new URL(url);
    if (at.origin !== issuer) return at;
    let r: Response;
    if (at.pathname.startsWith('/interaction/')) {
      const pending = await fetch(url, {
        headers: { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') },
      });
      const { prompt } = (await pending.json()) as { prompt: string };
      r = await send(`${url}/${prompt === 'login' ? 'login' : 'confirm'}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ account }).toString(),
      });
    } else r = await send(url);
    const next = r.headers.get('location');
    if (!next) throw new Error(`${url} answered ${r.status} without a redirect`);
    url = new URL(next, url).toString();
  }
  throw new Error('too many redirects');
}
