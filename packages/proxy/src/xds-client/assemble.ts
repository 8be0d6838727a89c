// Turns a Gateway's xDS resources (gw.resource.v1.Resource) into the standalone config document, so
// they are checked and built by the same loader as a `gw -f` file. Every part of the document
// remembers the resource it came from, and config issues name that resource.
import { toJson } from '@bufbuild/protobuf';
import { ListValueSchema } from '@bufbuild/protobuf/wkt';
import type { FieldPath } from '@gw/api';
import { hostPort as formatHostPort } from '@gw/api/runtime';
import type {
  Backend,
  HostPort,
  InferencePool,
  Mcp,
  Policy,
  Resource,
  Route,
  RouteBackend,
  TcpRoute,
} from '@gw/xds-proto/gw/resource/v1/resource';
import type { Origin } from '../config/load.ts';

export interface Assembled {
  /** The standalone config document (ConfigFile shape, unchecked). */
  data: Record<string, unknown>;
  /** Maps a document path to the resource and the field inside it. */
  origin: Origin;
  /** Problems no schema can see: a route for a listener that is not there, a target missing. */
  problems: { resource: string; path: FieldPath; message: string }[];
}

interface Mapping {
  prefix: FieldPath;
  resource: string;
  /** What the prefix is called inside the resource. */
  as: FieldPath;
}

type Json = Record<string, unknown>;

/**
 * `resources` maps resource name → decoded Resource. Binds are ordered by port, routes by port,
 * listener, precedence (oldest route first: the proxy breaks ties in that order), namespace, name and
 * rule index, policies and backends by name, so equal sets give equal
 * documents (and equal IR versions) whatever order they arrived in.
 */
