// Wraps the credentials of a validated traffic policy (API keys, htpasswd lines, oidc's client
// secret) in Secret, once, where the config is loaded: everything downstream (IR, config dump,
// trace, logs) then prints `[redacted]` by construction.
import { type BackendTLS, ecdhCurveOf, type McpAuthentication, type TrafficPolicies } from '@gw/api';
import { Secret } from '../secret.ts';
import { AUTHORIZATION, type AuthLocationIR, sealedHeader } from './connection-ir.ts';
import type {
  ApiKeyEntryIR,
  ApiKeyIR,
  BackendAuthIR,
  BackendTlsIR,
  BasicAuthIR,
  ExtAuthzIR,
  McpAuthenticationIR,
  McpRemoteRateLimitIR,
  RoutePolicies,
  ServiceCallIR,
} from './ir.ts';

type ApiKeyEntry = Extract<NonNullable<TrafficPolicies['apiKey']>['keys'], unknown[]>[number];

function sealKey(e: ApiKeyEntry): ApiKeyEntryIR {
  if (typeof e === 'string') return new Secret(e);
  const meta = {
    ...(e.metadata === undefined ? {} : { metadata: e.metadata }),
    ...(e.allowedModels == null ? {} : { allowedModels: e.allowedModels }),
  };
  // A bare SHA-256 of a short key can be guessed offline, so the hash is kept out of sight as well.
  if ('key' in e) return { key: new Secret(e.key), ...meta };
  return { keyHash: new Secret(e.keyHash), ...meta };
}

/** A copy of `p` with its credentials sealed; `p` is not changed (policies are shared between routes). */
export function sealPolicies(p: TrafficPolicies): RoutePolicies {
  // backendAuth is not a route layer: the loader has handed it to each of the route's backends.
  const {
    apiKey,
    basicAuth,
    oidc,
    extAuthz,
    extProc,
    remoteRateLimit,
    mcpRemoteRateLimit,
    mcpAuthentication,
    mcpGuardrails,
    backendAuth: _toBackends,
    ...rest
  } = p;
  const out: RoutePolicies = rest;
  if (mcpGuardrails) out.mcpGuardrails = sealProcessorKeys(mcpGuardrails);
  if (mcpAuthentication) out.mcpAuthentication = sealMcpAuthentication(mcpAuthentication);
  if (extAuthz) out.extAuthz = sealExtAuthzPolicy(extAuthz);
  if (extProc) out.extProc = sealService(extProc) as NonNullable<RoutePolicies['extProc']>;
  if (remoteRateLimit)
    out.remoteRateLimit = sealService(remoteRateLimit) as NonNullable<RoutePolicies['remoteRateLimit']>;
  if (mcpRemoteRateLimit) out.mcpRemoteRateLimit = sealMcpRemoteRateLimit(mcpRemoteRateLimit);
  if (oidc) out.oidc = { ...oidc, clientSecret: new Secret(oidc.clientSecret) };
  if (apiKey) {
    const keys = Array.isArray(apiKey.keys)
      ? apiKey.keys.map(sealKey)
      : Object.fromEntries(Object.entries(apiKey.keys).map(([name, e]) => [name, sealKey(e)]));
    out.apiKey = { ...apiKey, keys } satisfies ApiKeyIR;
  }
  if (basicAuth) {
    const { users, htpasswd, ...b } = basicAuth;
    const sealed: BasicAuthIR = b;
    if (users) sealed.users = users.map((u) => new Secret(u));
    // The loader has read an htpasswd file by now; a `{file}` left here is one that could not be read.
    if (typeof htpasswd === 'string') sealed.htpasswd = new Secret(htpasswd);
    out.basicAuth = sealed;
  }
  return out;
}

/** An extAuthz policy, plain or conditional, with TLS to each service sealed (a route's or a backend's). */
export function sealExtAuthzPolicy(
  extAuthz: NonNullable<TrafficPolicies['extAuthz']>,
): NonNullable<RoutePolicies['extAuthz']> {
  return 'conditional' in extAuthz
    ? { conditional: extAuthz.conditional.map((e) => sealExtAuthz(e)) }
    : sealExtAuthz(extAuthz);
}

type ExtAuthz = Exclude<NonNullable<TrafficPolicies['extAuthz']>, { conditional: unknown }>;

/** An extAuthz check with its service's policies as the IR holds them (sealServicePolicies). */
function sealExtAuthz<E extends ExtAuthz>(e: E): ExtAuthzIR & Omit<E, 'policies'> {
  return sealServiceTls(e) as ExtAuthzIR & Omit<E, 'policies'>;
}

/** A service's policies as the schema gives them (extAuthz, extProc, remoteRateLimit). */
type ServicePolicies = {
  backendTLS?: BackendTLS | undefined;
  backendAuth?: unknown;
  requestHeaderModifier?:
    | { add?: Record<string, string> | undefined; set?: Record<string, string> | undefined }
    | undefined;
};
type ServiceEntry = { policies?: ServicePolicies | null | undefined };

