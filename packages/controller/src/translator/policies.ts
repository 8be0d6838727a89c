// GwPolicy sections (traffic, frontend, backend) and GwBackend.spec.policies → the standalone config's
// policy shapes (TrafficPolicies, FrontendPolicies, BackendPolicies of @gw/api), which the proxy checks
// with the same definitions as a `gw -f` file. References are resolved through the snapshot (same
// namespace as the policy); anything that cannot be translated becomes a problem string for the
// policy's Attached condition, and a policy whose credentials are missing fails closed.
//
// Rules chosen here (the CRDs leave them to the implementation):
// - A Service backendRef becomes `<name>.<namespace>.svc.cluster.local:<port>` (ext_authz, rate limit
//   service); a JWKS backendRef becomes the URL `http://<that>` (`https://` when the Service port says
//   appProtocol https or is 443). JWKS remote has no path field, so the keys must be served at `/`.
// - Enum values are written in the standalone's agentgateway spelling (`strict`, `failOpen`).
// - Fail closed, per policy, when a referenced Secret/ConfigMap/Service or key is missing:
//   JWT: the provider gets an empty JWKS (its tokens are rejected, 401) and the mode becomes strict;
//   API key: no keys and mode strict (401); ext_authz: failureMode failClosed (or, with no address at
//   all, the deny-all rule below); basic auth: the standalone loader requires users or htpasswd and has
//   no "nobody" form, so the policy is left out and an authorization rule `Deny: true` is added (403).
//   Backend settings cannot express "refuse": `failClosed` tells the caller not to use the backend.
import type { BackendPolicies, FrontendPolicies as FrontendPoliciesSchema, TrafficPolicies } from '@gw/api';
import type { GwBackendSpec } from '@gw/api/crd/gwbackend';
import type { GwPolicySpec } from '@gw/api/crd/gwpolicy';
import { HTPASSWD_PATTERN } from '@gw/api/crd/policy-blocks';
import type { KubeObject, Lookup } from './types.ts';

export type FrontendPolicies = ReturnType<(typeof FrontendPoliciesSchema)['parse']>;

type TrafficSpec = NonNullable<GwPolicySpec['traffic']>;
type FrontendSpec = NonNullable<GwPolicySpec['frontend']>;
type BackendSpec = NonNullable<GwPolicySpec['backend']> | NonNullable<GwBackendSpec['policies']>;

export interface PolicyResult<T> {
  policies: T;
  /** What could not be translated, each prefixed with its field path; empty when all of it was. */
  problems: string[];
}

export interface BackendPolicyResult extends PolicyResult<BackendPolicies> {
  /**
   * A referenced Secret/ConfigMap or key of the TLS settings is missing or unusable (or the identity
   * source is one this build lacks): the policies lack what the user asked for (e.g. their CA, so
   * system CAs would be trusted instead), and the caller
   * must not send traffic to the backend (treat it as unresolved: 500) until this is fixed.
   */
  failClosed: boolean;
}

export const CLUSTER_DOMAIN = 'cluster.local';
/** An authorization block that denies every request: the fail-closed form when nothing else can say so. */
export const DENY_ALL = { action: 'Deny', policy: { matchExpressions: ['true'] } } as const;
/** A JWKS no token verifies against. */
export const EMPTY_JWKS = '{"keys":[]}';

const KEY_HASH = /^sha256:[0-9a-fA-F]{64}$/;

// ---------- shared helpers ----------

class Context {
  readonly problems: string[] = [];
  readonly namespace: string;
  readonly lookup: Lookup;
  constructor(namespace: string, lookup: Lookup) {
    this.namespace = namespace;
    this.lookup = lookup;
  }
  problem(field: string, message: string): void {
    this.problems.push(`${field}: ${message}`);
  }
  unsupported(field: string): void {
    this.problems.push(`${field} is not supported by this gw build yet`);
  }
  /** Reports every key of `block` the caller did not translate. */
  rest(field: string, block: object, handled: readonly string[]): void {
    for (const [k, v] of Object.entries(block)) {
      if (v !== undefined && !handled.includes(k)) this.unsupported(`${field}.${k}`);
    }
  }
}

