// HTTPRoutes (and GRPCRoutes) → Route resources per attached listener, and the routes' parent status.
// Attachment follows Gateway API: the parentRef names a Gateway or ListenerSet (optionally a listener
// by sectionName or port), the listener must allow the route's namespace and kind, and hostnames must
// intersect. Backends are Services (reached by their cluster DNS name) or GwBackends; a reference to
// another namespace needs a ReferenceGrant there; a rule with no usable backend answers 500.
import { checkRegex, type Problem } from '@gw/api';
import type { Reason } from '@gw/api/status/reasons';
import { bad, ok } from './conditions.ts';
import { GATEWAY_GROUP, type GatewayInfo, type ListenerInfo, matchesLabels } from './gateways.ts';
import type { Grants } from './grants.ts';
import { INFERENCE_GROUP, type PoolInfo } from './inference-pools.ts';
import type { ServicePolicyLookup } from './policy/context.ts';
import { describeProblems } from './problems.ts';
import type { Condition, KubeObject, Lookup } from './types.ts';
import { GW_GROUP, olderFirst } from './types.ts';

interface ParentRef {
  group?: string;
  kind?: string;
  namespace?: string;
  name: string;
  sectionName?: string;
  port?: number;
}
interface BackendRef {
  group?: string;
  kind?: string;
  name: string;
  namespace?: string;
  port?: number;
  weight?: number;
  filters?: HttpFilter[];
}
interface StringMatch {
  type?: 'Exact' | 'RegularExpression';
  name: string;
  value: string;
}
interface HttpMatch {
  path?: { type?: 'Exact' | 'PathPrefix' | 'RegularExpression'; value?: string };
  headers?: StringMatch[];
  queryParams?: StringMatch[];
  method?: string;
}
interface HeaderFilter {
  set?: { name: string; value: string }[];
  add?: { name: string; value: string }[];
  remove?: string[];
}
interface PathModifier {
  type: 'ReplaceFullPath' | 'ReplacePrefixMatch';
  replaceFullPath?: string;
  replacePrefixMatch?: string;
}
interface HttpFilter {
  type: string;
  requestHeaderModifier?: HeaderFilter;
  responseHeaderModifier?: HeaderFilter;
  requestRedirect?: {
    scheme?: string;
    hostname?: string;
    port?: number;
    path?: PathModifier;
    statusCode?: number;
  };
  urlRewrite?: { hostname?: string; path?: PathModifier };
  requestMirror?: {
    backendRef: BackendRef;
    percent?: number;
    fraction?: { numerator: number; denominator?: number };
  };
  cors?: {
    allowOrigins?: string[];
    allowCredentials?: boolean;
    allowMethods?: string[];
    allowHeaders?: string[];
    exposeHeaders?: string[];
    /** Seconds (Gateway API default 5). */
    maxAge?: number;
  };
}
interface HttpRule {
  name?: string;
  matches?: HttpMatch[];
  filters?: HttpFilter[];
  backendRefs?: BackendRef[];
  timeouts?: { request?: string; backendRequest?: string };
  /** Gateway API's rule retry (experimental channel): retries of a request, not its attempts. */
  retry?: { codes?: number[]; attempts?: number; backoff?: string };
  sessionPersistence?: unknown;
}

export interface RouteContext {
  lookup: Lookup;
  grants: Grants;
  controllerName: string;
  clusterDomain: string;
  /** GwBackends usable as route backends: `<ns>/<name>` → problem (undefined when usable). */
  backendProblem: (ns: string, name: string) => string | undefined;
  /** Whether GwModels are read (the models flag): a rule may then route to GwModel `*`. */
  modelsEnabled?: boolean;
  /** What GwPolicies targeting a Service give route backends to one of its ports (attachment.ts). */
  servicePolicies?: ServicePolicyLookup;
  /** What a GwBackend is (static host, ai, mcp …: its target's kind); undefined when not found. */
  backendKind?: (ns: string, name: string) => string | undefined;
  /** InferencePools by `<ns>/<name>`, when the inference extension is on (inference-pools.ts). */
  inferencePools?: Map<string, PoolInfo>;
}

/** A TCPRoute or TLSRoute rule on one TCP or TLS listener: a TcpRoute resource. */
export interface AttachedTcpRule {
  gateway: string;
  route: KubeObject;
  resource: { name: string; resource: { tcpRoute: Record<string, unknown> } };
  /** GwBackends the rule uses, `<ns>/<name>`. */
  backends: string[];
}

export interface AttachedRule {
  gateway: string;
  listener: ListenerInfo;
  route: KubeObject;
  ruleIndex: number;
  resource: { name: string; resource: { route: Record<string, unknown> } };
  /** GwBackends the rule uses, `<ns>/<name>`. */
  backends: string[];
  /** The `llmModels` backends the rule uses (GwModel `*`; models.ts fills them). */
  modelBackends: string[];
  /** The InferencePools the rule names, `<ns>/<name>` (those without a usable picker too). */
  inferencePools: string[];
}

const hostOf = (h: string) => h.toLowerCase();