export function assembleConfig(resources: ReadonlyMap<string, Resource>): Assembled {
  const mappings: Mapping[] = [];
  const problems: Assembled['problems'] = [];
  const byName = [...resources].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

  const binds: Json[] = [];
  const listenerAt = new Map<string, { bi: number; li: number; routes: Json[]; tcp: boolean }>();
  const bindResources = byName.filter(([, r]) => r.kind.case === 'bind');
  bindResources.sort(([, a], [, b]) => portOf(a) - portOf(b));
  for (const [name, r] of bindResources) {
    if (r.kind.case !== 'bind') continue;
    const b = r.kind.value;
    const bi = binds.length;
    mappings.push({ prefix: ['binds', bi], resource: name, as: [] });
    const listeners = b.listeners.map((l, li) => {
      const routes: Json[] = [];
      // The builder names a listener <gateway>/<name>: give it the last segment of the full name.
      const short =
        l.gateway && l.name.startsWith(`${l.gateway}/`) ? l.name.slice(l.gateway.length + 1) : l.name;
      // TCP and TLS listeners take tcpRoutes (TcpRoute resources), the others routes
      const tcp = l.protocol === 'TCP' || l.protocol === 'TLS';
      const out: Json = tcp ? { name: short, tcpRoutes: routes } : { name: short, routes };
      if (l.gateway) out.gatewayName = l.gateway;
      if (l.hostname) out.hostname = l.hostname;
      if (l.protocol) out.protocol = l.protocol;
      if (l.tls) out.tls = { cert: l.tls.certPem, key: l.tls.keyPem };
      const key = `${b.port}\0${l.name}`;
      if (listenerAt.has(key)) {
        problems.push({
          resource: name,
          path: ['listeners', li],
          message: `listener ${l.name} is defined twice on port ${b.port}`,
        });
      } else listenerAt.set(key, { bi, li, routes, tcp });
      return out;
    });
    binds.push({ port: b.port, listeners });
  }

  // InferencePools first: the route backends that name one become `service` backends of it
  const services: Json[] = [];
  const workloads: Json[] = [];
  const pools = new Map<string, PoolBackend>();
  for (const [name, r] of byName) {
    if (r.kind.case !== 'inferencePool') continue;
    const p = inferencePool(r.kind.value, name, problems);
    if (!p) continue;
    mappings.push({ prefix: ['services', services.length], resource: name, as: [] });
    services.push(p.service);
    for (const { workload, endpoint } of p.workloads) {
      mappings.push({ prefix: ['workloads', workloads.length], resource: name, as: ['endpoints', endpoint] });
      workloads.push(workload);
    }
    pools.set(r.kind.value.name, p.backend);
  }

  const routes = byName.filter(([, r]) => r.kind.case === 'route') as [
    string,
    Resource & { kind: { case: 'route'; value: Route } },
  ][];
  routes.sort(([an, a], [bn, b]) => compareRoutes(an, a.kind.value, bn, b.kind.value));
  for (const [name, r] of routes) {
    const rt = r.kind.value;
    const at = listenerAt.get(`${rt.port}\0${rt.listener}`);
    if (at?.tcp) {
      problems.push({
        resource: name,
        path: ['listener'],
        message: `listener ${JSON.stringify(rt.listener)} on port ${rt.port} takes TCP routes, not HTTP routes`,
      });
      continue;
    }
    if (!at) {
      problems.push({
        resource: name,
        path: ['listener'],
        message: `no listener ${JSON.stringify(rt.listener)} on port ${rt.port}`,
      });
      continue;
    }
    const out = routeEntry(rt, name, problems, pools);
    if (rt.matches) out.matches = toJson(ListValueSchema, rt.matches);
    if (rt.policies) out.policies = rt.policies;
    mappings.push({
      prefix: ['binds', at.bi, 'listeners', at.li, 'routes', at.routes.length],
      resource: name,
      as: [],
    });
    at.routes.push(out);
  }

  const tcpRoutes = byName.filter(([, r]) => r.kind.case === 'tcpRoute') as [
    string,
    Resource & { kind: { case: 'tcpRoute'; value: TcpRoute } },
  ][];
  tcpRoutes.sort(([an, a], [bn, b]) => compareRoutes(an, a.kind.value, bn, b.kind.value));
  for (const [name, r] of tcpRoutes) {
    const rt = r.kind.value;
    const at = listenerAt.get(`${rt.port}\0${rt.listener}`);
    if (!at?.tcp) {
      problems.push({
        resource: name,
        path: ['listener'],
        message: at
          ? `listener ${JSON.stringify(rt.listener)} on port ${rt.port} is not a TCP or TLS listener`
          : `no listener ${JSON.stringify(rt.listener)} on port ${rt.port}`,
      });
      continue;
    }
    mappings.push({
      prefix: ['binds', at.bi, 'listeners', at.li, 'tcpRoutes', at.routes.length],
      resource: name,
      as: [],
    });
    at.routes.push(routeEntry(rt, name, problems, pools));
  }

  const backends: Json[] = [];
  const policies: Json[] = [];
  let frontend: Json | undefined;
  let global: Json | undefined;
  for (const [name, r] of byName) {
    switch (r.kind.case) {
      case 'backend':
        mappings.push({ prefix: ['backends', backends.length], resource: name, as: [] });
        backends.push(namedBackend(r.kind.value, name, problems));
        break;
      case 'policy': {
        const p = policyOf(r.kind.value, name, problems);
        if (!p) break;
        mappings.push({ prefix: ['policies', policies.length, 'policy'], resource: name, as: ['traffic'] });
        mappings.push({ prefix: ['policies', policies.length], resource: name, as: [] });
        policies.push(p);
        break;
      }
      case 'frontend':
        if (frontend) {
          problems.push({ resource: name, path: [], message: 'a second Frontend resource' });
          break;
        }
        frontend = r.kind.value.policies ?? {};
        mappings.push({ prefix: ['frontendPolicies'], resource: name, as: ['policies'] });
        break;
      case 'global':
        if (global) {
          problems.push({ resource: name, path: [], message: 'a second Global resource' });
          break;
        }
        global = r.kind.value.config ?? {};
        mappings.push({ prefix: ['config'], resource: name, as: ['config'] });
        break;
      case 'bind':
      case 'route':
      case 'tcpRoute':
      case 'inferencePool':
        break;
      default:
        problems.push({
          resource: name,
          path: [],
          message: 'resource of an unknown kind (a newer controller?)',
        });
    }
  }

  const data: Json = { binds };
  if (backends.length > 0) data.backends = backends;
  if (services.length > 0) data.services = services;
  if (workloads.length > 0) data.workloads = workloads;
  if (policies.length > 0) data.policies = policies;
  if (frontend) data.frontendPolicies = frontend;
  if (global) data.config = global;

  // Longest prefix first, so a route's own mapping wins over its bind's.
  mappings.sort((a, b) => b.prefix.length - a.prefix.length);
  const origin: Origin = (path) => {
    for (const m of mappings) {
      if (m.prefix.length <= path.length && m.prefix.every((seg, i) => path[i] === seg)) {
        return { file: m.resource, path: [...m.as, ...path.slice(m.prefix.length)] };
      }
    }
    return { file: 'xds', path };
  };
  return { data, origin, problems };
}

