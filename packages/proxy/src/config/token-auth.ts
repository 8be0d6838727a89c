// backendAuth's token forms as the IR holds them (gcp, azure, oauthTokenExchange, crossAppAccess):
// secrets sealed, files read, token endpoints resolved to an origin with their TLS, defaults filled.
import { createHash, createPrivateKey, createPublicKey, X509Certificate } from 'node:crypto';
import type { BackendAuth, BackendTLS, FieldPath } from '@gw/api';
import { AZURE_DEFAULT_SCOPE, checkSigningKey, parseGoDuration, TOKEN_TYPE } from '@gw/api';
import type { CredentialLocationConfig } from '../pipeline/credential-location.ts';
import { Secret } from '../secret.ts';
import type { AuthLocationIR, BackendTlsIR, InTurnEndpoint } from './connection-ir.ts';

export interface GcpAuthIR {
  type: 'accessToken' | 'idToken';
  audience?: string;
  /** The credential JSON (a service account key, an external account …); unset: ambient credentials. */
  credential?: Secret;
}

export type AzureSourceIR =
  | { clientSecret: { tenantId: string; clientId: string; secret: Secret } }
  | {
      managedIdentity:
        | { clientId: string }
        | { objectId: string }
        | { resourceId: string }
        | Record<never, never>;
    }
  | { workloadIdentity: Record<never, never> }
  | { developerImplicit: Record<never, never> }
  | { implicit: Record<never, never> };
export interface AzureAuthIR {
  source: AzureSourceIR;
  /** What the token is asked for: one scope, or several (agentgateway's `scopes`). */
  scope: string | string[];
}

export interface ClientAuthIR {
  method: 'clientSecretBasic' | 'clientSecretPost' | 'privateKeyJwt';
  clientId: string;
  secret?: Secret;
  signingKey?: Secret;
  alg?: string;
  kid?: string;
  assertionAudience?: string;
  /** privateKeyJwt with a certificate: the JWS header naming it (x5c, the chain; x5t#S256, the leaf's thumbprint). */
  certificateHeader?: { x5c: string[] } | { 'x5t#S256': string };
}

export interface TokenEndpointIR {
  /** http(s)://host:port */
  origin: string;
  /** The endpoint is a Service of `services`: its workloads' addresses, dialled in turn. */
  endpoints?: InTurnEndpoint[];
  path: string;
  tls?: BackendTlsIR;
  clientAuth?: ClientAuthIR;
}

export interface TokenCacheIR {
  /** 0: every request fetches a token. */
  maxEntries: number;
  defaultTtlMs: number;
}

export interface OAuthTokenExchangeIR {
  endpoint: TokenEndpointIR;
  grantType: 'tokenExchange' | 'jwtBearer';
  subjectToken: { source?: CredentialLocationConfig; tokenType: string };
  actorToken?: { source: CredentialLocationConfig; tokenType: string; enforceMayAct: boolean };
  audiences: string[];
  scopes: string[];
  resources: string[];
  requestedTokenType?: string;
  /** CEL over the request, by form parameter. */
  additionalParams: Record<string, string>;
  location?: AuthLocationIR;
  cache: TokenCacheIR;
}

export interface CrossAppAccessIR {
  identityProvider: TokenEndpointIR & { clientAuth: ClientAuthIR };
  resourceAuthorizationServer: TokenEndpointIR & { clientAuth: ClientAuthIR };
  audience: string;
  resources: string[];
  scopes: string[];
  accessTokenScopes: string[];
  subjectToken: { source?: CredentialLocationConfig; tokenType: string };
  cache: TokenCacheIR;
}

export interface TokenResolveIO {
  fail(path: FieldPath, message: string): void;
  readMaterial(path: FieldPath, v: string | { file: string }): string | undefined;
  resolveTls(path: FieldPath, t: BackendTLS): BackendTlsIR;
  /** A named host backend as a token endpoint: its address and backendTLS; undefined: reported. */
  namedEndpoint(path: FieldPath, name: string): { host: string; tls?: BackendTlsIR } | undefined;
  /** A Service of `services` as an HTTP service: its hostname:port and workloads; undefined: reported. */
  httpService(
    path: FieldPath,
    ref: { name: string; port: number },
    role: string,
  ): { host: string; endpoints?: InTurnEndpoint[] } | undefined;
}

type Forms = Exclude<BackendAuth, string>;
type Of<K extends string> = Extract<Forms, Record<K, unknown>>[K & keyof Extract<Forms, Record<K, unknown>>];
type EndpointConfig = Of<'crossAppAccess'>['identityProvider'];
type ClientAuthConfig = EndpointConfig['clientAuth'];

const DEFAULT_CACHE_ENTRIES = 8192;
const DEFAULT_TTL_MS = 300_000;