/** Gateway API hostname intersection: `*.example.com` matches `a.example.com` (one or more labels). */
function hostMatches(pattern: string, host: string): boolean {
  if (pattern === host) return true;
  if (pattern.startsWith('*.')) return host.endsWith(pattern.slice(1)) && host.length > pattern.length - 1;
  return false;
}
export function intersectHostnames(listener: string | undefined, route: string[]): string[] | undefined {
  if (!listener) return route;
  if (route.length === 0) return [listener];
  const out: string[] = [];
  for (const r of route.map(hostOf)) {
    if (hostMatches(listener, r)) out.push(r);
    else if (hostMatches(r, listener)) out.push(listener);
  }
  return out.length > 0 ? [...new Set(out)] : undefined;
}

/** A GRPCRoute match: the gRPC method (the request path /<service>/<method>) and headers. */
interface GrpcMatch {
  method?: { type?: 'Exact' | 'RegularExpression'; service?: string; method?: string };
  headers?: StringMatch[];
}

const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * A GRPCRoute match as a route match on the request path, /<service>/<method>: both exact, a
 * service alone (its every method), a method alone (of any service), or both as regular expressions
 * (an unset part matches any name).
 */
function grpcMatch(m: GrpcMatch): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const { type = 'Exact', service, method } = m.method ?? {};
  if (type === 'RegularExpression') out['path'] = { regex: `/${service ?? '[^/]+'}/${method ?? '[^/]+'}` };
  else if (service && method) out['path'] = { exact: `/${service}/${method}` };
  else if (service) out['path'] = { pathPrefix: `/${service}/` };
  else if (method) out['path'] = { regex: `/[^/]+/${escapeRegex(method)}` };
  else out['path'] = { pathPrefix: '/' };
  const headers = headerMatches(m.headers);
  if (headers) out['headers'] = headers;
  return out;
}

function headerMatches(list: StringMatch[] | undefined): Record<string, unknown>[] | undefined {
  if (!list?.length) return undefined;
  return list.map((h) => ({
    name: h.name,
    value: h.type === 'RegularExpression' ? { regex: h.value } : { exact: h.value },
  }));
}

function routeMatch(m: HttpMatch): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const p = m.path ?? { type: 'PathPrefix', value: '/' };
  const value = p.value ?? '/';
  if (p.type === 'Exact') out['path'] = { exact: value };
  else if (p.type === 'RegularExpression') out['path'] = { regex: value };
  else out['path'] = { pathPrefix: value };
  if (m.method) out['method'] = m.method;
  const headers = headerMatches(m.headers);
  if (headers) out['headers'] = headers;
  const query = headerMatches(m.queryParams);
  if (query) out['query'] = query;
  return out;
}

/** Gateway API's CORS filter as the cors policy (maxAge in seconds, 5 by default, as a duration). */
function corsPolicy(c: NonNullable<HttpFilter['cors']>): Record<string, unknown> {
  return {
    ...(c.allowOrigins?.length ? { allowOrigins: c.allowOrigins } : {}),
    ...(c.allowCredentials !== undefined ? { allowCredentials: c.allowCredentials } : {}),
    ...(c.allowMethods?.length ? { allowMethods: c.allowMethods } : {}),
    ...(c.allowHeaders?.length ? { allowHeaders: c.allowHeaders } : {}),
    ...(c.exposeHeaders?.length ? { exposeHeaders: c.exposeHeaders } : {}),
    maxAge: `${c.maxAge ?? 5}s`,
  };
}

/**
 * A backendRef's own filters as the route backend's policies (header changes on the requests sent
 * to it and on its answers); the others, which gw does not run per backend, are named.
 */
function backendFilters(filters: HttpFilter[] | undefined): {
  policies: Record<string, unknown>;
  unsupported: string[];
} {
  const policies: Record<string, unknown> = {};
  const unsupported: string[] = [];
  for (const f of filters ?? []) {
    if (f.type === 'RequestHeaderModifier' && f.requestHeaderModifier)
      policies['requestHeaderModifier'] = headerModifier(f.requestHeaderModifier);
    else if (f.type === 'ResponseHeaderModifier' && f.responseHeaderModifier)
      policies['responseHeaderModifier'] = headerModifier(f.responseHeaderModifier);
    else unsupported.push(`${f.type} on a backendRef`);
  }
  return { policies, unsupported };
}

function headerModifier(f: HeaderFilter): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (f.set?.length) out['set'] = Object.fromEntries(f.set.map((h) => [h.name, h.value]));
  if (f.add?.length) out['add'] = Object.fromEntries(f.add.map((h) => [h.name, h.value]));
  if (f.remove?.length) out['remove'] = f.remove;
  return out;
}

function pathRewrite(p: PathModifier | undefined): Record<string, unknown> | undefined {
  if (!p) return undefined;
  if (p.type === 'ReplaceFullPath') return { full: p.replaceFullPath ?? '/' };
  return { prefix: p.replacePrefixMatch ?? '/' };
}