function portOf(r: Resource): number {
  return r.kind.case === 'bind' || r.kind.case === 'route' || r.kind.case === 'tcpRoute'
    ? r.kind.value.port
    : 0;
}

/** `route/<port>/<listener>/<namespace>/<route>/<rule index>` → the rule index, when it is one. */
function ruleIndex(name: string): number | undefined {
  const last = name.slice(name.lastIndexOf('/') + 1);
  return /^[0-9]+$/.test(last) ? Number(last) : undefined;
}

function compareRoutes(an: string, a: Route | TcpRoute, bn: string, b: Route | TcpRoute): number {
  // 0 (unset) after every route that has a precedence
  const precedence = (r: Route | TcpRoute) => r.precedence || Number.MAX_SAFE_INTEGER;
  const keys: [string | number, string | number][] = [
    [a.port, b.port],
    [a.listener, b.listener],
    [precedence(a), precedence(b)],
    [a.namespace, b.namespace],
    [a.name, b.name],
    [ruleIndex(an) ?? -1, ruleIndex(bn) ?? -1],
    [an, bn],
  ];
  for (const [x, y] of keys) if (x !== y) return x < y ? -1 : 1;
  return 0;
}

function hostPort(h: HostPort): string {
  // The translator sends a Unix socket as host `unix:/path` (port 0), the standalone form.
  if (h.host.startsWith('unix:')) return h.host;
  return formatHostPort(h.host, h.port);
}

/** What a route backend naming an InferencePool becomes: its Service, at its port, and its picker. */
interface PoolBackend {
  service: { name: string; port: number };
  inferenceRouting: Json;
}

/**
 * An InferencePool as a Service of the standalone `services` (a hostname of its own under
 * `.inferencepool`, its port the first target port) and a workload per endpoint and target port, so
 * every address at every port is an endpoint; route backends naming it take the Service with the
 * inferenceRouting policy (the picker a named host backend). Undefined (a problem) when it names no
 * port or is not `<namespace>/<name>`.
 */
function inferencePool(
  p: InferencePool,
  resource: string,
  problems: Assembled['problems'],
): { service: Json; workloads: { workload: Json; endpoint: number }[]; backend: PoolBackend } | undefined {
  const slash = p.name.indexOf('/');
  const [ns, pool] = [p.name.slice(0, slash), p.name.slice(slash + 1)];
  const port = p.targetPorts[0];
  if (slash <= 0 || pool === '') {
    problems.push({ resource, path: ['name'], message: 'an InferencePool is named <namespace>/<name>' });
    return undefined;
  }
  if (port === undefined) {
    problems.push({ resource, path: ['targetPorts'], message: 'an InferencePool needs a target port' });
    return undefined;
  }
  if (!p.endpointPicker) {
    problems.push({
      resource,
      path: ['endpointPicker'],
      message: 'an InferencePool needs an endpoint picker',
    });
    return undefined;
  }
  const hostname = `${pool}.${ns}.inferencepool`;
  const key = `${ns}/${hostname}`;
  // each endpoint at each target port, remembering which endpoint of the resource it came from
  const workloads = p.endpoints.flatMap((e, endpoint) =>
    p.targetPorts.map((tp) => ({
      workload: {
        name: p.targetPorts.length > 1 ? `${e.name}:${tp}` : e.name,
        namespace: ns,
        workloadIps: [e.ip],
        services: { [key]: { [String(port)]: tp } },
      },
      endpoint,
    })),
  );
  return {
    service: { name: pool, namespace: ns, hostname, vips: [], ports: { [String(port)]: 0 } },
    workloads,
    backend: {
      service: { name: key, port },
      inferenceRouting: {
        endpointPicker: { backend: p.endpointPicker },
        ...(p.failOpen ? { failureMode: 'failOpen' } : {}),
      },
    },
  };
}

/** What an HTTP and a TCP route entry share: names, hostnames and backends. */
function routeEntry(
  rt: Route | TcpRoute,
  resource: string,
  problems: Assembled['problems'],
  pools: ReadonlyMap<string, PoolBackend>,
): Json {
  const out: Json = { name: rt.name || resource };
  if (rt.namespace) out.namespace = rt.namespace;
  // Each rule is a route of its own; without a rule name its index (the name's last segment) tells
  // the rules of one route apart.
  const rule = rt.ruleName || ruleIndex(resource);
  if (rule !== undefined) out.ruleName = String(rule);
  if (rt.hostnames.length > 0) out.hostnames = rt.hostnames;
  out.backends = rt.backends.map((b, i) => routeBackend(b, resource, ['backends', i], problems, pools));
  return out;
}

