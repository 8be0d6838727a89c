// Prometheus metrics of a data-plane worker. Each worker has its own registry; the main thread
// collects them and serves the sum on the stats port.
import { Counter, Histogram, Registry } from 'prom-client';
import type { RouteInfo } from '../pipeline/context.ts';
import type { ObservedRequest, RequestObserver, RequestSummary } from '../pipeline/observer.ts';

export class ProxyMetrics implements RequestObserver {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: 'gw_requests_total',
    help: 'HTTP requests handled, by gateway, listener, route, backend and response status',
    labelNames: ['gateway', 'listener', 'route', 'backend', 'status'] as const,
    registers: [this.registry],
  });
  readonly duration = new Histogram({
    name: 'gw_request_duration_seconds',
    help: 'Time from request arrival until the response is complete, by gateway and route',
    labelNames: ['gateway', 'route'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly upstreamDuration = new Histogram({
    name: 'gw_upstream_duration_seconds',
    help: 'Time from sending a request upstream until its response headers arrive, by backend',
    labelNames: ['backend'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly llmTokens = new Counter({
    name: 'gw_llm_tokens_total',
    help: 'LLM tokens the providers reported using, by provider, model (as sent) and kind (input, output)',
    labelNames: ['provider', 'model', 'kind'] as const,
    registers: [this.registry],
  });
  readonly llmGuardrailActions = new Counter({
    name: 'gw_llm_guardrail_actions_total',
    help: 'What LLM prompt guards did, by phase (request, response, stream), guard kind and action (mask, reject, audit; a mask on a stream is counted though not applied)',
    labelNames: ['phase', 'guard', 'action'] as const,
    registers: [this.registry],
  });
  readonly configVersion = new Counter({
    name: 'gw_config_applied_total',
    help: 'Configuration versions applied by this worker',
    registers: [this.registry],
  });

  // Label lookups hash their label values on every call; the bound children are cached instead.
  readonly #counters = new Map<string, Counter.Internal>();
  readonly #histograms = new Map<string, Histogram.Internal<'gateway' | 'route'>>();
  readonly #tokens = new Map<string, [Counter.Internal, Counter.Internal]>();

  end(req: ObservedRequest, s: RequestSummary): void {
    this.record(req.route, req.backendName, s.status, s.seconds);
    const llm = req.ext.llm;
    if (llm?.usage) this.recordTokens(llm.provider ?? '', llm.model ?? llm.requestModel, llm.usage);
    if (llm)
      for (const g of llm.guardrails) this.llmGuardrailActions.labels(g.phase, g.guard, g.action).inc();
  }

  recordTokens(provider: string, model: string, usage: { input: number; output: number }): void {
    const key = `${provider}\u0000${model}`;
    let c = this.#tokens.get(key);
    if (!c) {
      c = [this.llmTokens.labels(provider, model, 'input'), this.llmTokens.labels(provider, model, 'output')];
      if (this.#tokens.size < 10_000) this.#tokens.set(key, c);
    }
    if (usage.input > 0) c[0].inc(usage.input);
    if (usage.output > 0) c[1].inc(usage.output);
  }

  record(
    route: Pick<RouteInfo, 'key' | 'gateway' | 'listener'> | undefined,
    backend: string | undefined,
    status: number,
    seconds: number,
  ): void {
    const routeKey = route?.key ?? '';
    const key = `${routeKey}\u0000${backend ?? ''}\u0000${status}`;
    let c = this.#counters.get(key);
    if (!c) {
      c = this.requests.labels(
        route?.gateway ?? '',
        route?.listener ?? '',
        routeKey,
        backend ?? '',
        String(status),
      );
      if (this.#counters.size < 10_000) this.#counters.set(key, c);
    }
    c.inc();
    let h = this.#histograms.get(routeKey);
    if (!h) {
      h = this.duration.labels(route?.gateway ?? '', routeKey);
      if (this.#histograms.size < 10_000) this.#histograms.set(routeKey, h);
    }
    h.observe(seconds);
  }
}