/** A service policy, plain or conditional, with each entry's service policies sealed. */
function sealService(v: ServiceEntry | { conditional: ServiceEntry[] }): unknown {
  return 'conditional' in v ? { conditional: v.conditional.map(sealServiceTls) } : sealServiceTls(v);
}

/** mcpRemoteRateLimit with its service's TLS and key as the IR holds them. */
export function sealMcpRemoteRateLimit(
  m: NonNullable<TrafficPolicies['mcpRemoteRateLimit']>,
): McpRemoteRateLimitIR {
  return sealServiceTls(m) as McpRemoteRateLimitIR;
}

/** A policy's service entry with its policies as the IR holds them. */
function sealServiceTls<E extends ServiceEntry>(e: E): Omit<E, 'policies'> & { policies?: ServiceCallIR } {
  const { policies, ...rest } = e;
  const out = policies ? sealServicePolicies(policies) : {};
  return Object.keys(out).length > 0 ? { ...rest, policies: out } : rest;
}

/**
 * A service's backendAuth obtained per call (a token, a signed JWT, the client's JWT), as the loader
 * resolved it (config/load.ts serviceKey), by the config's backendAuth object: sealing takes it.
 */
export const SERVICE_AUTH = new WeakMap<object, BackendAuthIR>();

/**
 * A service's TLS, headers and key as the IR holds them: the loader has read their files and
 * checked that the key goes in a header (config/load.ts serviceKey).
 */
function sealServicePolicies(policies: ServicePolicies): ServiceCallIR {
  const out: ServiceCallIR = {};
  const token = policies.backendAuth ? SERVICE_AUTH.get(policies.backendAuth as object) : undefined;
  if (token) out.auth = token;
  if (policies.backendTLS) out.backendTLS = tlsIR(policies.backendTLS);
  const hm = policies.requestHeaderModifier;
  if (hm?.add || hm?.set) {
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries({ ...hm.add, ...hm.set })) headers[k.toLowerCase()] = v;
    out.headers = headers;
  }
  const auth = policies.backendAuth as { key?: unknown } | undefined;
  const k = auth?.key as string | { value: unknown; location?: AuthLocationIR | null } | undefined;
  const value = typeof k === 'string' ? k : k?.value;
  const loc = (typeof k === 'object' ? k.location : undefined) ?? AUTHORIZATION;
  const h = typeof value === 'string' ? sealedHeader(loc, value) : undefined;
  if (h) out.credential = h;
  const creds = (
    policies.backendAuth as { credentials?: { location: AuthLocationIR; key: unknown }[] } | undefined
  )?.credentials;
  const extra = (creds ?? []).flatMap((c) =>
    typeof c.key === 'string' ? (sealedHeader(c.location, c.key) ?? []) : [],
  );
  if (extra.length > 0) out.credentials = extra;
  return out;
}

function tlsIR(t: BackendTLS): BackendTlsIR {
  const { cert, key, root, keyExchangeGroups, spiffe: _refused, ...names } = t;
  const out: BackendTlsIR = { ...names } as BackendTlsIR;
  if (typeof cert === 'string') out.cert = cert;
  if (typeof key === 'string') out.key = new Secret(key);
  if (typeof root === 'string') out.root = root;
  if (keyExchangeGroups) out.ecdhCurve = ecdhCurveOf(keyExchangeGroups);
  return out;
}

/** mcpAuthentication with its clientSecret (Entra's app registration secret) sealed. */
export function sealMcpAuthentication(m: McpAuthentication | McpAuthenticationIR): McpAuthenticationIR {
  const { clientSecret, ...rest } = m;
  if (clientSecret == null) return rest;
  return { ...rest, clientSecret: clientSecret instanceof Secret ? clientSecret : new Secret(clientSecret) };
}

type McpGuardrails = NonNullable<TrafficPolicies['mcpGuardrails']>;

/**
 * The route's mcpGuardrails as the IR keeps it (only shown: the mcp backend runs the processors the
 * loader compiled, with their keys sealed): each processor's key sealed too, so a dump prints it
 * [redacted]. The Secret stands where the config had the key's text.
 */
function sealProcessorKeys(g: McpGuardrails): McpGuardrails {
  return {
    ...g,
    processors: g.processors.map((p) => {
      if (!('policies' in p)) return p;
      const auth = p.policies?.backendAuth as
        | { key?: unknown; credentials?: { key: unknown }[] | undefined }
        | undefined;
      if (!auth || (!('key' in auth) && !auth.credentials)) return p;
      const sealed = {
        ...auth,
        ...('key' in auth ? { key: new Secret(JSON.stringify(auth.key)) } : {}),
        ...(auth.credentials
          ? { credentials: auth.credentials.map((c) => ({ ...c, key: new Secret(JSON.stringify(c.key)) })) }
          : {}),
      };
      return { ...p, policies: { ...p.policies, backendAuth: sealed } } as typeof p;
    }),
  };
}