/** A copy without the keys whose value is undefined (the standalone shapes are strict objects). */
function defined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

const lowerFirst = <S extends string>(s: S) => (s.charAt(0).toLowerCase() + s.slice(1)) as Uncapitalize<S>;

const quote = JSON.stringify;

interface ObjectRef {
  group?: string | undefined;
  kind?: string | undefined;
  name: string;
}

/** The decoded value of `key` in a Secret (base64 data) or a ConfigMap (plain data). */
function readKey(
  ctx: Context,
  field: string,
  kind: 'Secret' | 'ConfigMap',
  name: string,
  key: string,
): string | undefined {
  const obj = ctx.lookup.get(kind, ctx.namespace, name);
  const what = `${kind.toLowerCase()} ${quote(name)}`;
  if (!obj) {
    ctx.problem(field, `${what} not found`);
    return undefined;
  }
  const raw = obj.data?.[key];
  if (raw === undefined) {
    ctx.problem(field, `${what} has no key ${quote(key)}`);
    return undefined;
  }
  return kind === 'Secret' ? Buffer.from(raw, 'base64').toString('utf8') : raw;
}

/** A LocalSecretObjectRef/LocalSecretKeyRef may name only a core Secret. */
function isSecretRef(ctx: Context, field: string, ref: ObjectRef): boolean {
  if ((ref.group ?? '') === '' && (ref.kind ?? 'Secret') === 'Secret') return true;
  ctx.problem(field, `only a Secret can be referenced, not ${quote(`${ref.group ?? ''}/${ref.kind ?? ''}`)}`);
  return false;
}

function isPem(ctx: Context, field: string, what: string, text: string): boolean {
  // The loader reads a string without a PEM header as a file path: never hand it one from a Secret.
  if (text.includes('-----BEGIN')) return true;
  ctx.problem(field, `${what} is not PEM`);
  return false;
}

interface BackendRef {
  group: string;
  kind: string;
  name: string;
  port?: number | undefined;
}

interface ServiceAddress {
  /** `<name>.<namespace>.svc.cluster.local:<port>` */
  hostPort: string;
  https: boolean;
  /** false when the Service or its port is not in the snapshot (a problem was reported). */
  resolved: boolean;
}

/** The in-cluster address of a Service backendRef; undefined when the reference cannot name one. */
function serviceAddress(ctx: Context, field: string, ref: BackendRef): ServiceAddress | undefined {
  if (ref.group !== '' || ref.kind !== 'Service') {
    ctx.problem(
      field,
      `backendRef kind ${quote(`${ref.group}/${ref.kind}`)} is not supported here; use a Service`,
    );
    return undefined;
  }
  if (ref.port === undefined) {
    ctx.problem(field, 'backendRef port is required for a Service');
    return undefined;
  }
  const hostPort = `${ref.name}.${ctx.namespace}.svc.${CLUSTER_DOMAIN}:${ref.port}`;
  const svc = ctx.lookup.get('Service', ctx.namespace, ref.name);
  if (!svc) {
    ctx.problem(field, `service ${quote(ref.name)} not found`);
    return { hostPort, https: ref.port === 443, resolved: false };
  }
  const ports = (
    (svc.spec as { ports?: { port?: number; appProtocol?: string }[] } | undefined)?.ports ?? []
  ).filter((p) => p.port === ref.port);
  const port = ports[0];
  if (!port) {
    ctx.problem(field, `service ${quote(ref.name)} has no port ${ref.port}`);
    return { hostPort, https: ref.port === 443, resolved: false };
  }
  const https =
    port.appProtocol !== undefined ? port.appProtocol.toLowerCase() === 'https' : ref.port === 443;
  return { hostPort, https, resolved: true };
}

function addDenyAll(out: TrafficPolicies): void {
  const deny = {
    action: DENY_ALL.action,
    policy: { matchExpressions: [...DENY_ALL.policy.matchExpressions] },
  };
  if (out.authorization === undefined) out.authorization = deny;
  else out.authorization = [out.authorization, deny].flat();
}

