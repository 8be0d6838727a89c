// Prometheus metrics of a data-plane worker. Each worker has its own registry; the main thread
// collects them and serves the sum on the stats port.
import { performance } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';
import { Counter, Histogram, type Metric, Registry } from 'prom-client';
import { finalOutcome, methodLabel } from '../a2a/info.ts';
import { type CelProgram, celToJson, compileCel } from '../cel/cel.ts';
import type { MetricsIR } from '../config/ir.ts';
import type { RouteInfo } from '../pipeline/context.ts';
import type { ObservedRequest, RequestObserver, RequestSummary } from '../pipeline/observer.ts';
import type { ConnectionCounts } from '../server/bind-server.ts';
import type { TcpConnectionSummary } from '../server/tcp-bind-server.ts';
import type { EndpointHealth } from '../upstream/health.ts';
import {
  CollectedFamily,
  CounterFamily,
  type CounterSeries,
  HistogramFamily,
  type HistogramSeries,
} from './series.ts';

export class ProxyMetrics implements RequestObserver {
  readonly registry = new Registry();
  requests = requestsFamily(this.registry, []);
  duration = durationFamily(this.registry, []);
  readonly upstreamDuration = new Histogram({
    name: 'gw_upstream_duration_seconds',
    help: 'Time from sending a request upstream until its response headers arrive, by backend',
    labelNames: ['backend'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly a2aRequests = new CounterFamily({
    name: 'gw_a2a_requests_total',
    help: 'A2A requests, by route, JSON-RPC method (agent-card: a card fetch; other: a name A2A does not define) and outcome (ok, error, invalid, failed, aborted, rejected; a card: rewritten, untouched)',
    labelNames: ['route', 'method', 'outcome'],
    registry: this.registry,
  });
  readonly llmTokens = new CounterFamily({
    name: 'gw_llm_tokens_total',
    help: 'LLM tokens the providers reported using, by provider, model (as sent) and kind (input, output; cached_input and reasoning are the parts of input and output that were read from the prompt cache or spent reasoning)',
    labelNames: ['provider', 'model', 'kind'],
    registry: this.registry,
  });
  readonly llmFirstToken = new HistogramFamily({
    name: 'gw_llm_time_to_first_token_seconds',
    help: "Time from a streamed LLM request's arrival to the first bytes of its answer sent to the client, in seconds, by provider and model (as sent)",
    labelNames: ['provider', 'model'],
    buckets: [0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 30],
    registry: this.registry,
  });
  readonly llmCost = new CounterFamily({
    name: 'gw_llm_cost_total',
    help: 'What LLM requests cost by config.modelCatalog (its currency), by provider and model (as sent); unpriced requests add nothing',
    labelNames: ['provider', 'model'],
    registry: this.registry,
  });
  readonly llmGuardrailActions = new Counter({
    name: 'gw_llm_guardrail_actions_total',
    help: 'What LLM prompt guards did, by phase (request, response, stream), guard kind and action (mask, reject, audit; a mask on a stream is counted though not applied)',
    labelNames: ['phase', 'guard', 'action'] as const,
    registers: [this.registry],
  });
  readonly mcpRequests = new CounterFamily({
    name: 'gw_mcp_requests_total',
    help: 'MCP requests, by route, JSON-RPC method and outcome (ok, error, denied, failed, invalid)',
    labelNames: ['route', 'method', 'outcome'],
    registry: this.registry,
  });
  readonly mcpGuardrailActions = new CounterFamily({
    name: 'gw_mcp_guardrail_actions_total',
    help: 'What MCP guardrail processors answered, by phase (request, response) and action (allow, modify, reject, failed)',
    labelNames: ['phase', 'action'],
    registry: this.registry,
  });
  readonly mirroredRequests = new CounterFamily({
    name: 'gw_mirrored_requests_total',
    help: 'Requests a requestMirror policy sampled, by route and outcome (sent; busy: too many copies in flight; dropped: the mirror fell behind the request body)',
    labelNames: ['route', 'outcome'],
    registry: this.registry,
  });
  #endpoints: () => readonly EndpointHealth[] = () => [];
  readonly endpointHealthy = new CollectedFamily({
    name: 'gw_endpoint_healthy',
    help: 'Endpoints of backends with a health policy: 1 while in the balancing set, 0 while ejected or failing active health checks, by backend and endpoint',
    type: 'gauge',
    registry: this.registry,
    collect: () => {
      const now = Date.now();
      return this.#endpoints().map((h) => ({
        labels: { backend: h.backend, endpoint: h.endpoint },
        value: h.available(now) ? 1 : 0,
      }));
    },
  });
  readonly endpointEjections = new CollectedFamily({
    name: 'gw_endpoint_ejections_total',
    help: 'Times an endpoint was ejected by its backend health policy, by backend and endpoint',
    type: 'counter',
    registry: this.registry,
    collect: () =>
      this.#endpoints().map((h) => ({
        labels: { backend: h.backend, endpoint: h.endpoint },
        value: h.ejections,
      })),
  });
  readonly endpointHealthChecks = new CollectedFamily({
    name: 'gw_endpoint_health_checks_total',
    help: 'Active health check probes (health.active), by backend, endpoint and result (pass, fail); reported by the worker that probes',
    type: 'counter',
    registry: this.registry,
    collect: () =>
      this.#endpoints()
        .filter((h) => h.probing && h.active)
        .flatMap((h) => {
          const a = h.active as NonNullable<typeof h.active>;
          const labels = (result: string) => ({ backend: h.backend, endpoint: h.endpoint, result });
          return [
            { labels: labels('pass'), value: a.probes - a.failedProbes },
            { labels: labels('fail'), value: a.failedProbes },
          ];
        }),
  });
  readonly tcpConnections = new CounterFamily({
    name: 'gw_tcp_connections_total',
    help: 'Connections to TCP and TLS listeners (tcpRoutes) that ended, by gateway, listener, route, backend and outcome (proxied; else why it was closed: no_route, no_backend, connect_error, bad_client_hello)',
    labelNames: ['gateway', 'listener', 'route', 'backend', 'outcome'],
    registry: this.registry,
  });
  readonly tcpBytes = new CounterFamily({
    name: 'gw_tcp_bytes_total',
    help: 'Bytes proxied on connections to TCP and TLS listeners, by route and direction (received: from the client, sent: to it)',
    labelNames: ['route', 'direction'],
    registry: this.registry,
  });
  readonly downstreamConnections = new CounterFamily({
    name: 'gw_downstream_connections_total',
    help: 'Client connections to binds, by bind and outcome (accepted; limit: refused by frontendPolicies.tcp.maxConnections; denied: refused by networkAuthorization)',
    labelNames: ['bind', 'outcome'],
    registry: this.registry,
  });
  #binds: () => readonly { key: string; connections: number }[] = () => [];
  readonly downstreamOpen = new CollectedFamily({
    name: 'gw_downstream_connections_open',
    help: 'Client connections open now, by bind (HTTP connections once accepted, TLS ones once their handshake is done)',
    type: 'gauge',
    registry: this.registry,
    collect: () => {
      const open = new Map<string, number>();
      // a bind a reload replaced serves its open connections on beside the new one: both count
      for (const b of this.#binds()) open.set(b.key, (open.get(b.key) ?? 0) + b.connections);
      return [...open].map(([bind, value]) => ({ labels: { bind }, value }));
    },
  });
  readonly workerBusy = new CollectedFamily({
    name: 'gw_worker_event_loop_busy_seconds_total',
    help: "Time the worker's event loop spent running code rather than waiting for I/O, in seconds: its rate is the worker's utilization (1 is saturated)",
    type: 'counter',
    registry: this.registry,
    collect: () => [{ labels: {}, value: performance.eventLoopUtilization().active / 1000 }],
  });
  readonly workerHeap = new CollectedFamily({
    name: 'gw_worker_heap_bytes',
    help: "The worker's V8 heap in bytes, by kind (used: live and not yet collected; limit: what it may grow to before the worker runs out of memory)",
    type: 'gauge',
    registry: this.registry,
    collect: () => {
      const h = getHeapStatistics();
      return [
        { labels: { kind: 'used' }, value: h.used_heap_size },
        { labels: { kind: 'limit' }, value: h.heap_size_limit },
      ];
    },
  });
  readonly configVersion = new Counter({
    name: 'gw_config_applied_total',
    help: 'Configuration versions applied by this worker',
    registers: [this.registry],
  });

  /** The series of each route, then of each backend and status under it: no key is built per request. */
  #routes = new Map<string, RouteSeries>();
  /** config.metrics.fields.add: label names and their CEL, evaluated when each request ends. */
  #labels: { key: string; functions: string; names: string[]; programs: CelProgram[] } = {
    key: '[]',
    functions: '',
    names: [],
    programs: [],
  };
  /** config.metrics.remove: the metrics taken out of the registry, to put back when no longer removed. */
  readonly #removed = new Map<string, Metric>();

  /**
   * config.metrics: labels added to gw_requests_total and gw_request_duration_seconds (a change of
   * them starts both afresh), and metrics not served.
   */
  configure(m: MetricsIR | undefined, customFunctions = ''): void {
    const labels = Object.entries(m?.labels ?? {});
    const key = JSON.stringify(labels);
    if (key !== this.#labels.key) {
      const names = labels.map(([n]) => n);
      this.registry.removeSingleMetric('gw_requests_total');
      this.registry.removeSingleMetric('gw_request_duration_seconds');
      this.requests = requestsFamily(this.registry, names);
      this.duration = durationFamily(this.registry, names);
      this.#routes = new Map();
      this.#labels = {
        key,
        functions: customFunctions,
        names,
        programs: labels.map(([, e]) => compileCel(e)),
      };
    } else if (customFunctions !== this.#labels.functions) {
      // the same labels, calling functions that changed: compiled anew, the series kept
      this.#labels = {
        ...this.#labels,
        functions: customFunctions,
        programs: labels.map(([, e]) => compileCel(e)),
      };
    }
    const remove = new Set(m?.remove ?? []);
    for (const [name, metric] of this.#removed)
      if (!remove.has(name)) {
        this.#removed.delete(name);
        this.registry.registerMetric(metric);
      }
    for (const name of remove) {
      const metric = this.registry.getSingleMetric(name);
      if (metric) {
        this.registry.removeSingleMetric(name);
        this.#removed.set(name, metric);
      }
    }
  }
  /** By provider and model: the input, output, cached_input and reasoning series. */
  readonly #tokens = new Map<string, [CounterSeries, CounterSeries, CounterSeries, CounterSeries]>();

  /** The series gw_downstream_connections_total counts a bind's connections in, by outcome. */
  connectionCounts(bind: string): ConnectionCounts {
    return {
      accepted: this.downstreamConnections.series(bind, 'accepted'),
      limit: this.downstreamConnections.series(bind, 'limit'),
      denied: this.downstreamConnections.series(bind, 'denied'),
    };
  }

  /** Where gw_downstream_connections_open reads from (the data plane's bind servers). */
  watchBinds(binds: () => readonly { key: string; connections: number }[]): void {
    this.#binds = binds;
  }

  /** Where the endpoint health gauges read from (the data plane's pools). */
  watchEndpoints(endpoints: () => readonly EndpointHealth[]): void {
    this.#endpoints = endpoints;
  }

  end(req: ObservedRequest, s: RequestSummary): void {
    if (this.#labels.names.length > 0) this.#recordLabelled(req, s);
    else this.record(req.route, req.backendName, s.status, s.seconds);
    const a2a = req.ext.a2a;
    if (a2a) {
      const method = methodLabel(a2a.method);
      this.a2aRequests.series(req.route?.key ?? '', method, finalOutcome(a2a, req.error)).value++;
    }
    const llm = req.ext.llm;
    if (llm?.usage) {
      const model = llm.model ?? llm.requestModel;
      this.recordTokens(llm.provider ?? '', model, llm.usage);
      const cost = llm.catalog && llm.cost;
      if (cost) this.llmCost.series(llm.provider ?? '', model).value += cost.total;
    }
    if (llm?.firstOutputAt !== undefined)
      this.llmFirstToken
        .series(llm.provider ?? '', llm.model ?? llm.requestModel)
        .observe(Math.max(0, llm.firstOutputAt - req.startTime) / 1000);
    if (llm)
      for (const g of llm.guardrails) this.llmGuardrailActions.labels(g.phase, g.guard, g.action).inc();
    const mirror = req.ext.requestMirror;
    if (mirror) this.mirroredRequests.series(req.route?.key ?? '', mirror.outcome).value++;
    const mcp = req.ext.mcp;
    if (mcp) {
      // method names come from clients: ones MCP does not define share one series
      const method = MCP_METHODS.has(mcp.method) ? mcp.method : 'other';
      this.mcpRequests.series(req.route?.key ?? '', method, mcp.outcome ?? 'ok').value++;
      for (const g of mcp.guardrails ?? []) this.mcpGuardrailActions.series(g.phase, g.action).value++;
    }
  }

  /** A TCP or TLS connection that ended (tcpRoutes): few enough that a lookup per connection is fine. */
  recordTcp(s: TcpConnectionSummary): void {
    const route = s.route ?? '';
    this.tcpConnections.series(s.gateway ?? '', s.listener ?? '', route, s.backend ?? '', tcpOutcome(s))
      .value++;
    if (s.bytesReceived > 0) this.tcpBytes.series(route, 'received').value += s.bytesReceived;
    if (s.bytesSent > 0) this.tcpBytes.series(route, 'sent').value += s.bytesSent;
  }

  recordTokens(
    provider: string,
    model: string,
    usage: { input: number; output: number; cachedInput?: number; reasoning?: number },
  ): void {
    const key = `${provider}\u0000${model}`;
    let c = this.#tokens.get(key);
    if (!c) {
      const kind = (k: string) => this.llmTokens.series(provider, model, k);
      c = [kind('input'), kind('output'), kind('cached_input'), kind('reasoning')];
      this.#tokens.set(key, c);
    }
    if (usage.input > 0) c[0].value += usage.input;
    if (usage.output > 0) c[1].value += usage.output;
    if (usage.cachedInput) c[2].value += usage.cachedInput;
    if (usage.reasoning) c[3].value += usage.reasoning;
  }

  /** A request under config.metrics.fields.add: its label values worked out, its series looked up. */
  #recordLabelled(req: ObservedRequest, s: RequestSummary): void {
    const cel = req.celContext();
    if (req.response === undefined) cel.response = { code: s.status, headers: {} };
    const extra = this.#labels.programs.map((p) => labelValue(p.eval(cel)));
    const route = req.route;
    const routeKey = route?.key ?? '';
    this.duration.series(route?.gateway ?? '', routeKey, ...extra).observe(s.seconds);
    this.requests.series(
      route?.gateway ?? '',
      route?.listener ?? '',
      routeKey,
      req.backendName ?? '',
      String(s.status),
      ...extra,
    ).value++;
  }

  record(
    route: Pick<RouteInfo, 'key' | 'gateway' | 'listener'> | undefined,
    backend: string | undefined,
    status: number,
    seconds: number,
  ): void {
    const routeKey = route?.key ?? '';
    let r = this.#routes.get(routeKey);
    if (!r) {
      r = {
        duration: this.duration.series(route?.gateway ?? '', routeKey),
        byBackend: new Map(),
        gateway: route?.gateway ?? '',
        listener: route?.listener ?? '',
      };
      this.#routes.set(routeKey, r);
    }
    r.duration.observe(seconds);
    const b = backend ?? '';
    let byStatus = r.byBackend.get(b);
    if (!byStatus) {
      byStatus = new Map();
      r.byBackend.set(b, byStatus);
    }
    let c = byStatus.get(status);
    if (!c) {
      c = this.requests.series(r.gateway, r.listener, routeKey, b, String(status));
      byStatus.set(status, c);
    }
    c.value++;
  }
}