export function resolveGcp(io: TokenResolveIO, path: FieldPath, g: Of<'gcp'>): GcpAuthIR | undefined {
  const out: GcpAuthIR = { type: g.type ?? 'accessToken' };
  if (g.audience) out.audience = g.audience;
  if (g.credential) {
    // inline JSON as it is, else a file
    const inline = typeof g.credential === 'string' && g.credential.trimStart().startsWith('{');
    const text = inline ? (g.credential as string) : io.readMaterial([...path, 'credential'], g.credential);
    if (text === undefined) return undefined;
    try {
      const json = JSON.parse(text) as { type?: unknown };
      if (typeof json !== 'object' || json === null || typeof json.type !== 'string')
        throw new Error('no "type" field');
    } catch (err) {
      io.fail([...path, 'credential'], `not a Google credential JSON (${(err as Error).message})`);
      return undefined;
    }
    out.credential = new Secret(text);
  }
  return out;
}

export function resolveAzure(a: Of<'azure'>): AzureAuthIR {
  const scope = a.scopes ? [...a.scopes] : (a.scope ?? AZURE_DEFAULT_SCOPE);
  if ('developerImplicit' in a) return { source: { developerImplicit: {} }, scope };
  if ('implicit' in a) return { source: { implicit: {} }, scope };
  const e = a.explicitConfig;
  if ('clientSecret' in e)
    return {
      source: {
        clientSecret: {
          tenantId: e.clientSecret.tenant_id,
          clientId: e.clientSecret.client_id,
          secret: new Secret(e.clientSecret.client_secret),
        },
      },
      scope,
    };
  if ('managedIdentity' in e)
    return { source: { managedIdentity: { ...(e.managedIdentity.userAssignedIdentity ?? {}) } }, scope };
  return { source: { workloadIdentity: {} }, scope };
}

function endpoint(
  io: TokenResolveIO,
  path: FieldPath,
  e: Omit<EndpointConfig, 'clientAuth'> & { clientAuth?: ClientAuthConfig | null | undefined },
): TokenEndpointIR | undefined {
  const tlsConfig = e.policies?.backendTLS as BackendTLS | undefined;
  let tls = tlsConfig ? io.resolveTls([...path, 'policies', 'backendTLS'], tlsConfig) : undefined;
  let host = e.host;
  let endpoints: TokenEndpointIR['endpoints'];
  if (e.backend !== undefined) {
    const named = io.namedEndpoint([...path, 'backend'], e.backend);
    if (!named) return undefined;
    host = named.host;
    tls ??= named.tls;
  } else if (e.service !== undefined) {
    const svc = io.httpService([...path, 'service'], e.service, 'a token endpoint');
    if (!svc) return undefined;
    host = svc.host;
    endpoints = svc.endpoints;
  }
  const out: TokenEndpointIR = {
    origin: `${tls ? 'https' : 'http'}://${host}`,
    path: e.path ?? '/',
    ...(endpoints ? { endpoints } : {}),
  };
  if (tls) out.tls = tls;
  if (e.clientAuth) {
    const c = clientAuth(io, [...path, 'clientAuth'], e.clientAuth);
    if (!c) return undefined;
    out.clientAuth = c;
  }
  return out;
}

function clientAuth(io: TokenResolveIO, path: FieldPath, c: ClientAuthConfig): ClientAuthIR | undefined {
  const secret = (v: string | { file: string } | null | undefined) => {
    if (v === undefined || v === null) return undefined;
    const text =
      typeof v === 'string'
        ? v
        : io.readMaterial([...path, 'clientSecret', 'file'], v)?.replace(/\r?\n$/, '');
    return text === undefined ? null : new Secret(text);
  };
  if (!('method' in c) || c.method === 'clientSecretBasic' || c.method === 'clientSecretPost') {
    const s = secret('clientSecret' in c ? c.clientSecret : undefined);
    if (s === null) return undefined;
    const method = 'method' in c ? c.method : 'clientSecretBasic';
    return { method, clientId: c.clientId, ...(s ? { secret: s } : {}) };
  }
  const pem = io.readMaterial([...path, 'signingKey'], c.signingKey);
  if (pem === undefined) return undefined;
  // a key that cannot sign with alg would fail every token request: named here instead
  const keyProblems = checkSigningKey(pem, c.alg ?? 'RS256', [...path, 'signingKey']);
  if (keyProblems.length > 0) {
    for (const p of keyProblems) io.fail(p.path, p.message);
    return undefined;
  }
  let certificateHeader: ClientAuthIR['certificateHeader'];
  if (c.certificate != null || c.certificateHeader != null) {
    certificateHeader = certificateHeaderOf(io, path, pem, c.certificate, c.certificateHeader);
    if (!certificateHeader) return undefined;
  }
  return {
    method: 'privateKeyJwt',
    clientId: c.clientId,
    signingKey: new Secret(pem),
    alg: c.alg ?? 'RS256',
    ...(c.kid ? { kid: c.kid } : {}),
    assertionAudience: c.assertionAudience,
    ...(certificateHeader ? { certificateHeader } : {}),
  };
}

/**
 * privateKeyJwt's certificate as the assertion's header: the chain read (leaf first), its leaf's key
 * checked against the signing key (a token endpoint would refuse every assertion otherwise).
 */