type CredentialLocationSpec = NonNullable<NonNullable<TrafficSpec['jwtAuthentication']>['location']>;
type TokenLocation = NonNullable<NonNullable<TrafficPolicies['jwtAuth']>['location']>;

function tokenLocation(l: CredentialLocationSpec): TokenLocation {
  if (l.header) return { header: defined({ name: l.header.name, prefix: l.header.prefix }) };
  if (l.queryParameter) return { queryParameter: { name: l.queryParameter.name } };
  if (l.cookie) return { cookie: { name: l.cookie.name } };
  return { expression: l.expression ?? '' };
}

type AuthorizationSpec = NonNullable<TrafficSpec['authorization']>;
function authorization(a: AuthorizationSpec) {
  return { action: a.action, policy: { matchExpressions: [...a.policy.matchExpressions] } };
}

type HeaderModifierSpec = NonNullable<NonNullable<TrafficSpec['headerModifiers']>['request']>;
type HeaderModifier = NonNullable<TrafficPolicies['requestHeaderModifier']>;

/**
 * Name/value lists → the standalone's maps; a name listed twice keeps its last value. Header names
 * compare case-insensitively, attribute names exactly.
 */
function nameMap(
  ctx: Context,
  field: string,
  list: { name: string; value: string }[],
  what: 'header' | 'attribute',
): Record<string, string> {
  const out: Record<string, string> = {};
  const seen = new Map<string, string>();
  for (const h of list) {
    const id = what === 'header' ? h.name.toLowerCase() : h.name;
    const earlier = seen.get(id);
    if (earlier !== undefined) {
      ctx.problem(field, `${what} ${quote(h.name)} is listed more than once; the last value is used`);
      delete out[earlier];
    }
    seen.set(id, h.name);
    out[h.name] = h.value;
  }
  return out;
}

function headerModifier(ctx: Context, field: string, m: HeaderModifierSpec): HeaderModifier {
  return defined({
    add: m.add ? nameMap(ctx, `${field}.add`, m.add, 'header') : undefined,
    set: m.set ? nameMap(ctx, `${field}.set`, m.set, 'header') : undefined,
    remove: m.remove ? [...m.remove] : undefined,
  });
}

// ---------- traffic ----------

const TRAFFIC_HANDLED = [
  'phase',
  'timeouts',
  'retry',
  'cors',
  'csrf',
  'jwtAuthentication',
  'basicAuthentication',
  'apiKeyAuthentication',
  'extAuth',
  'authorization',
  'rateLimit',
  'buffer',
  'headerModifiers',
  'directResponse',
  'delay',
] as const;

