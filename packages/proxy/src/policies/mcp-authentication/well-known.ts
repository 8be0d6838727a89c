// The OAuth discovery side of mcpAuthentication: protected resource metadata (RFC 9728), the
// authorization server's metadata (RFC 8414, or OpenID discovery) proxied with the provider's quirks
// smoothed over, and dynamic client registration (RFC 7591) answered with a configured client id or
// passed on to the provider. Everything here is answered without credentials and readable from a
// browser (CORS `*`): a client calls these before it has a token.
import type { McpIdpName } from '@gw/api';
import { descopeAgentic, type EntraEndpoints, entraEndpoints } from '@gw/api/runtime';
import type { McpAuthenticationIR } from '../../config/ir.ts';
import { GwError } from '../../errors.ts';
import { bufferUpTo, contentLength, discard } from '../../pipeline/body.ts';
import type { ProxyResponse, RequestContext } from '../../pipeline/context.ts';
import type { Secret } from '../../secret.ts';
import { Agent, request } from '../../upstream/undici.ts';

export const PROTECTED_RESOURCE = '/.well-known/oauth-protected-resource';
export const AUTHORIZATION_SERVER = '/.well-known/oauth-authorization-server';
/** Under an authorization server metadata path: where the gateway takes client registrations. */
export const REGISTRATION = '/client-registration';
/** Under it too, for Entra: the authorization and token endpoints the gateway passes on. */
export const AUTHORIZE = '/authorize';
export const TOKEN = '/token';

/** Metadata documents and registrations are small; anything bigger is not one. */
const MAX_DOCUMENT = 256 * 1024;
/** How long fetched authorization server metadata is reused. */
const METADATA_TTL_MS = 5 * 60_000;
const UPSTREAM_TIMEOUT_MS = 10_000;

let agent: Agent | undefined;
const dispatcher = () => {
  agent ??= new Agent({ keepAliveTimeout: 30_000 });
  return agent;
};

const CORS = {
  'access-control-allow-origin': '*',
  'access-control-allow-headers': 'authorization, content-type, mcp-protocol-version',
};

/** The settings the endpoints need, resolved once when the policy is built. */
export interface Discovery {
  issuer: string;
  provider: McpIdpName | undefined;
  clientId: string | undefined;
  /** resourceMetadata with its keys in snake_case. */
  metadata: Record<string, unknown>;
  /** resourceMetadata.resource, when configured. */
  resource: string | undefined;
  audiences: string[] | undefined;
  /** Entra: its endpoints, and the secret of clientId's app registration. */
  entra?: { endpoints: EntraEndpoints; clientSecret: Secret | undefined };
}

export function discovery(config: McpAuthenticationIR): Discovery {
  const metadata: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(config.resourceMetadata ?? {})) metadata[snakeCase(k)] = v;
  const resource = typeof metadata['resource'] === 'string' ? metadata['resource'] : undefined;
  const provider = config.provider ? (Object.keys(config.provider)[0] as McpIdpName) : undefined;
  const endpoints = provider === 'entra' ? entraEndpoints(config.issuer) : undefined;
  return {
    issuer: config.issuer,
    provider,
    clientId: config.clientId ?? undefined,
    metadata,
    resource,
    audiences: config.audiences,
    // the loader checked that an entra issuer names a tenant
    ...(endpoints && typeof endpoints !== 'string'
      ? { entra: { endpoints, clientSecret: config.clientSecret } }
      : {}),
  };
}