function certificateHeaderOf(
  io: TokenResolveIO,
  path: FieldPath,
  signingPem: string,
  certificate: string | { file: string } | null | undefined,
  header: 'x5c' | 'x5t#S256' | null | undefined,
): ClientAuthIR['certificateHeader'] | undefined {
  if (certificate == null) {
    io.fail(
      [...path, 'certificate'],
      'certificateHeader names a certificate: set certificate (PEM, leaf first)',
    );
    return undefined;
  }
  if (header == null) {
    io.fail(
      [...path, 'certificateHeader'],
      'certificate is sent in a header: set certificateHeader (x5c or x5t#S256)',
    );
    return undefined;
  }
  const cp = [...path, 'certificate', ...(typeof certificate === 'string' ? [] : ['file'])];
  const text = typeof certificate === 'string' ? certificate : io.readMaterial(cp, certificate);
  if (text === undefined) return undefined;
  const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  let chain: X509Certificate[];
  try {
    chain = blocks.map((b) => new X509Certificate(b));
  } catch (err) {
    io.fail(cp, `not a PEM certificate chain: ${(err as Error).message}`);
    return undefined;
  }
  const leaf = chain[0];
  if (!leaf) {
    io.fail(cp, 'no PEM certificate in it (-----BEGIN CERTIFICATE-----)');
    return undefined;
  }
  let matches = false;
  try {
    const mine = createPublicKey(createPrivateKey(signingPem)).export({ type: 'spki', format: 'der' });
    matches = mine.equals(leaf.publicKey.export({ type: 'spki', format: 'der' }));
  } catch {
    // a signing key that is not one was reported where it is read
    return undefined;
  }
  if (!matches) {
    io.fail(
      cp,
      "the leaf certificate's key is not signingKey's: the token endpoint would refuse every assertion",
    );
    return undefined;
  }
  if (header === 'x5c') return { x5c: chain.map((c) => c.raw.toString('base64')) };
  return { 'x5t#S256': createHash('sha256').update(leaf.raw).digest('base64url') };
}

function cache(io: TokenResolveIO, path: FieldPath, c: Of<'crossAppAccess'>['cache']): TokenCacheIR {
  let defaultTtlMs = DEFAULT_TTL_MS;
  if (c?.defaultTtl) {
    const ms = parseGoDuration(c.defaultTtl) ?? 0;
    if (ms < 1000) io.fail([...path, 'cache', 'defaultTtl'], 'defaultTtl must be at least 1s');
    defaultTtlMs = ms;
  }
  return { maxEntries: c?.maxEntries ?? DEFAULT_CACHE_ENTRIES, defaultTtlMs };
}

function location(l: unknown): AuthLocationIR | undefined {
  // an expression was refused by checkBackendAuth
  if (!l || typeof l !== 'object' || 'expression' in l) return undefined;
  return l as AuthLocationIR;
}

export function resolveTokenExchange(
  io: TokenResolveIO,
  path: FieldPath,
  t: Of<'oauthTokenExchange'>,
): OAuthTokenExchangeIR | undefined {
  const ep = endpoint(io, path, t);
  if (!ep) return undefined;
  const loc = location(t.authorizationLocation);
  return {
    endpoint: ep,
    grantType: t.grantType ?? 'tokenExchange',
    subjectToken: {
      ...(t.subjectToken?.source ? { source: t.subjectToken.source as CredentialLocationConfig } : {}),
      tokenType: t.subjectToken?.tokenType ?? TOKEN_TYPE.accessToken,
    },
    ...(t.actorToken
      ? {
          actorToken: {
            source: t.actorToken.source as CredentialLocationConfig,
            tokenType: t.actorToken.tokenType ?? TOKEN_TYPE.accessToken,
            enforceMayAct: t.actorToken.enforceMayAct ?? false,
          },
        }
      : {}),
    audiences: t.audiences ?? [],
    scopes: t.scopes ?? [],
    resources: t.resources ?? [],
    ...(t.requestedTokenType ? { requestedTokenType: t.requestedTokenType } : {}),
    additionalParams: { ...(t.additionalParams ?? {}) },
    ...(loc ? { location: loc } : {}),
    cache: cache(io, path, t.cache),
  };
}

export function resolveCrossAppAccess(
  io: TokenResolveIO,
  path: FieldPath,
  x: Of<'crossAppAccess'>,
): CrossAppAccessIR | undefined {
  const idp = endpoint(io, [...path, 'identityProvider'], x.identityProvider);
  const ras = endpoint(io, [...path, 'resourceAuthorizationServer'], x.resourceAuthorizationServer);
  if (!idp?.clientAuth || !ras?.clientAuth) return undefined;
  const scopes = x.scopes ?? [];
  return {
    identityProvider: { ...idp, clientAuth: idp.clientAuth },
    resourceAuthorizationServer: { ...ras, clientAuth: ras.clientAuth },
    audience: x.audience,
    resources: x.resources ?? [],
    scopes,
    accessTokenScopes: x.accessTokenScopes ?? scopes,
    subjectToken: {
      ...(x.subjectToken?.source ? { source: x.subjectToken.source as CredentialLocationConfig } : {}),
      tokenType: x.subjectToken?.tokenType ?? TOKEN_TYPE.idToken,
    },
    cache: cache(io, path, x.cache),
  };
}