/** GwPolicy spec.traffic → TrafficPolicies. `field` prefixes the problems (default `traffic`). */
export function trafficPolicy(
  spec: TrafficSpec,
  namespace: string,
  lookup: Lookup,
  field = 'traffic',
): PolicyResult<TrafficPolicies> {
  const ctx = new Context(namespace, lookup);
  const out: TrafficPolicies = {};
  ctx.rest(field, spec, TRAFFIC_HANDLED);
  if (spec.phase === 'PreRouting') ctx.unsupported(`${field}.phase PreRouting`);

  if (spec.timeouts) {
    out.timeout = defined({
      requestTimeout: spec.timeouts.request,
      backendRequestTimeout: spec.timeouts.backendRequest,
    });
  }
  if (spec.retry) {
    out.retry = defined({
      attempts: spec.retry.attempts,
      backoff: spec.retry.backoff,
      codes: [...spec.retry.codes],
    });
  }
  if (spec.cors) {
    const c = spec.cors;
    out.cors = defined({
      allowCredentials: c.allowCredentials,
      allowHeaders: c.allowHeaders && [...c.allowHeaders],
      allowMethods: c.allowMethods && [...c.allowMethods],
      allowOrigins: c.allowOrigins && [...c.allowOrigins],
      exposeHeaders: c.exposeHeaders && [...c.exposeHeaders],
      maxAge: c.maxAge,
    });
  }
  if (spec.csrf) out.csrf = { additionalOrigins: [...spec.csrf.additionalOrigins] };
  if (spec.authorization) out.authorization = authorization(spec.authorization);
  if (spec.jwtAuthentication)
    out.jwtAuth = jwtAuth(ctx, `${field}.jwtAuthentication`, spec.jwtAuthentication);
  if (spec.basicAuthentication) {
    const basic = basicAuth(ctx, `${field}.basicAuthentication`, spec.basicAuthentication);
    if (basic) out.basicAuth = basic;
    else addDenyAll(out);
  }
  if (spec.apiKeyAuthentication) {
    out.apiKey = apiKeyAuth(ctx, `${field}.apiKeyAuthentication`, spec.apiKeyAuthentication);
  }
  if (spec.extAuth) {
    const ext = extAuthz(ctx, `${field}.extAuth`, spec.extAuth);
    if (ext) out.extAuthz = ext;
    else addDenyAll(out);
  }
  if (spec.rateLimit) {
    const rl = spec.rateLimit;
    if (rl.local) {
      out.localRateLimit = rl.local.map((l) =>
        defined({ requests: l.requests, tokens: l.tokens, unit: l.unit, burst: l.burst }),
      );
    }
    if (rl.global) {
      const remote = remoteRateLimit(ctx, `${field}.rateLimit.global`, rl.global);
      if (remote) out.remoteRateLimit = remote;
    }
  }
  if (spec.buffer) {
    const side = (s: { maxBytes?: string | undefined; failureMode: 'FailClosed' | 'FailOpen' } | undefined) =>
      s && defined({ maxBytes: s.maxBytes, failureMode: lowerFirst(s.failureMode) });
    out.buffer = defined({ request: side(spec.buffer.request), response: side(spec.buffer.response) });
  }
  if (spec.headerModifiers) {
    const { request, response } = spec.headerModifiers;
    if (request) out.requestHeaderModifier = headerModifier(ctx, `${field}.headerModifiers.request`, request);
    if (response)
      out.responseHeaderModifier = headerModifier(ctx, `${field}.headerModifiers.response`, response);
  }
  if (spec.directResponse) {
    out.directResponse = defined({ status: spec.directResponse.status, body: spec.directResponse.body });
  }
  if (spec.delay) out.delay = { duration: spec.delay.duration };
  return { policies: out, problems: ctx.problems };
}

type JwtSpec = NonNullable<TrafficSpec['jwtAuthentication']>;
type JwtAuth = NonNullable<TrafficPolicies['jwtAuth']>;
type Jwks = NonNullable<JwtAuth['jwks']>;

function jwtAuth(ctx: Context, field: string, spec: JwtSpec): JwtAuth {
  ctx.rest(field, spec, ['mode', 'providers', 'location', 'preserveToken']);
  let broken = false;
  const providers = spec.providers.map((p, i) => {
    const pf = `${field}.providers[${i}].jwks`;
    let jwks: Jwks | undefined;
    if (p.jwks.inline !== undefined) {
      if (validJwks(p.jwks.inline)) jwks = { inline: p.jwks.inline };
      else ctx.problem(`${pf}.inline`, 'is not a JSON object with a "keys" list');
    } else if (p.jwks.remote) {
      const r = p.jwks.remote;
      ctx.rest(`${pf}.remote`, r, ['url', 'backendRef']);
      if (r.url !== undefined) jwks = { url: r.url };
      else if (r.backendRef) {
        const svc = serviceAddress(ctx, `${pf}.remote.backendRef`, r.backendRef);
        if (svc?.resolved) jwks = { url: `${svc.https ? 'https' : 'http'}://${svc.hostPort}` };
      }
    }
    if (!jwks) {
      broken = true;
      jwks = { inline: EMPTY_JWKS };
    }
    return defined({ issuer: p.issuer, audiences: p.audiences && [...p.audiences], jwks });
  });
  if (broken)
    ctx.problem(field, 'a provider has no usable keys: tokens it issued are rejected and the mode is Strict');
  return defined({
    mode: broken ? 'strict' : lowerFirst(spec.mode),
    providers,
    location: spec.location && tokenLocation(spec.location),
    preserveToken: spec.preserveToken,
  });
}

