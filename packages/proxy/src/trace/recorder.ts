// The debug trace of one request, as a request observer: events in the order things happen, header
// values of sensitive headers redacted (checked at every snapshot, so a header added by a policy is
// caught too), body snapshots taken from the chunks as they pass, never by buffering the body.

import type { RequestSnapshotState, TraceEvent } from '@gw/api';
import type { GwError } from '../errors.ts';
import type { Headers } from '../pipeline/context.ts';
import type {
  ObservedRequest,
  PolicyEvent,
  PolicyOutcome,
  RequestObserver,
  RouteSelection,
  Stage,
  UpstreamInfo,
  UpstreamResult,
} from '../pipeline/observer.ts';
import { redactPolicies, redactQuery } from './redact.ts';

export const BODY_SNAPSHOT_LIMIT = 64 * 1024;
const REDACTED = '<redacted>';

export type TraceSink = (event: TraceEvent | null) => void;

/** What a trace never shows: values of these headers and of these query parameters. */
export interface Redaction {
  headers: ReadonlySet<string>;
  queryParams: ReadonlySet<string>;
}

/** The first bytes of a body and its total size, for a bodySnapshot event. */
class BodyCapture {
  chunks: Buffer[] = [];
  kept = 0;
  seen = 0;
  add(c: Buffer): void {
    this.seen += c.length;
    if (this.kept < BODY_SNAPSHOT_LIMIT) {
      const part = c.subarray(0, BODY_SNAPSHOT_LIMIT - this.kept);
      this.chunks.push(part);
      this.kept += part.length;
    }
  }
}

export class TraceRecorder implements RequestObserver {
  readonly #sink: TraceSink;
  readonly #sensitive: ReadonlySet<string>;
  readonly #params: ReadonlySet<string>;
  readonly #t0: number;
  #finished = false;
  #requestBody = new BodyCapture();
  #responseBody = new BodyCapture();

  constructor(sink: TraceSink, redaction: Redaction, t0: number) {
    this.#sink = sink;
    this.#sensitive = redaction.headers;
    this.#params = redaction.queryParams;
    this.#t0 = t0;
  }

  /** Milliseconds since the request started, to the microsecond. */
  now(): number {
    return this.#rel(performance.now());
  }