function routeBackend(
  b: RouteBackend,
  resource: string,
  path: FieldPath,
  problems: Assembled['problems'],
  pools: ReadonlyMap<string, PoolBackend>,
): Json {
  const out: Json = { weight: b.weight };
  if (b.policies) out.policies = b.policies;
  if (b.target.case === 'host') out.host = hostPort(b.target.value);
  else if (b.target.case === 'backend') out.backend = b.target.value;
  else if (b.target.case === 'invalid') out.invalid = null;
  else if (b.target.case === 'inferencePool') {
    const pool = pools.get(b.target.value);
    if (!pool)
      problems.push({
        resource,
        path: [...path, 'inferencePool'],
        message: `no InferencePool ${JSON.stringify(b.target.value)} (an inferencepool/ resource)`,
      });
    else {
      out.service = pool.service;
      out.policies = { ...(b.policies ?? {}), inferenceRouting: pool.inferenceRouting };
    }
  } else
    problems.push({
      resource,
      path,
      message: 'backend has neither host, backend, inferencePool nor invalid',
    });
  return out;
}

function namedBackend(b: Backend, resource: string, problems: Assembled['problems']): Json {
  const out: Json = { name: b.name };
  if (b.target.case === 'host') out.host = hostPort(b.target.value);
  else if (b.target.case === 'dynamic') out.dynamic = {};
  else if (b.target.case === 'ai') out.ai = b.target.value;
  else if (b.target.case === 'llmModels') out.llmModels = b.target.value;
  else if (b.target.case === 'mcp') out.mcp = mcpBackend(b.target.value, resource, problems);
  else if (b.target.case === 'a2a') out.host = hostPort(b.target.value);
  else if (b.target.case === 'aws') {
    const svc = b.target.value.service;
    if (svc.case === 'agentCore') {
      const { agentRuntimeArn, qualifier } = svc.value;
      out.aws = { agentCore: { agentRuntimeArn, ...(qualifier ? { qualifier } : {}) } };
    } else problems.push({ resource, path: ['aws'], message: 'aws backend names no service (agentCore)' });
  } else
    problems.push({
      resource,
      path: [],
      message: 'backend has neither host, dynamic, ai, llmModels, mcp, a2a nor aws',
    });
  if (b.policies) out.policies = b.policies;
  // An A2A agent is a host under agentgateway's a2a policy, as a file would say it.
  if (b.target.case === 'a2a') out.policies = { ...(b.policies ?? {}), a2a: {} };
  return out;
}

/**
 * An MCP backend as the standalone `mcp` backend (the loader's mcpTarget builds its IR). Targets are
 * given as host, port and path, so the path keeps its standalone default (/mcp or /sse) when unset.
 */
const MCP_PROTOCOLS: Record<string, 'mcp' | 'sse'> = { StreamableHTTP: 'mcp', SSE: 'sse' };

function mcpBackend(m: Mcp, resource: string, problems: Assembled['problems']): Json {
  const out: Json = {
    targets: m.targets.map((t, i) => {
      const remote: Json = { host: t.host, port: t.port };
      if (t.path) remote.path = t.path;
      const transport = MCP_PROTOCOLS[t.protocol || 'StreamableHTTP'];
      if (!transport)
        problems.push({
          resource,
          path: ['mcp', 'targets', i, 'protocol'],
          message: `unknown MCP protocol ${JSON.stringify(t.protocol)} (StreamableHTTP or SSE)`,
        });
      const target: Json = { name: t.name, [transport ?? 'mcp']: remote };
      if (t.policies) target.policies = t.policies;
      return target;
    }),
  };
  if (m.sessionRouting) out.sessionRouting = m.sessionRouting;
  if (m.failureMode) out.failureMode = m.failureMode;
  if (m.prefixMode) out.prefixMode = m.prefixMode;
  return out;
}

function policyOf(p: Policy, resource: string, problems: Assembled['problems']): Json | undefined {
  const t = p.target?.kind;
  if (!t?.case) {
    problems.push({ resource, path: ['target'], message: 'policy has no target' });
    return undefined;
  }
  return {
    name: p.name,
    target: { [t.case]: t.value },
    ...(p.override ? { inheritance: 'override' } : {}),
    ...(p.preRouting ? { phase: 'gateway' } : {}),
    policy: p.traffic ?? {},
  };
}