function validJwks(text: string): boolean {
  try {
    const v = JSON.parse(text) as unknown;
    return typeof v === 'object' && v !== null && Array.isArray((v as { keys?: unknown }).keys);
  } catch {
    return false;
  }
}

type BasicSpec = NonNullable<TrafficSpec['basicAuthentication']>;
type BasicAuth = NonNullable<TrafficPolicies['basicAuth']>;
const HTPASSWD_LINE = new RegExp(HTPASSWD_PATTERN);

/** undefined: no usable users (the caller denies every request). */
function basicAuth(ctx: Context, field: string, spec: BasicSpec): BasicAuth | undefined {
  const common = {
    mode: lowerFirst(spec.mode),
    realm: spec.realm,
    location: spec.location && tokenLocation(spec.location),
  };
  if (spec.users) return defined({ ...common, users: [...spec.users] });
  const ref = spec.secretRef;
  if (!ref) return undefined;
  const rf = `${field}.secretRef`;
  const denied = () => {
    ctx.problem(field, 'no usable users: every request is denied');
    return undefined;
  };
  if (!isSecretRef(ctx, rf, ref)) return denied();
  const key = ref.key ?? '.htaccess';
  const text = readKey(ctx, rf, 'Secret', ref.name, key);
  if (text === undefined) return denied();
  const lines: string[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    // the line is not quoted: it holds a password hash
    if (HTPASSWD_LINE.test(line)) lines.push(line);
    else
      ctx.problem(
        rf,
        `secret ${quote(ref.name)} key ${quote(key)} line ${i + 1} is not an htpasswd line <user>:<hash> (MD5, bcrypt, SHA-1 or crypt); it is skipped`,
      );
  });
  if (lines.length === 0) return denied();
  return defined({ ...common, htpasswd: `${lines.join('\n')}\n` });
}

type ApiKeySpec = NonNullable<TrafficSpec['apiKeyAuthentication']>;
type ApiKeyAuth = NonNullable<TrafficPolicies['apiKey']>;
type ApiKeyEntry = string | { key: string; metadata?: unknown } | { keyHash: string; metadata?: unknown };

function apiKeyAuth(ctx: Context, field: string, spec: ApiKeySpec): ApiKeyAuth {
  const keys: Record<string, ApiKeyEntry> = {};
  const from = new Map<string, string>();
  const collect = (kind: 'Secret' | 'ConfigMap', obj: KubeObject, sf: string) => {
    const what = `${kind.toLowerCase()} ${quote(obj.metadata.name)}`;
    for (const [name, raw] of Object.entries(obj.data ?? {}).sort(([a], [b]) =>
      a < b ? -1 : a > b ? 1 : 0,
    )) {
      const value = kind === 'Secret' ? Buffer.from(raw, 'base64').toString('utf8') : raw;
      const parsed = apiKeyEntry(value, kind === 'ConfigMap');
      if (typeof parsed === 'object' && 'error' in parsed) {
        ctx.problem(sf, `${what} entry ${quote(name)} ${parsed.error}; the entry is skipped`);
        continue;
      }
      const earlier = from.get(name);
      if (earlier !== undefined) {
        ctx.problem(sf, `entry ${quote(name)} is in ${earlier} and ${what}; the one in ${earlier} is used`);
        continue;
      }
      from.set(name, what);
      keys[name] = parsed;
    }
  };
  let broken = false;
  if (spec.secretRef) {
    const sf = `${field}.secretRef`;
    const ref = spec.secretRef;
    if (!isSecretRef(ctx, sf, ref)) broken = true;
    else {
      const obj = ctx.lookup.get('Secret', ctx.namespace, ref.name);
      if (obj) collect('Secret', obj, sf);
      else {
        broken = true;
        ctx.problem(sf, `secret ${quote(ref.name)} not found`);
      }
    }
  } else {
    const kind = spec.secretSelector ? 'Secret' : 'ConfigMap';
    const sf = `${field}.${spec.secretSelector ? 'secretSelector' : 'configMapSelector'}`;
    const labels = (spec.secretSelector ?? spec.configMapSelector)?.matchLabels ?? {};
    if (Object.keys(labels).length === 0) {
      // An empty selector selects every object of the namespace: service account tokens, TLS keys…
      ctx.problem(
        sf,
        `matchLabels is empty, which would select every ${kind} in the namespace; name a label`,
      );
      broken = true;
    } else {
      const matching = ctx.lookup
        .list(kind, ctx.namespace)
        .filter((o) => Object.entries(labels).every(([k, v]) => o.metadata.labels?.[k] === v))
        .sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0));
      if (matching.length === 0) {
        ctx.problem(
          sf,
          `no ${kind} in namespace ${quote(ctx.namespace)} has the labels ${formatLabels(labels)}`,
        );
      }
      for (const o of matching) collect(kind, o, sf);
    }
  }
  if (Object.keys(keys).length === 0) {
    broken = true;
    ctx.problem(field, 'no usable API keys: every request is rejected');
  }
  return defined({
    mode: broken ? 'strict' : lowerFirst(spec.mode),
    keys,
    location: spec.location && tokenLocation(spec.location),
  });
}

