// Wraps the credentials of a validated traffic policy (API keys, htpasswd lines, oidc's client
// secret) in Secret, once, where the config is loaded: everything downstream (IR, config dump,
// trace, logs) then prints `[redacted]` by construction.
import { type BackendTLS, ecdhCurveOf, type McpAuthentication, type TrafficPolicies } from '@gw/api';
import { Secret } from '../secret.ts';
import type {
  ApiKeyEntryIR,
  ApiKeyIR,
  BackendTlsIR,
  BasicAuthIR,
  ExtAuthzIR,
  ExtAuthzServiceIR,
  McpAuthenticationIR,
  RoutePolicies,
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
    mcpAuthentication,
    backendAuth: _toBackends,
    ...rest
  } = p;
  const out: RoutePolicies = rest;
  if (mcpAuthentication) out.mcpAuthentication = sealMcpAuthentication(mcpAuthentication);
  if (extAuthz) out.extAuthz = sealExtAuthzPolicy(extAuthz);
  if (extProc) out.extProc = sealService(extProc) as NonNullable<RoutePolicies['extProc']>;
  if (remoteRateLimit)
    out.remoteRateLimit = sealService(remoteRateLimit) as NonNullable<RoutePolicies['remoteRateLimit']>;
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

/**
 * An extAuthz check with TLS to its service, its key and headers as the IR holds them (the loader has
 * read its files and checked the key's location is a header).
 */
function sealExtAuthz<E extends ExtAuthz>(e: E): ExtAuthzIR & Omit<E, 'policies'> {
  const { policies, ...rest } = e;
  if (!policies) return rest as ExtAuthzIR & Omit<E, 'policies'>;
  const out: ExtAuthzServiceIR = {};
  if (policies.backendTLS) out.backendTLS = tlsIR(policies.backendTLS);
  const hm = policies.requestHeaderModifier;
  if (hm?.add || hm?.set) {
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries({ ...hm.add, ...hm.set })) headers[k.toLowerCase()] = v;
    out.headers = headers;
  }
  const auth = policies.backendAuth;
  if (auth && 'key' in auth) {
    const k = auth.key;
    const value = typeof k === 'string' ? k : 'value' in k ? k.value : undefined;
    const loc = typeof k === 'object' && 'location' in k ? k.location : undefined;
    const h = loc && 'header' in loc ? loc.header : { name: 'authorization', prefix: 'Bearer ' };
    if (typeof value === 'string')
      out.credential = { header: h.name.toLowerCase(), value: new Secret(`${h.prefix ?? ''}${value}`) };
  }
  return (Object.keys(out).length > 0 ? { ...rest, policies: out } : rest) as ExtAuthzIR &
    Omit<E, 'policies'>;
}

type ServiceEntry = { policies?: { backendTLS?: BackendTLS | undefined } | null | undefined };

/** A service policy, plain or conditional, with each entry's backendTLS sealed. */
function sealService(v: ServiceEntry | { conditional: ServiceEntry[] }): unknown {
  return 'conditional' in v ? { conditional: v.conditional.map(sealServiceTls) } : sealServiceTls(v);
}

/** A policy's service entry with its backendTLS as the IR holds it (the loader has read its files). */
function sealServiceTls<E extends ServiceEntry>(
  e: E,
): Omit<E, 'policies'> & { policies?: { backendTLS: BackendTlsIR } } {
  const { policies, ...rest } = e;
  const tls = policies?.backendTLS;
  return tls ? { ...rest, policies: { backendTLS: tlsIR(tls) } } : rest;
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