/** Regular expressions of a rule's matches that the proxy's engine refuses, at their CRD paths. */
function matchProblems(rule: HttpRule, ri: number): Problem[] {
  const out: Problem[] = [];
  (rule.matches ?? []).forEach((m, mi) => {
    const mp = ['spec', 'rules', ri, 'matches', mi];
    if (m.path?.type === 'RegularExpression')
      out.push(...checkRegex(m.path.value ?? '/', [...mp, 'path', 'value']));
    // a GRPCRoute's method match (grpcMatch)
    const g = (m as GrpcMatch).method;
    if (g?.type === 'RegularExpression')
      for (const part of ['service', 'method'] as const) {
        const v = g[part];
        if (v !== undefined) out.push(...checkRegex(v, [...mp, 'method', part]));
      }
    m.headers?.forEach((h, hi) => {
      if (h.type === 'RegularExpression') out.push(...checkRegex(h.value, [...mp, 'headers', hi, 'value']));
    });
    m.queryParams?.forEach((q, qi) => {
      if (q.type === 'RegularExpression')
        out.push(...checkRegex(q.value, [...mp, 'queryParams', qi, 'value']));
    });
  });
  return out;
}

/** A rule's filters and timeouts as standalone TrafficPolicies; unsupported filters are named. */
function rulePolicies(rule: HttpRule): { policies: Record<string, unknown>; unsupported: string[] } {
  const policies: Record<string, unknown> = {};
  const unsupported: string[] = [];
  let mirrors = 0;
  for (const f of rule.filters ?? []) {
    switch (f.type) {
      case 'RequestHeaderModifier':
        if (f.requestHeaderModifier)
          policies['requestHeaderModifier'] = headerModifier(f.requestHeaderModifier);
        break;
      case 'ResponseHeaderModifier':
        if (f.responseHeaderModifier)
          policies['responseHeaderModifier'] = headerModifier(f.responseHeaderModifier);
        break;
      case 'RequestRedirect': {
        const r = f.requestRedirect ?? {};
        const redirect: Record<string, unknown> = {};
        if (r.scheme) redirect['scheme'] = r.scheme;
        if (r.hostname && r.port) redirect['authority'] = { full: `${r.hostname}:${r.port}` };
        else if (r.hostname) redirect['authority'] = { host: r.hostname };
        else if (r.port) redirect['authority'] = { port: r.port };
        const path = pathRewrite(r.path);
        if (path) redirect['path'] = path;
        if (r.statusCode) redirect['status'] = r.statusCode;
        policies['requestRedirect'] = redirect;
        break;
      }
      case 'URLRewrite': {
        const r = f.urlRewrite ?? {};
        const rewrite: Record<string, unknown> = {};
        if (r.hostname) rewrite['authority'] = { host: r.hostname };
        const path = pathRewrite(r.path);
        if (path) rewrite['path'] = path;
        policies['urlRewrite'] = rewrite;
        break;
      }
      case 'RequestMirror':
        // resolved with the backends (resolveMirror); the proxy mirrors to one backend per rule
        if (++mirrors === 2) unsupported.push('RequestMirror (more than one in a rule)');
        break;
      case 'CORS':
        if (f.cors) policies['cors'] = corsPolicy(f.cors);
        break;
      default:
        unsupported.push(f.type);
    }
  }
  // attempts counts retries in both; a connection that fails or is reset is retried as well
  if (rule.retry && rule.retry.attempts !== 0)
    policies['retry'] = {
      codes: rule.retry.codes ?? [],
      ...(rule.retry.attempts !== undefined ? { attempts: rule.retry.attempts } : {}),
      ...(rule.retry.backoff ? { backoff: rule.retry.backoff } : {}),
    };
  if (rule.sessionPersistence) unsupported.push('sessionPersistence');
  if (rule.timeouts?.request || rule.timeouts?.backendRequest) {
    policies['timeout'] = {
      ...(rule.timeouts.request ? { requestTimeout: rule.timeouts.request } : {}),
      ...(rule.timeouts.backendRequest ? { backendRequestTimeout: rule.timeouts.backendRequest } : {}),
    };
  }
  return { policies, unsupported };
}

/** The `llmModels` backend an HTTPRoute rule with a GwModel `*` backendRef routes to (models.ts). */
export const routeModelsBackend = (ns: string, route: string, rule: number) =>
  `models:${ns}/httproute/${route}/${rule}`;

interface ResolvedBackends {
  backends: Record<string, unknown>[];
  /** backendRef filters gw does not run per backend (Accepted False, UnsupportedValue). */
  unsupportedFilters: string[];
  /** The rule's RequestMirror filter as the requestMirror policy. */
  mirror?: Record<string, unknown>;
  gwBackends: string[];
  modelBackends: string[];
  inferencePools: string[];
  problem?: Condition;
}

/**
 * The HTTP version a route calls a Service port with when no policy says: HTTP/2 for a GRPCRoute (gRPC
 * is HTTP/2) and for a port whose appProtocol says so (Gateway API's `kubernetes.io/h2c`; `h2c`,
 * `http2` and `grpc` as Istio names them): h2c in plain text, h2 by ALPN over TLS. Else HTTP/1.1.
 */