/** A label's value from its CEL: text as it is, other values as JSON, nothing (an error) as "". */
function labelValue(v: unknown): string {
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return v;
  const j = celToJson(v);
  return typeof j === 'string' ? j : JSON.stringify(j);
}

function requestsFamily(registry: Registry, extra: readonly string[]): CounterFamily {
  return new CounterFamily({
    name: 'gw_requests_total',
    help: 'HTTP requests handled, by gateway, listener, route, backend and response status',
    labelNames: ['gateway', 'listener', 'route', 'backend', 'status', ...extra],
    registry,
  });
}

function durationFamily(registry: Registry, extra: readonly string[]): HistogramFamily {
  return new HistogramFamily({
    name: 'gw_request_duration_seconds',
    help: 'Time from request arrival until the response is complete, by gateway and route',
    labelNames: ['gateway', 'route', ...extra],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registry,
  });
}

interface RouteSeries {
  duration: HistogramSeries;
  byBackend: Map<string, Map<number, CounterSeries>>;
  gateway: string;
  listener: string;
}

/** The methods of the MCP specification (and the gateway's stream and session requests). */
const MCP_METHODS = new Set([
  'initialize',
  'ping',
  'tools/list',
  'tools/call',
  'prompts/list',
  'prompts/get',
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'resources/subscribe',
  'resources/unsubscribe',
  'completion/complete',
  'logging/setLevel',
  'notifications/initialized',
  'notifications/cancelled',
  'notifications/progress',
  'notifications/roots/list_changed',
  'response',
  'GET stream',
  'DELETE session',
]);

function tcpOutcome(s: TcpConnectionSummary): string {
  if (s.error === undefined) return 'proxied';
  if (s.backend !== undefined) return 'connect_error';
  if (s.route !== undefined) return 'no_backend';
  if (s.error.startsWith('no ')) return 'no_route';
  return 'bad_client_hello';
}