const formatLabels = (labels: Record<string, string>) =>
  Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');

/**
 * One credential entry: a plain key, or JSON `{"key"|"keyHash": …, "metadata": …}`. Surrounding
 * whitespace is dropped (files made with `kubectl create secret --from-file` end in a newline).
 * Errors never quote the value: it is a credential.
 */
function apiKeyEntry(value: string, hashedOnly: boolean): ApiKeyEntry | { error: string } {
  const text = value.trim();
  if (text === '') return { error: 'is empty' };
  if (!text.startsWith('{')) {
    return hashedOnly
      ? { error: 'holds a raw key; ConfigMaps may only hold hashed keys ({"keyHash": "sha256:<hex>"})' }
      : text;
  }
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return { error: 'starts with "{" but is not valid JSON' };
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return { error: 'is not a JSON object' };
  const o = v as Record<string, unknown>;
  const extra = Object.keys(o).filter((k) => k !== 'key' && k !== 'keyHash' && k !== 'metadata');
  if (extra.length > 0) return { error: `has unknown fields ${extra.map((k) => quote(k)).join(', ')}` };
  const meta = o['metadata'] === undefined ? {} : { metadata: o['metadata'] };
  if (o['key'] !== undefined && o['keyHash'] !== undefined) return { error: 'has both key and keyHash' };
  if (o['key'] !== undefined) {
    if (hashedOnly)
      return { error: 'holds a raw key; ConfigMaps may only hold hashed keys ({"keyHash": "sha256:<hex>"})' };
    if (typeof o['key'] !== 'string' || o['key'] === '')
      return { error: 'has a key that is not a non-empty string' };
    return { key: o['key'], ...meta };
  }
  if (o['keyHash'] !== undefined) {
    if (typeof o['keyHash'] !== 'string' || !KEY_HASH.test(o['keyHash']))
      return { error: 'has a keyHash that is not sha256:<64 hex digits>' };
    return { keyHash: o['keyHash'], ...meta };
  }
  return { error: 'has neither key nor keyHash' };
}

type ExtAuthSpec = NonNullable<TrafficSpec['extAuth']>;
type ExtAuthz = NonNullable<TrafficPolicies['extAuthz']>;