export function inferredHttpVersion(routeKind: string, appProtocol: string | undefined): 'HTTP2' | undefined {
  if (routeKind === 'GRPCRoute') return 'HTTP2';
  if (routeKind !== 'HTTPRoute' || appProtocol === undefined) return undefined;
  return H2_APP_PROTOCOLS.has(appProtocol.toLowerCase()) ? 'HTTP2' : undefined;
}
const H2_APP_PROTOCOLS = new Set(['kubernetes.io/h2c', 'h2c', 'http2', 'grpc']);

/**
 * A Service port serving an A2A agent: appProtocol gw.dev/a2a, or agentgateway's and kgateway's
 * spelling (agentgateway.dev/a2a, kgateway.dev/a2a), which agent platforms such as kagent set. A
 * route to it is an A2A backend, as a GwBackend's spec.a2a is.
 */
export function isA2aAppProtocol(appProtocol: string | undefined): boolean {
  return appProtocol !== undefined && A2A_APP_PROTOCOLS.has(appProtocol.toLowerCase());
}
const A2A_APP_PROTOCOLS = new Set(['gw.dev/a2a', 'agentgateway.dev/a2a', 'kgateway.dev/a2a']);

function resolveBackends(route: KubeObject, rule: HttpRule, ri: number, ctx: RouteContext): ResolvedBackends {
  const ns = route.metadata.namespace ?? 'default';
  const gen = route.metadata.generation;
  const out: ResolvedBackends = {
    backends: [],
    unsupportedFilters: [],
    gwBackends: [],
    modelBackends: [],
    inferencePools: [],
  };
  for (const ref of rule.backendRefs ?? []) {
    const group = ref.group ?? '';
    const kind = ref.kind ?? 'Service';
    const refNs = ref.namespace ?? ns;
    const weight = ref.weight ?? 1;
    if (weight === 0) continue;
    // Gateway API: the share of requests an invalid backendRef would have had is answered 500, so it
    // stays in the rule as an invalid backend of its weight
    const fail = (reason: Reason<'ResolvedRefs'>, message: string) => {
      out.problem ??= bad('ResolvedRefs', reason, message, gen);
      out.backends.push({ weight, invalid: {} });
    };
    const own = backendFilters(ref.filters);
    out.unsupportedFilters.push(...own.unsupported);
    if (refNs !== ns && !ctx.grants(route.kind, ns, kind, refNs, ref.name)) {
      fail(
        'RefNotPermitted',
        `no ReferenceGrant in namespace ${refNs} allows backendRef ${kind} ${ref.name}`,
      );
      continue;
    }
    if (group === '' && kind === 'Service') {
      const svc = ctx.lookup.get('Service', refNs, ref.name);
      if (!svc) {
        fail('BackendNotFound', `service ${refNs}/${ref.name} not found`);
        continue;
      }
      const ports = (svc.spec as { ports?: { port: number; appProtocol?: string }[] })?.ports ?? [];
      const port = ports.find((p) => p.port === ref.port);
      if (ref.port === undefined || !port) {
        fail('BackendNotFound', `service ${refNs}/${ref.name} has no port ${ref.port ?? '(none given)'}`);
        continue;
      }
      const attached = ctx.servicePolicies?.(refNs, ref.name, ref.port);
      if (attached?.problem) {
        fail('BackendNotFound', `service ${refNs}/${ref.name} is not usable: ${attached.problem}`);
        continue;
      }
      // each backend its own copy: the routes' resources are written out one by one; the ref's
      // own filters win a field a GwPolicy on the Service also sets
      const policies = { ...structuredClone(attached?.policies ?? {}), ...own.policies };
      const version = inferredHttpVersion(route.kind, port.appProtocol);
      const http = policies.http as Record<string, unknown> | undefined;
      if (version && http?.version === undefined) policies.http = { ...http, version };
      // an A2A agent's port (kagent and agentgateway's users mark it so): its cards point at the gateway
      if (isA2aAppProtocol(port.appProtocol) && policies.a2a === undefined) policies.a2a = {};
      out.backends.push({
        weight,
        host: { host: `${ref.name}.${refNs}.svc.${ctx.clusterDomain}`, port: ref.port },
        ...(Object.keys(policies).length > 0 ? { policies } : {}),
      });
    } else if (group === GW_GROUP && kind === 'GwBackend') {
      const problem = ctx.backendProblem(refNs, ref.name);
      if (problem) {
        fail('BackendNotFound', problem);
        continue;
      }
      out.backends.push({
        weight,
        backend: `${refNs}/${ref.name}`,
        ...(Object.keys(own.policies).length > 0 ? { policies: own.policies } : {}),
      });
      out.gwBackends.push(`${refNs}/${ref.name}`);
    } else if (group === GW_GROUP && kind === 'GwModel' && ctx.modelsEnabled) {
      // the models attached to this rule (GwModel parentRef HTTPRoute) serve it
      if (ref.name !== '*' || refNs !== ns) {
        fail(
          'InvalidKind',
          `a GwModel backendRef must be named * and in the route's namespace (got ${ref.name})`,
        );
        continue;
      }
      const name = routeModelsBackend(ns, route.metadata.name, ri);
      out.backends.push({
        weight,
        backend: name,
        ...(Object.keys(own.policies).length > 0 ? { policies: own.policies } : {}),
      });
      out.modelBackends.push(name);
    } else if (group === INFERENCE_GROUP && kind === 'InferencePool' && ctx.inferencePools) {
      const key = `${refNs}/${ref.name}`;
      const pool = ctx.inferencePools.get(key);
      if (!pool) {
        fail('BackendNotFound', `InferencePool ${key} not found`);
        continue;
      }
      // named, usable or not: the pool's status says whether its picker resolved
      out.inferencePools.push(key);
      if (!pool.resource) {
        fail('BackendNotFound', `InferencePool ${key} is not usable: ${pool.resolved.message}`);
        continue;
      }
      out.backends.push({
        weight,
        inferencePool: key,
        ...(Object.keys(own.policies).length > 0 ? { policies: own.policies } : {}),
      });
    } else {
      const known = [
        'Service',
        'gw.dev/GwBackend',
        ...(ctx.modelsEnabled ? ['gw.dev/GwModel'] : []),
        ...(ctx.inferencePools ? [`${INFERENCE_GROUP}/InferencePool`] : []),
      ];
      const hint =
        group === INFERENCE_GROUP && kind === 'InferencePool'
          ? '; InferencePools need the controller flag --enable-inference-extension (chart value inferenceExtension.enabled)'
          : '';
      fail(
        'InvalidKind',
        `backendRef kind ${group ? `${group}/` : ''}${kind} is not supported (${known.join(', ')})${hint}`,
      );
    }
  }
  const mirror = rule.filters?.find((f) => f.type === 'RequestMirror')?.requestMirror;
  if (mirror) {
    const m = resolveMirror(route, mirror, ctx);
    if ('problem' in m) out.problem ??= bad('ResolvedRefs', m.problem[0], m.problem[1], gen);
    else out.mirror = m.policy;
  }
  return out;
}

