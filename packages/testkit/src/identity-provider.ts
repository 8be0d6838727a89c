// A real OAuth 2.0 / OpenID Connect identity provider for tests: `oidc-provider` (npm) on loopback
// port 0, in memory, issuing JWT access tokens through the client_credentials grant. Its signing keys
// can be replaced while it runs (same issuer, same port) to exercise key rotation.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Configuration, Provider } from 'oidc-provider';

/** A private signing JWK (e.g. jose's `exportJWK` of an extractable private key) with its key id. */
export type SigningJwk = { kty: string; kid: string; [param: string]: unknown };

export interface IdentityProviderClient {
  clientId: string;
  clientSecret: string;
  /** Space-separated scopes the client may request. */
  scope?: string;
}

export interface ResourceServer {
  /** The `aud` of access tokens issued for this resource indicator. */
  audience: string;
  /** Space-separated scopes that can be granted for it. */
  scope?: string;
  /** Access token lifetime in seconds (default 300). */
  accessTokenTTL?: number;
}

export interface IdentityProviderOptions {
  /** Signing keys; the first RS256 key signs. */
  keys: SigningJwk[];
  clients: IdentityProviderClient[];
  /** Resource indicator (an absolute URL) → resource server; tokens for these are RS256 JWTs. */
  resources: Record<string, ResourceServer>;
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
  let handler: ((req: http.IncomingMessage, res: http.ServerResponse) => Promise<void>) | undefined;
  const server = http.createServer((req, res) => {
    if (req.url?.split('?')[0] === '/jwks') jwksFetches.push(Date.now());
    if (!handler) {
      res.writeHead(503).end();
      return;
    }
    handler(req, res).catch(() => res.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const issuer = `http://127.0.0.1:${port}`;

  // Client metadata may only name scopes the provider knows.
  const scopes = new Set(['openid', 'offline_access']);
  for (const s of [...opts.clients, ...Object.values(opts.resources)])
    for (const scope of s.scope?.split(' ') ?? []) if (scope) scopes.add(scope);

  const build = (keys: SigningJwk[]): Provider => {
    const configuration: Configuration = {
      adapter: memoryAdapter(),
      scopes: [...scopes],
      jwks: { keys },
      clients: opts.clients.map((c) => ({
        client_id: c.clientId,
        client_secret: c.clientSecret,
        grant_types: ['client_credentials'],
        redirect_uris: [],
        response_types: [],
        ...(c.scope ? { scope: c.scope } : {}),
      })),
      features: {
        devInteractions: { enabled: false },
        clientCredentials: { enabled: true },
        introspection: { enabled: false },
        revocation: { enabled: false },
        resourceIndicators: {
          enabled: true,
          getResourceServerInfo: (_ctx: unknown, resourceIndicator: string) => {
            const rs = opts.resources[resourceIndicator];
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
      },
      cookies: { keys: ['gw-testkit-cookie-key'] },
    };
    return new ProviderClass(issuer, configuration);
  };
  const install = (keys: SigningJwk[]) => {
    handler = build(keys).callback();
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