/** undefined: no address to call (the caller denies every request). */
function extAuthz(ctx: Context, field: string, spec: ExtAuthSpec): ExtAuthz | undefined {
  const svc = serviceAddress(ctx, `${field}.backendRef`, spec.backendRef);
  if (!svc) {
    ctx.problem(field, 'no authorization service to call: every request is denied');
    return undefined;
  }
  let failureMode = lowerFirst(spec.failureMode);
  if (!svc.resolved && failureMode === 'failOpen') {
    // FailOpen is for an outage of a service that exists; a dangling reference is a mistake.
    ctx.problem(field, 'failureMode is FailClosed until the backendRef resolves');
    failureMode = 'failClosed';
  }
  if (spec.grpc) {
    const g = spec.grpc;
    return {
      grpc: defined({
        host: svc.hostPort,
        contextExtensions: g.contextExtensions && { ...g.contextExtensions },
        requestMetadata: g.requestMetadata && { ...g.requestMetadata },
        timeout: spec.timeout,
      }),
      failureMode,
    };
  }
  const h = spec.http ?? {};
  return {
    http: defined({
      host: svc.hostPort,
      path: h.path,
      redirect: h.redirect,
      body: h.body,
      allowedRequestHeaders: h.allowedRequestHeaders && [...h.allowedRequestHeaders],
      addRequestHeaders: h.addRequestHeaders && { ...h.addRequestHeaders },
      allowedResponseHeaders: h.allowedResponseHeaders && [...h.allowedResponseHeaders],
      responseMetadata: h.responseMetadata && { ...h.responseMetadata },
      timeout: spec.timeout,
    }),
    failureMode,
  };
}

type GlobalRateLimitSpec = NonNullable<NonNullable<TrafficSpec['rateLimit']>['global']>;
type RemoteRateLimit = NonNullable<TrafficPolicies['remoteRateLimit']>;

function remoteRateLimit(
  ctx: Context,
  field: string,
  spec: GlobalRateLimitSpec,
): RemoteRateLimit | undefined {
  // A missing Service keeps the user's failureMode: rate limiting is not access control, and FailOpen
  // (the default) is what they asked for when the service cannot be reached.
  const svc = serviceAddress(ctx, `${field}.backendRef`, spec.backendRef);
  if (!svc) return undefined;
  return defined({
    host: svc.hostPort,
    domain: spec.domain,
    descriptors: spec.descriptors.map((d) => ({
      entries: d.entries.map((e) => ({ key: e.name, value: e.expression })),
      type: lowerFirst(d.type),
    })),
    failureMode: lowerFirst(spec.failureMode),
    timeout: spec.timeout,
  });
}

// ---------- backend ----------

const BACKEND_HANDLED = ['tcp', 'tls', 'http'] as const;

/**
 * GwPolicy spec.backend or GwBackend spec.policies → BackendPolicies. `field` prefixes the problems
 * (default `backend`; `policies` for a GwBackend).
 */
export function backendPolicy(
  spec: BackendSpec,
  namespace: string,
  lookup: Lookup,
  field = 'backend',
): BackendPolicyResult {
  const ctx = new Context(namespace, lookup);
  const out: BackendPolicies = {};
  let failClosed = false;
  ctx.rest(field, spec, BACKEND_HANDLED);
  if (spec.tcp) {
    const ka = spec.tcp.keepalive;
    out.tcp = defined({
      keepalives: ka && { enabled: true, time: ka.time, interval: ka.interval, retries: ka.retries },
      connectTimeout: spec.tcp.connectTimeout,
    });
  }
  if (spec.http) out.http = defined({ version: spec.http.version, requestTimeout: spec.http.requestTimeout });
  if (spec.tls) {
    const tls = backendTls(ctx, `${field}.tls`, spec.tls);
    out.backendTLS = tls.policy;
    failClosed = tls.failClosed;
  }
  return { policies: out, problems: ctx.problems, failClosed };
}

type BackendTlsSpec = NonNullable<BackendSpec['tls']>;
type BackendTLS = NonNullable<BackendPolicies['backendTLS']>;