/**
 * A RequestMirror filter's Service as the requestMirror policy (percent, or fraction, of requests;
 * all when neither is set), or why it cannot be used.
 */
function resolveMirror(
  route: KubeObject,
  f: NonNullable<HttpFilter['requestMirror']>,
  ctx: RouteContext,
): { policy: Record<string, unknown> } | { problem: [Reason<'ResolvedRefs'>, string] } {
  const ref = f.backendRef;
  const ns = route.metadata.namespace ?? 'default';
  const group = ref.group ?? '';
  const kind = ref.kind ?? 'Service';
  const refNs = ref.namespace ?? ns;
  if (group !== '' || kind !== 'Service')
    return {
      problem: [
        'InvalidKind',
        `RequestMirror backendRef kind ${group ? `${group}/` : ''}${kind} is not supported (Service)`,
      ],
    };
  if (refNs !== ns && !ctx.grants(route.kind, ns, kind, refNs, ref.name))
    return {
      problem: [
        'RefNotPermitted',
        `no ReferenceGrant in namespace ${refNs} allows RequestMirror backendRef ${kind} ${ref.name}`,
      ],
    };
  const svc = ctx.lookup.get('Service', refNs, ref.name);
  if (!svc) return { problem: ['BackendNotFound', `RequestMirror service ${refNs}/${ref.name} not found`] };
  const ports = ((svc.spec as { ports?: { port: number }[] })?.ports ?? []).map((p) => p.port);
  if (ref.port === undefined || !ports.includes(ref.port))
    return {
      problem: [
        'BackendNotFound',
        `RequestMirror service ${refNs}/${ref.name} has no port ${ref.port ?? '(none given)'}`,
      ],
    };
  let percentage = 1;
  if (f.percent !== undefined) percentage = f.percent / 100;
  else if (f.fraction) {
    const d = f.fraction.denominator ?? 100;
    percentage = d > 0 ? Math.min(1, f.fraction.numerator / d) : 0;
  }
  return {
    policy: { backend: { host: `${ref.name}.${refNs}.svc.${ctx.clusterDomain}:${ref.port}` }, percentage },
  };
}

function allowsRoute(l: ListenerInfo, route: KubeObject, lookup: Lookup): boolean {
  if (!l.allowedRoutes.kinds.includes(route.kind)) return false;
  const ns = route.metadata.namespace ?? 'default';
  if (l.allowedRoutes.from === 'All') return true;
  if (l.allowedRoutes.from === 'Same') return ns === l.owner.namespace;
  return matchesLabels(lookup.get('Namespace', '', ns)?.metadata.labels, l.allowedRoutes.selector);
}

export interface RouteResult {
  rules: AttachedRule[];
  /** TCPRoute and TLSRoute rules (translateTcpRoutes). */
  tcpRules: AttachedTcpRule[];
  statuses: { kind: string; namespace: string; name: string; status: Record<string, unknown> }[];
  /**
   * Each Gateway of ours with an HTTPRoute (or GRPCRoute) naming an InferencePool, usable or not, and
   * whether it accepted the route: the pool's status parents.
   */
  poolParents: { pool: string; gateway: string; accepted: boolean }[];
}