  #rel(t: number): number {
    return Math.round((t - this.#t0) * 1000) / 1000;
  }

  emit(
    type: string,
    fields: Record<string, unknown> = {},
    start: number | null = null,
    severity: TraceEvent['severity'] = 'info',
  ): void {
    if (this.#finished) return;
    this.#sink({ eventStart: start, eventEnd: this.now(), severity, message: { type, ...fields } });
  }

  // ---- RequestObserver ----

  start(req: ObservedRequest): void {
    this.emit('requestStarted', {}, 0);
    this.requestSnapshot('initial request', req);
  }

  gatewayPhase(_req: ObservedRequest, policies: object): void {
    this.emit('policySelection', {
      phase: 'pre-routing',
      effectivePolicy: redactPolicies(policies, this.#sensitive),
    });
  }

  routeSelected(_req: ObservedRequest, sel: RouteSelection): void {
    if (sel.reason !== undefined) {
      this.emit('routeSelection', { selectedRoute: null, evaluatedRoutes: [], reason: sel.reason });
      return;
    }
    this.emit('routeSelection', { selectedRoute: sel.selected, evaluatedRoutes: sel.evaluated() });
    if (!sel.selected) return;
    this.emit('policySelection', {
      phase: 'gateway',
      effectivePolicy: redactPolicies(sel.policies.gateway, this.#sensitive),
    });
    this.emit('policySelection', {
      phase: 'route',
      effectivePolicy: redactPolicies(sel.policies.route, this.#sensitive),
    });
  }

  policy(_req: ObservedRequest, o: PolicyOutcome): void {
    const base = { policy: o.policy, phase: o.phase, outcome: o.outcome };
    const start = this.#rel(o.start);
    if (o.outcome === 'passed') this.emit('policy', base, start);
    else if (o.outcome === 'rejected')
      this.emit('policy', { ...base, status: o.status, reason: o.reason }, start, 'warn');
    else this.emit('policy', { ...base, status: o.status ?? null }, start);
  }

  stage(req: ObservedRequest, stage: Stage): void {
    this.requestSnapshot(stage, req);
  }

  event(_req: ObservedRequest, e: PolicyEvent): void {
    this.emit(e.type, e.fields, e.start === null ? null : this.#rel(e.start), e.severity);
  }

  upstreamChosen(_req: ObservedRequest, u: UpstreamInfo): void {
    this.emit('policySelection', { phase: 'backend', backend: u.name, effectivePolicy: u.policies });
  }

  upstreamStart(req: ObservedRequest, u: UpstreamInfo, target: string): void {
    this.requestSnapshot('final request', req, {
      backend: { name: u.name, type: u.type, protocol: u.protocol },
    });
    this.#requestBody = new BodyCapture();
    this.emit('backendCallStart', { target, backend: u.name }, this.now());
  }

  upstreamEnd(req: ObservedRequest, _u: UpstreamInfo, r: UpstreamResult): void {
    const start = this.#rel(r.start);
    if (r.error !== null) {
      this.emit(
        'backendCallResult',
        { target: req.endpoint ?? null, status: null, error: r.error },
        start,
        'error',
      );
      return;
    }
    this.emit('backendCallResult', { target: req.endpoint ?? null, status: r.status, error: null }, start);
    this.responseSnapshot('raw response', req, {
      proxy: {
        requestProcessingDuration: (start / 1000).toFixed(6),
        upstreamDuration: ((this.now() - start) / 1000).toFixed(6),
      },
    });
  }

  responseHead(req: ObservedRequest, at: 'backend' | 'final'): void {
    if (at === 'final') this.#responseBody = new BodyCapture();
    this.responseSnapshot(at === 'backend' ? 'backend response ready' : 'final response', req);
  }

  requestBody(_req: ObservedRequest, chunk: Buffer): void {
    this.#requestBody.add(chunk);
  }

  requestBodyEnd(): void {
    this.#bodySnapshot('final request', this.#requestBody);
  }

  responseBody(_req: ObservedRequest, chunk: Buffer): void {
    this.#responseBody.add(chunk);
  }

  responseBodyEnd(): void {
    this.#bodySnapshot('response', this.#responseBody);
  }

  error(_req: ObservedRequest, e: GwError): void {
    this.emit('error', { code: e.code, status: e.status, detail: e.detail }, null, 'warn');
  }

  end(): void {
    this.finish();
  }

  // ---- snapshots ----

  redact(h: Headers): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(h)) {
      out[k] = this.#sensitive.has(k.toLowerCase()) ? REDACTED : Array.isArray(v) ? v.join(', ') : v;
    }
    return out;
  }

  requestState(req: ObservedRequest): RequestSnapshotState {
    const headers = this.redact(req.headers);
    const pathAndQuery = redactQuery(req.path + req.query, this.#params);
    return {
      request: {
        method: req.method,
        uri: `${req.scheme}://${req.authority}${pathAndQuery}`,
        path: req.path,
        pathAndQuery,
        host: req.host,
        scheme: req.scheme,
        version: `HTTP/${req.httpVersion}`,
        headers,
        startTime: req.startDate.toISOString(),
      },
      source: {
        address: req.source.address,
        port: req.source.port,
        rawAddress: req.source.address,
        rawPort: req.source.port,
      },
      env: {},
    };
  }

  requestSnapshot(stage: string, req: ObservedRequest, extra: Record<string, unknown> = {}): void {
    this.emit('requestSnapshot', { stage, requestState: this.requestState(req), ...extra });
  }

  responseSnapshot(stage: string, req: ObservedRequest, extra: Record<string, unknown> = {}): void {
    const state = this.requestState(req);
    if (req.response)
      state.response = { code: req.response.status, headers: this.redact(req.response.headers) };
    this.emit('responseSnapshot', { stage, requestState: state, ...extra });
  }

  #bodySnapshot(stage: string, b: BodyCapture): void {
    const data = Buffer.concat(b.chunks);
    this.emit('bodySnapshot', {
      stage,
      body: data.toString('base64'),
      size: b.seen,
      truncated: b.seen > data.length,
    });
  }

  finish(): void {
    if (this.#finished) return;
    this.emit('requestFinished');
    this.#finished = true;
    this.#sink(null);
  }
}