function backendTls(
  ctx: Context,
  field: string,
  spec: BackendTlsSpec,
): { policy: BackendTLS; failClosed: boolean } {
  ctx.rest(field, spec, [
    'certificateSource',
    'mtlsCertificateRef',
    'caCertificateRefs',
    'insecureSkipVerify',
    'sni',
    'verifySubjectAltNames',
    'alpnProtocols',
  ]);
  let failClosed = false;
  if (spec.certificateSource === 'SPIFFE') {
    ctx.unsupported(`${field}.certificateSource SPIFFE`);
    failClosed = true;
  }
  const out: BackendTLS = defined({
    hostname: spec.sni,
    insecure: spec.insecureSkipVerify === 'All' ? true : undefined,
    insecureHost: spec.insecureSkipVerify === 'Hostname' ? true : undefined,
    subjectAltNames: spec.verifySubjectAltNames && [...spec.verifySubjectAltNames],
    alpn: spec.alpnProtocols && [...spec.alpnProtocols],
  });
  let root: string | undefined;
  const mtls = spec.mtlsCertificateRef?.[0];
  if (mtls) {
    const mf = `${field}.mtlsCertificateRef[0]`;
    if (isSecretRef(ctx, mf, mtls)) {
      const cert = readKey(ctx, mf, 'Secret', mtls.name, 'tls.crt');
      const key = readKey(ctx, mf, 'Secret', mtls.name, 'tls.key');
      const what = (k: string) => `secret ${quote(mtls.name)} key ${quote(k)}`;
      if (
        cert !== undefined &&
        key !== undefined &&
        isPem(ctx, mf, what('tls.crt'), cert) &&
        isPem(ctx, mf, what('tls.key'), key)
      ) {
        out.cert = cert;
        out.key = key;
      } else failClosed = true;
      // ca.cert is optional, and caCertificateRefs takes priority over it
      const ca = ctx.lookup.get('Secret', ctx.namespace, mtls.name)?.data?.['ca.cert'];
      if (ca !== undefined && !spec.caCertificateRefs?.length) {
        const text = Buffer.from(ca, 'base64').toString('utf8');
        if (isPem(ctx, mf, what('ca.cert'), text)) root = text;
        else failClosed = true;
      }
    } else failClosed = true;
  }
  const caRef = spec.caCertificateRefs?.[0];
  if (caRef) {
    const cf = `${field}.caCertificateRefs[0]`;
    const text = readKey(ctx, cf, caRef.kind, caRef.name, 'ca.crt');
    if (
      text !== undefined &&
      isPem(ctx, cf, `${caRef.kind.toLowerCase()} ${quote(caRef.name)} key "ca.crt"`, text)
    )
      root = text;
    else failClosed = true;
  }
  if (root !== undefined) out.root = root;
  return { policy: out, failClosed };
}

// ---------- frontend ----------

/** GwPolicy spec.frontend → FrontendPolicies. `field` prefixes the problems (default `frontend`). */
export function frontendPolicy(
  spec: FrontendSpec,
  namespace: string,
  lookup: Lookup,
  field = 'frontend',
): PolicyResult<FrontendPolicies> {
  const ctx = new Context(namespace, lookup);
  const out: FrontendPolicies = {};
  ctx.rest(field, spec, ['networkAuthorization', 'accessLog', 'http']);
  if (spec.networkAuthorization) out.networkAuthorization = authorization(spec.networkAuthorization);
  if (spec.accessLog) {
    const al = spec.accessLog;
    const af = `${field}.accessLog`;
    ctx.rest(af, al, ['filter', 'attributes']);
    out.accessLog = defined({
      filter: al.filter,
      add:
        al.attributes?.add &&
        nameMap(
          ctx,
          `${af}.attributes.add`,
          al.attributes.add.map((a) => ({ name: a.name, value: a.expression })),
          'attribute',
        ),
      remove: al.attributes?.remove && [...al.attributes.remove],
    });
  }
  if (spec.http) {
    const hf = `${field}.http`;
    ctx.rest(hf, spec.http, ['maxBufferSize', 'http1IdleTimeout', 'http2KeepaliveInterval']);
    out.http = defined({
      maxBufferSize: spec.http.maxBufferSize,
      http1IdleTimeout: spec.http.http1IdleTimeout,
      http2KeepaliveInterval: spec.http.http2KeepaliveInterval,
    });
  }
  return { policies: out, problems: ctx.problems };
}