/** Routes of `kinds`, oldest first (creationTimestamp, then namespace/name): Gateway API's tie-break. */
function routesByAge(objects: KubeObject[], kinds: readonly string[]): KubeObject[] {
  return objects.filter((o) => kinds.includes(o.kind)).sort(olderFirst);
}

interface ParentOutcome {
  parentRef: Record<string, unknown>;
  /** The Gateway it is, or whose ListenerSet it is: `<ns>/<name>`. */
  gateway: string;
  /** The listeners the route attaches to, each with the hostnames it takes there. */
  hosted: { l: ListenerInfo; hostnames: string[] }[];
  /** Why the route cannot attach to this parent (Accepted False); undefined when it can. */
  refused?: Condition;
}

/**
 * One parentRef of a route: the Gateway or ListenerSet it names (undefined when that is not ours:
 * another controller writes that status), and the listeners the route attaches to there, by
 * sectionName and port, readiness, allowed namespaces and kinds, and hostnames.
 */
function resolveParent(
  route: KubeObject,
  ref: ParentRef,
  hostnames: string[],
  gateways: GatewayInfo[],
  byKey: Map<string, GatewayInfo>,
  lookup: Lookup,
): ParentOutcome | undefined {
  const ns = route.metadata.namespace ?? 'default';
  const gen = route.metadata.generation;
  const group = ref.group ?? GATEWAY_GROUP;
  const kind = ref.kind ?? 'Gateway';
  const pns = ref.namespace ?? ns;
  let gateway: GatewayInfo | undefined;
  let candidates: ListenerInfo[] = [];
  if (group === GATEWAY_GROUP && kind === 'Gateway') {
    gateway = byKey.get(`${pns}/${ref.name}`);
    if (gateway) candidates = gateway.listeners;
  } else if (group === GATEWAY_GROUP && kind === 'ListenerSet') {
    for (const g of gateways) {
      const set = g.listenerSets.find(
        (s) => s.object.metadata.name === ref.name && (s.object.metadata.namespace ?? 'default') === pns,
      );
      if (set) {
        gateway = g;
        candidates = set.listeners;
      }
    }
  }
  if (!gateway) return undefined;
  const parentRef = {
    group,
    kind,
    namespace: pns,
    name: ref.name,
    ...(ref.sectionName ? { sectionName: ref.sectionName } : {}),
    ...(ref.port ? { port: ref.port } : {}),
  };
  const named = candidates.filter(
    (l) => (!ref.sectionName || l.name === ref.sectionName) && (!ref.port || l.port === ref.port),
  );
  const ready = named.filter((l) => l.ready);
  const ofKind = ready.filter((l) => l.allowedRoutes.kinds.includes(route.kind));
  const allowed = ofKind.filter((l) => allowsRoute(l, route, lookup));
  const hosted = allowed
    .map((l) => ({ l, hostnames: intersectHostnames(l.hostname, hostnames) }))
    .filter((x): x is { l: ListenerInfo; hostnames: string[] } => x.hostnames !== undefined);
  let refused: Condition | undefined;
  if (named.length === 0)
    refused = bad(
      'Accepted',
      'NoMatchingParent',
      `no listener matches ${ref.sectionName ? `sectionName ${ref.sectionName}` : `port ${ref.port}`}`,
      gen,
    );
  else if (ready.length === 0)
    refused = bad('Accepted', 'NoMatchingParent', 'the matching listeners are not programmed', gen);
  else if (ofKind.length === 0)
    refused = bad(
      'Accepted',
      'NotAllowedByListeners',
      `no listener takes ${route.kind}s (${ready.map((l) => `${l.name}: ${l.allowedRoutes.kinds.join(', ') || 'none'}`).join('; ')})`,
      gen,
    );
  else if (allowed.length === 0)
    refused = bad(
      'Accepted',
      'NotAllowedByListeners',
      `no listener allows ${route.kind}s from namespace ${ns}`,
      gen,
    );
  else if (hosted.length === 0)
    refused = bad(
      'Accepted',
      'NoMatchingListenerHostname',
      'no hostname of the route matches a listener hostname',
      gen,
    );
  return { parentRef, gateway: gateway.key, hosted, ...(refused ? { refused } : {}) };
}

/** Whether `route` has a backendRef (or a mirror's) to Service `namespace/name`. */
export function routeUsesService(route: KubeObject, namespace: string, name: string): boolean {
  const ns = route.metadata.namespace ?? 'default';
  const rules = (route.spec as { rules?: HttpRule[] } | undefined)?.rules ?? [];
  const refs = rules.flatMap((r) => [
    ...(r.backendRefs ?? []),
    ...(r.filters ?? []).flatMap((f) => (f.requestMirror ? [f.requestMirror.backendRef] : [])),
  ]);
  return refs.some(
    (b) =>
      (b.group ?? '') === '' &&
      (b.kind ?? 'Service') === 'Service' &&
      b.name === name &&
      (b.namespace ?? ns) === namespace,
  );
}