/** `scopesSupported` → `scopes_supported`; snake_case keys stay as they are. */
export function snakeCase(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** `scheme://authority` as the client reached the gateway (X-Forwarded-Proto is already vetted). */
export function baseUrl(ctx: RequestContext): string {
  const xfp = ctx.headers['x-forwarded-proto'];
  const proto = (Array.isArray(xfp) ? xfp[0] : xfp)?.split(',')[0]?.trim() || ctx.scheme;
  return `${proto}://${ctx.authority}`;
}

/** The resource a request at `path` is for: the configured one, or the URL the client called. */
export function resourceFor(d: Discovery, ctx: RequestContext, path: string): string {
  return d.resource ?? `${baseUrl(ctx)}${path === '/' ? '' : path}`;
}

/** The URL of the protected resource metadata of the resource a request at `path` is for. */
export function metadataUrlFor(d: Discovery, ctx: RequestContext, path: string): string {
  if (d.resource) {
    const u = new URL(d.resource);
    return `${u.origin}${PROTECTED_RESOURCE}${u.pathname === '/' ? '' : u.pathname}`;
  }
  return `${baseUrl(ctx)}${PROTECTED_RESOURCE}${path === '/' ? '' : path}`;
}

/**
 * Whether clients are sent to the gateway for the authorization server metadata rather than to the
 * issuer: when the gateway must change it (a provider's quirks, or its own registration endpoint).
 */
const fronted = (d: Discovery) => d.provider !== undefined || d.clientId !== undefined;

/** Whether `path` is one of the discovery endpoints this module answers. */
export function isDiscoveryPath(path: string): boolean {
  return under(path, PROTECTED_RESOURCE) || under(path, AUTHORIZATION_SERVER);
}

function under(path: string, prefix: string): boolean {
  return path === prefix || (path.startsWith(prefix) && path[prefix.length] === '/');
}

/** Answers a discovery request. */
export async function answerDiscovery(
  d: Discovery,
  ctx: RequestContext,
  cache: MetadataCache,
): Promise<ProxyResponse> {
  if (ctx.method === 'OPTIONS') {
    discard(ctx.body);
    return {
      status: 204,
      headers: {
        ...CORS,
        'access-control-allow-methods': 'GET, POST, OPTIONS',
        'access-control-max-age': '86400',
      },
      body: null,
    };
  }
  const path = ctx.path;
  if (under(path, PROTECTED_RESOURCE)) {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return methodNotAllowed(ctx, 'GET');
    return json(200, protectedResourceMetadata(d, ctx, path.slice(PROTECTED_RESOURCE.length) || '/'));
  }
  const rest = path.slice(AUTHORIZATION_SERVER.length);
  if (rest.endsWith(REGISTRATION)) {
    if (ctx.method !== 'POST') return methodNotAllowed(ctx, 'POST');
    return register(d, ctx, cache);
  }
  if (d.entra && rest.endsWith(AUTHORIZE)) {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return methodNotAllowed(ctx, 'GET');
    return entraAuthorize(d.entra.endpoints, ctx);
  }
  if (d.entra && rest.endsWith(TOKEN)) {
    if (ctx.method !== 'POST') return methodNotAllowed(ctx, 'POST');
    return entraToken(d, d.entra, ctx);
  }
  if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return methodNotAllowed(ctx, 'GET');
  const doc = { ...(await cache.get(d)) };
  const resource = resourceFor(d, ctx, rest || '/');
  if (d.provider === 'auth0' || d.provider === 'okta') {
    // Neither takes RFC 8707 resource indicators; they name the API by an `audience` parameter.
    const ae = doc['authorization_endpoint'];
    if (typeof ae === 'string') {
      const u = new URL(ae);
      u.searchParams.set('audience', d.audiences?.[0] ?? resource);
      doc['authorization_endpoint'] = u.toString();
    }
  }
  // Keycloak, Okta and Descope answer registrations without CORS headers (browsers cannot read them),
  // authentik and Entra take none (a configured client id is answered here), and a configured client
  // id is answered here: either way registrations come to the gateway.
  if (
    d.clientId !== undefined ||
    d.provider === 'keycloak' ||
    d.provider === 'okta' ||
    d.provider === 'descope' ||
    d.provider === 'authentik' ||
    d.provider === 'entra'
  )
    doc['registration_endpoint'] = `${baseUrl(ctx)}${path}${REGISTRATION}`;
  if (d.entra) {
    // Entra refuses the RFC 8707 resource parameter MCP clients must send (AADSTS9010010): clients
    // are sent to the gateway's endpoints, which take it out. It does PKCE but does not say so.
    doc['authorization_endpoint'] = `${baseUrl(ctx)}${path}${AUTHORIZE}`;
    doc['token_endpoint'] = `${baseUrl(ctx)}${path}${TOKEN}`;
    doc['code_challenge_methods_supported'] ??= ['S256'];
  }
  return json(200, doc);
}

function protectedResourceMetadata(d: Discovery, ctx: RequestContext, rest: string): Record<string, unknown> {
  const resource = resourceFor(d, ctx, rest);
  const server = fronted(d) ? resource : d.issuer;
  return {
    resource,
    authorization_servers: [server],
    bearer_methods_supported: ['header'],
    // configured entries win (they may name the resource and authorization servers themselves)
    ...d.metadata,
  };
}

/** The issuer's metadata, fetched at most every few minutes. */
export class MetadataCache {
  #doc: Record<string, unknown> | undefined;
  #until = 0;
  #pending: Promise<Record<string, unknown>> | undefined;

  async get(d: Discovery): Promise<Record<string, unknown>> {
    if (this.#doc && this.#until > Date.now()) return this.#doc;
    this.#pending ??= fetchMetadata(d).then(
      (doc) => {
        this.#doc = doc;
        this.#until = Date.now() + METADATA_TTL_MS;
        this.#pending = undefined;
        return doc;
      },
      (err: unknown) => {
        this.#pending = undefined;
        throw err;
      },
    );
    return this.#pending;
  }
}

/** Where the issuer publishes its metadata: RFC 8414 first, OpenID discovery for those without it. */
function metadataUrls(d: Discovery): string[] {
  const issuer = d.issuer.replace(/\/+$/, '');
  const oidc = `${issuer}/.well-known/openid-configuration`;
  // Entra's is its tenant's v2.0 OpenID discovery (also for a v1 issuer, sts.windows.net).
  if (d.entra) return [d.entra.endpoints.openidConfiguration];
  // Keycloak, Okta (custom authorization servers), Descope and authentik serve only OpenID discovery
  // under the issuer.
  if (
    d.provider === 'keycloak' ||
    d.provider === 'okta' ||
    d.provider === 'descope' ||
    d.provider === 'authentik'
  )
    return [oidc];
  const u = new URL(issuer);
  const p = u.pathname === '/' ? '' : u.pathname;
  return [`${u.origin}${AUTHORIZATION_SERVER}${p}`, oidc];
}

async function fetchMetadata(d: Discovery): Promise<Record<string, unknown>> {
  let last = '';
  for (const url of metadataUrls(d)) {
    let r: Awaited<ReturnType<typeof call>>;
    try {
      r = await call('GET', url, {});
    } catch (err) {
      throw new GwError(
        'GW_ERR_MCP_AUTH_SERVER',
        `the authorization server's metadata is not available: ${(err as GwError).detail}`,
      );
    }
    if (r.status === 200) {
      const doc = parseJson(r.body);
      if (doc && typeof doc === 'object' && !Array.isArray(doc)) return doc as Record<string, unknown>;
      last = `${url} did not answer with a JSON object`;
      continue;
    }
    last = `${url} answered ${r.status}`;
  }
  throw new GwError(
    'GW_ERR_MCP_AUTH_SERVER',
    `the authorization server's metadata is not available: ${last}`,
  );
}

/** Where the provider takes registrations when the gateway passes them on. */
async function registrationUrl(d: Discovery, cache: MetadataCache): Promise<string | undefined> {
  const issuer = d.issuer.replace(/\/+$/, '');
  // neither takes dynamic registrations: only a configured clientId registers (answered above)
  if (d.provider === 'authentik' || d.provider === 'entra') return undefined;
  if (d.provider === 'keycloak') return `${issuer}/clients-registrations/openid-connect`;
  if (d.provider === 'okta') return `${new URL(issuer).origin}/oauth2/v1/clients`;
  if (d.provider === 'descope') {
    // an agentic app's MCP server takes them at the management API (the loader checked the issuer)
    const a = descopeAgentic(issuer);
    return a && `${a.origin}/v1/mgmt/mcp/client/${a.project}/${a.server}/register`;
  }
  const advertised = (await cache.get(d))['registration_endpoint'];
  return typeof advertised === 'string' ? advertised : undefined;
}

async function register(d: Discovery, ctx: RequestContext, cache: MetadataCache): Promise<ProxyResponse> {
  const body = await readBody(ctx);
  if (d.clientId !== undefined) {
    // A pre-registered client: every registration gets its id. The client stays public (PKCE); the
    // redirect URIs it asked for are echoed because strict clients check them.
    const asked = parseJson(body);
    const req =
      asked && typeof asked === 'object' && !Array.isArray(asked) ? (asked as Record<string, unknown>) : {};
    const strings = (v: unknown) => (Array.isArray(v) ? v.filter((x) => typeof x === 'string') : undefined);
    const grants = strings(req['grant_types'])?.filter(
      (g) => g === 'authorization_code' || g === 'refresh_token',
    );
    const answer: Record<string, unknown> = {
      client_id: d.clientId,
      client_id_issued_at: Math.floor(Date.now() / 1000),
      redirect_uris: strings(req['redirect_uris']) ?? [],
      grant_types: grants?.length ? grants : ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
    if (typeof req['client_name'] === 'string') answer['client_name'] = req['client_name'];
    if (typeof req['scope'] === 'string') answer['scope'] = req['scope'];
    return json(201, answer);
  }
  const target = await registrationUrl(d, cache);
  if (!target)
    return json(400, {
      error: 'invalid_client_metadata',
      error_description:
        'the authorization server does not take dynamic client registrations; configure clientId on the gateway',
    });
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  // Okta's registration API wants the caller's own API token.
  const auth = ctx.headers['authorization'];
  if (typeof auth === 'string') headers['authorization'] = auth;
  const r = await call('POST', target, headers, body);
  return {
    status: r.status,
    headers: { ...CORS, 'content-type': r.contentType ?? 'application/json' },
    body: r.body,
  };
}

async function readBody(ctx: RequestContext): Promise<Buffer> {
  const b = ctx.body;
  ctx.body = null;
  if (b === null) return Buffer.alloc(0);
  if (Buffer.isBuffer(b)) return b;
  // the request's deadline and body idle timeout end a registration a client stops sending
  const read = await bufferUpTo(b, MAX_DOCUMENT, contentLength(ctx.headers), ctx);
  if (!read.ok) {
    discard(read.stream);
    throw new GwError('GW_ERR_REQUEST_TOO_LARGE', `a client registration is at most ${MAX_DOCUMENT} bytes`);
  }
  return read.data;
}

async function call(
  method: 'GET' | 'POST',
  url: string,
  headers: Record<string, string>,
  body?: Buffer,
): Promise<{ status: number; body: Buffer; contentType: string | undefined }> {
  try {
    const r = await request(url, {
      method,
      headers: { accept: 'application/json', ...headers },
      ...(body ? { body } : {}),
      dispatcher: dispatcher(),
      headersTimeout: UPSTREAM_TIMEOUT_MS,
      bodyTimeout: UPSTREAM_TIMEOUT_MS,
    });
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const c of r.body) {
      size += (c as Buffer).length;
      if (size > MAX_DOCUMENT) {
        r.body.destroy();
        throw new GwError('GW_ERR_MCP_AUTH_SERVER', `${url} answered with more than ${MAX_DOCUMENT} bytes`);
      }
      chunks.push(c as Buffer);
    }
    const ct = r.headers['content-type'];
    return { status: r.statusCode, body: Buffer.concat(chunks), contentType: Array.isArray(ct) ? ct[0] : ct };
  } catch (err) {
    if (err instanceof GwError) throw err;
    throw new GwError('GW_ERR_MCP_AUTH_SERVER', `${url}: ${(err as Error).message}`, { cause: err });
  }
}

function parseJson(b: Buffer): unknown {
  try {
    return JSON.parse(b.toString('utf8'));
  } catch {
    return undefined;
  }
}

function json(status: number, v: unknown, extra: Record<string, string> = CORS): ProxyResponse {
  const body = Buffer.from(JSON.stringify(v));
  return {
    status,
    headers: { ...extra, 'content-type': 'application/json', 'cache-control': 'no-store' },
    body,
  };
}

function methodNotAllowed(ctx: RequestContext, allow: string): ProxyResponse {
  discard(ctx.body);
  ctx.body = null;
  return {
    status: 405,
    headers: { ...CORS, allow: `${allow}, OPTIONS`, 'content-type': 'text/plain; charset=utf-8' },
    body: Buffer.from(`${ctx.method} is not allowed here\n`),
  };
}

/** Entra's authorization endpoint, with the client's query less `resource` (Entra refuses it). */
function entraAuthorize(e: EntraEndpoints, ctx: RequestContext): ProxyResponse {
  discard(ctx.body);
  ctx.body = null;
  const q = new URLSearchParams(ctx.query.startsWith('?') ? ctx.query.slice(1) : ctx.query);
  q.delete('resource');
  const query = q.toString();
  return {
    status: 302,
    headers: { location: query ? `${e.authorizationEndpoint}?${query}` : e.authorizationEndpoint },
    body: null,
  };
}

/** Grants the gateway may add clientSecret to: those a user took part in, never client_credentials. */
const USER_GRANTS = new Set(['authorization_code', 'refresh_token']);

/**
 * A token request passed on to Entra without `resource`. clientSecret is added for the configured
 * clientId's user grants when the request carries no credential of its own (Authorization header or
 * client_secret): this endpoint answers before any authentication, so the gateway's credential must
 * not mint tokens for any other client or grant.
 */
async function entraToken(
  d: Discovery,
  e: NonNullable<Discovery['entra']>,
  ctx: RequestContext,
): Promise<ProxyResponse> {
  const form = new URLSearchParams((await readBody(ctx)).toString('utf8'));
  form.delete('resource');
  const authorization = ctx.headers['authorization'];
  const credentialed = typeof authorization === 'string' || form.has('client_secret');
  const grant = form.get('grant_type') ?? '';
  if (
    e.clientSecret &&
    !credentialed &&
    d.clientId !== undefined &&
    form.getAll('client_id').length === 1 &&
    form.get('client_id') === d.clientId &&
    form.getAll('grant_type').length === 1 &&
    USER_GRANTS.has(grant)
  )
    form.set('client_secret', e.clientSecret.reveal());
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
  if (typeof authorization === 'string') headers['authorization'] = authorization;
  const r = await call('POST', e.endpoints.tokenEndpoint, headers, Buffer.from(form.toString()));
  return {
    status: r.status,
    headers: { ...CORS, 'content-type': r.contentType ?? 'application/json', 'cache-control': 'no-store' },
    body: r.body,
  };
}