/** What names a route rule's resource on a listener: port, listener, the route, the rule's name. */
function ruleKeys(l: ListenerInfo, route: KubeObject, ruleName: string | undefined): Record<string, unknown> {
  return {
    port: l.port,
    listener: `${l.gateway}/${l.name}`,
    namespace: route.metadata.namespace ?? 'default',
    name: route.metadata.name,
    ...(ruleName ? { ruleName } : {}),
  };
}

export function translateRoutes(
  objects: KubeObject[],
  gateways: GatewayInfo[],
  ctx: RouteContext,
): RouteResult {
  const result: RouteResult = { rules: [], tcpRules: [], statuses: [], poolParents: [] };
  const routes = routesByAge(objects, ['HTTPRoute', 'GRPCRoute']);
  const byKey = new Map(gateways.map((g) => [g.key, g]));
  for (const [age, route] of routes.entries()) {
    const ns = route.metadata.namespace ?? 'default';
    const gen = route.metadata.generation;
    const spec = route.spec as { parentRefs?: ParentRef[]; hostnames?: string[]; rules?: HttpRule[] };
    const parents: Record<string, unknown>[] = [];
    const rules = spec.rules ?? [];
    // backends and filters are the same for every parent: resolve once
    const resolved = rules.map((r, ri) => resolveBackends(route, r, ri, ctx));
    const filters = rules.map((r) => rulePolicies(r));
    const invalid = rules.flatMap((r, ri) => matchProblems(r, ri));
    for (const ref of spec.parentRefs ?? []) {
      const parent = resolveParent(route, ref, spec.hostnames ?? [], gateways, byKey, ctx.lookup);
      if (!parent) continue; // not a parent of ours: another controller writes that status
      const { parentRef, hosted } = parent;
      const conditions: Condition[] = [];
      if (parent.refused) {
        conditions.push(parent.refused);
      } else if (invalid.length > 0) {
        conditions.push(bad('Accepted', 'UnsupportedValue', describeProblems(invalid), gen));
      } else {
        const unsupported = [
          ...new Set([
            ...filters.flatMap((f) => f.unsupported),
            ...resolved.flatMap((r) => r.unsupportedFilters),
          ]),
        ];
        conditions.push(
          unsupported.length > 0
            ? bad('Accepted', 'UnsupportedValue', `not supported: ${unsupported.join(', ')}`, gen)
            : ok('Accepted', 'Accepted', 'attached', gen),
        );
      }
      const problem = resolved.find((r) => r.problem)?.problem;
      conditions.push(problem ?? ok('ResolvedRefs', 'ResolvedRefs', 'all references resolved', gen));
      parents.push({ parentRef, controllerName: ctx.controllerName, conditions });
      const accepted = conditions[0]?.status === 'True';
      for (const pool of new Set(resolved.flatMap((r) => r.inferencePools)))
        result.poolParents.push({ pool, gateway: parent.gateway, accepted });
      if (!accepted) continue;
      for (const { l, hostnames } of hosted) {
        l.attachedRoutes++;
        rules.forEach((rule, ri) => {
          const r = resolved[ri] as ResolvedBackends;
          const policies = { ...(filters[ri]?.policies ?? {}) };
          if (r.mirror) policies['requestMirror'] = r.mirror;
          // Gateway API: a rule whose backends cannot be used answers 500
          const usable = r.backends.some((b) => !('invalid' in b));
          if (!usable) policies['directResponse'] = { status: 500, body: 'no usable backend' };
          const name = `route/${l.port}/${l.name}/${ns}/${route.metadata.name}/${ri}`;
          const body: Record<string, unknown> = {
            ...ruleKeys(l, route, rule.name),
            ...(hostnames.length > 0 ? { hostnames } : {}),
            matches:
              route.kind === 'GRPCRoute'
                ? ((rule.matches as GrpcMatch[] | undefined)?.length
                    ? (rule.matches as GrpcMatch[])
                    : [{}]
                  ).map(grpcMatch)
                : (rule.matches?.length ? rule.matches : [{}]).map(routeMatch),
            ...(Object.keys(policies).length > 0 ? { policies } : {}),
            ...(usable ? { backends: r.backends } : {}),
            // the oldest route wins ties between equally specific matches (routes are sorted by age)
            precedence: age + 1,
          };
          result.rules.push({
            gateway: l.gateway,
            listener: l,
            route,
            ruleIndex: ri,
            resource: { name, resource: { route: body } },
            backends: r.gwBackends,
            modelBackends: r.modelBackends,
            inferencePools: r.inferencePools,
          });
        });
      }
    }
    if (parents.length > 0) {
      result.statuses.push({
        kind: route.kind,
        namespace: ns,
        name: route.metadata.name,
        status: { parents },
      });
    }
  }
  return result;
}

interface TcpRule {
  name?: string;
  backendRefs?: BackendRef[];
}

/**
 * A TCPRoute or TLSRoute rule's backends: Services (their cluster DNS names) or static host
 * GwBackends, weighted. A connection carries no HTTP, so a Service's GwPolicies give it their
 * backendTLS only, and a GwBackend of another kind (ai, mcp …) or a GwModel is refused by name.
 */
function resolveTcpBackends(
  route: KubeObject,
  rule: TcpRule,
  ri: number,
  ctx: RouteContext,
): ResolvedBackends {
  const out = resolveBackends(route, { backendRefs: rule.backendRefs ?? [] }, ri, ctx);
  const gen = route.metadata.generation;
  const refused = (message: string) => {
    out.problem ??= bad('ResolvedRefs', 'InvalidKind', message, gen);
  };
  if (out.modelBackends.length > 0) refused(`a ${route.kind} cannot send to GwModels`);
  if (out.inferencePools.length > 0) refused(`a ${route.kind} cannot send to InferencePools`);
  const notHost = out.gwBackends.filter((key) => {
    const [ns, name] = key.split('/') as [string, string];
    return ctx.backendKind?.(ns, name) !== 'host';
  });
  for (const key of notHost)
    refused(
      `GwBackend ${key} is not a static host backend (a ${route.kind} takes Services and static GwBackends)`,
    );
  const dropped = new Set([...notHost, ...out.modelBackends]);
  // an invalid ref's share is not kept here: a TCP route's backends are only the usable ones
  out.backends = out.backends
    .filter(
      (b) =>
        !(typeof b.backend === 'string' && dropped.has(b.backend)) &&
        b.inferencePool === undefined &&
        !('invalid' in b),
    )
    .map((b) => {
      const tls = (b.policies as { backendTLS?: unknown } | undefined)?.backendTLS;
      const { policies: _p, ...rest } = b;
      return tls ? { ...rest, policies: { backendTLS: tls } } : rest;
    });
  out.gwBackends = out.gwBackends.filter((k) => !dropped.has(k));
  out.modelBackends = [];
  out.inferencePools = [];
  return out;
}

/**
 * TCPRoutes (on TCP listeners) and TLSRoutes (on TLS listeners, by SNI: their hostnames intersected
 * with the listener's) → one TcpRoute resource per rule and attached listener, and the routes'
 * parent status; appended to `result`. Attachment is HTTPRoute's (resolveParent). A rule without a
 * usable backend closes its connections.
 */
export function translateTcpRoutes(
  objects: KubeObject[],
  gateways: GatewayInfo[],
  ctx: RouteContext,
  result: RouteResult,
): void {
  const byKey = new Map(gateways.map((g) => [g.key, g]));
  for (const [age, route] of routesByAge(objects, ['TCPRoute', 'TLSRoute']).entries()) {
    const ns = route.metadata.namespace ?? 'default';
    const gen = route.metadata.generation;
    const spec = route.spec as { parentRefs?: ParentRef[]; hostnames?: string[]; rules?: TcpRule[] };
    const rules = spec.rules ?? [];
    const resolved = rules.map((r, ri) => resolveTcpBackends(route, r, ri, ctx));
    const hostnames = route.kind === 'TLSRoute' ? (spec.hostnames ?? []) : [];
    const parents: Record<string, unknown>[] = [];
    for (const ref of spec.parentRefs ?? []) {
      const parent = resolveParent(route, ref, hostnames, gateways, byKey, ctx.lookup);
      if (!parent) continue;
      const problem = resolved.find((r) => r.problem)?.problem;
      const conditions: Condition[] = [
        parent.refused ?? ok('Accepted', 'Accepted', 'attached', gen),
        problem ?? ok('ResolvedRefs', 'ResolvedRefs', 'all references resolved', gen),
      ];
      parents.push({ parentRef: parent.parentRef, controllerName: ctx.controllerName, conditions });
      if (parent.refused) continue;
      for (const { l, hostnames: names } of parent.hosted) {
        l.attachedRoutes++;
        rules.forEach((rule, ri) => {
          const r = resolved[ri] as ResolvedBackends;
          // passthrough: the client's own TLS goes to the backend, so the gateway originates none
          // (a BackendTLSPolicy or GwPolicy tls on the Service is for connections it makes itself)
          const backends =
            l.tlsMode === 'Passthrough' ? r.backends.map(({ policies: _p, ...b }) => b) : r.backends;
          const body: Record<string, unknown> = {
            ...ruleKeys(l, route, rule.name),
            // SNI on a TLS listener; a TCP listener matches no name
            ...(l.protocol === 'TLS' && names.length > 0 ? { hostnames: names } : {}),
            ...(backends.length > 0 ? { backends } : {}),
            precedence: age + 1,
          };
          result.tcpRules.push({
            gateway: l.gateway,
            route,
            resource: {
              name: `tcproute/${l.port}/${l.name}/${ns}/${route.metadata.name}/${ri}`,
              resource: { tcpRoute: body },
            },
            backends: r.gwBackends,
          });
        });
      }
    }
    if (parents.length > 0)
      result.statuses.push({
        kind: route.kind,
        namespace: ns,
        name: route.metadata.name,
        status: { parents },
      });
  }
}
