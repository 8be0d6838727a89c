// OpenTelemetry tracing as a source of request observers: a request that is sampled gets a span
// observer, which records a server span for the request and a client span for each upstream call,
// sends the upstream span's context on (W3C traceparent), and at the request's end gives the spans
// the access log's fields (reshaped by the tracing policy) and hands them to the exporter. A request
// that is not sampled gets nothing; a config without tracing never gets here (data-plane.ts).
import type { Attributes, AttributeValue } from '@opentelemetry/api';
import type { CelContext } from '../cel/cel.ts';
import { type CelProgram, compileCel } from '../cel/cel.ts';
import type { SamplingIR, TracingIR } from '../config/ir.ts';
import type { Lazy } from '../lazy.ts';
import type {
  ObservedRequest,
  ObserverSource,
  RequestObserver,
  RequestSummary,
  UpstreamInfo,
  UpstreamResult,
} from '../pipeline/observer.ts';
import { BodyCapture, type CapturedBodies, RecordShape, requestRecord } from './access-log.ts';
import type { SpanExport, SpanHandle } from './otel-export.ts';

/** A traceparent header's parts (version 00; a later version is read as 00, as W3C asks). */
export interface TraceParent {
  traceId: string;
  spanId: string;
  sampled: boolean;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

export function parseTraceparent(value: string | string[] | undefined): TraceParent | undefined {
  if (typeof value !== 'string') return undefined;
  const m = TRACEPARENT.exec(value.trim());
  if (!m) return undefined;
  const [, version, traceId, spanId, flags, rest] = m as unknown as [
    string,
    string,
    string,
    string,
    string,
    string?,
  ];
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return undefined;
  return { traceId, spanId, sampled: (Number.parseInt(flags, 16) & 1) === 1 };
}

/** A sampling setting compiled: a constant, a fraction, or CEL giving either for each request. */
type Decide = (req: ObservedRequest) => boolean;

function decider(s: SamplingIR): Decide {
  if (typeof s === 'boolean') return () => s;
  if (typeof s === 'number') return fraction(s);
  const p: CelProgram = compileCel(s);
  return (req) => {
    const v = p.eval(req.celContext());
    if (typeof v === 'boolean') return v;
    if (typeof v === 'number' || typeof v === 'bigint') return fraction(Number(v))(req);
    return false;
  };
}

function fraction(f: number): Decide {
  if (f >= 1) return () => true;
  if (f <= 0) return () => false;
  return () => Math.random() < f;
}

/** Where a worker's spans go, and what they carry: one per config (a reload builds a new one). */
export class TracingSource implements ObserverSource {
  readonly #export: Lazy<SpanExport>;
  readonly #random: Decide;
  readonly #client: Decide;
  readonly #parentNotSampled: Decide;
  readonly shape: RecordShape;
  readonly credentialParams: ReadonlySet<string>;

  /** The most of a body an attribute may read. */
  readonly bodyLimit: number;

  constructor(ir: TracingIR, exp: Lazy<SpanExport>, credentialParams: readonly string[], bodyLimit: number) {
    this.bodyLimit = bodyLimit;
    this.#export = exp;
    this.#random = decider(ir.randomSampling);
    this.#client = decider(ir.clientSampling);
    this.#parentNotSampled = decider(ir.parentNotSampled);
    this.shape = new RecordShape({ filter: ir.filter, add: ir.attributes, remove: ir.remove });
    this.credentialParams = new Set(credentialParams);
  }

  attach(req: ObservedRequest): RequestObserver | undefined {
    const exp = this.#export.value;
    // the SDK still loading (the first moments of a config): not traced
    if (exp === undefined) return undefined;
    const parent = parseTraceparent(req.headers.traceparent);
    if (parent) {
      // a sampled parent: clientSampling decides; one not sampled: parentNotSampled (default: no)
      if (!(parent.sampled ? this.#client(req) : this.#parentNotSampled(req))) return undefined;
    } else if (!this.#random(req)) return undefined;
    const tracestate = req.headers.tracestate;
    return new SpanObserver(this, exp, req, parent, typeof tracestate === 'string' ? tracestate : undefined);
  }
}

interface UpstreamSpan {
  handle: SpanHandle;
  name: string;
  startMs: number;
  endMs?: number;
  attributes: Attributes;
  error?: string;
}

/** The spans of one sampled request, ended (and so exported) together when it ends. */
class SpanObserver implements RequestObserver {
  readonly #source: TracingSource;
  readonly #export: SpanExport;
  readonly #server: SpanHandle;
  readonly #upstream: UpstreamSpan[] = [];

  constructor(
    source: TracingSource,
    exp: SpanExport,
    req: ObservedRequest,
    parent: TraceParent | undefined,
    tracestate: string | undefined,
  ) {
    this.#source = source;
    this.#export = exp;
    const remote = parent
      ? {
          traceId: parent.traceId,
          spanId: parent.spanId,
          traceFlags: 1,
          isRemote: true,
          ...(tracestate ? { traceState: new RawTraceState(tracestate) } : {}),
        }
      : undefined;
    this.#server = exp.server(req.method, epochMs(req.startTime), remote);
    // an attribute reading a body: its bytes captured as they pass
    for (const which of ['request', 'response'] as const) {
      if (!source.shape.readsBody[which]) continue;
      const capture = new BodyCapture(source.bodyLimit);
      this.#bodies[which] = capture;
      this[`${which}Body`] = (_req, chunk) => capture.add(chunk);
    }
  }
  readonly #bodies: CapturedBodies = {};
  requestBody?: (req: ObservedRequest, chunk: Buffer) => void;
  responseBody?: (req: ObservedRequest, chunk: Buffer) => void;

  upstreamStart(req: ObservedRequest, u: UpstreamInfo, target: string): void {
    const startMs = epochMs(performance.now());
    const handle = this.#export.client(req.method, startMs, this.#server);
    this.#upstream.push({
      handle,
      name: `${req.method} ${u.name}`,
      startMs,
      attributes: { backend: u.name, 'backend.type': u.type, endpoint: target },
    });
  }

  propagate(_req: ObservedRequest, headers: Record<string, string | string[]>): void {
    const up = this.#upstream.at(-1);
    const h = up?.handle ?? this.#server;
    headers.traceparent = `00-${h.traceId}-${h.spanId}-01`;
  }

  upstreamEnd(_req: ObservedRequest, _u: UpstreamInfo, r: UpstreamResult): void {
    const up = this.#upstream.at(-1);
    if (!up || up.endMs !== undefined) return;
    up.endMs = epochMs(performance.now());
    if (r.status !== null) up.attributes['http.status'] = r.status;
    if (r.error !== null) up.error = r.error;
  }

  end(req: ObservedRequest, summary: RequestSummary): void {
    const shape = this.#source.shape;
    const cel: CelContext | undefined = shape.cel(req, summary.status, this.#bodies);
    // spans never ended are never exported: the filter drops the request's spans with it
    if (!shape.keeps(cel)) return;
    const rec = requestRecord(req, summary, this.#source.credentialParams);
    shape.apply(rec, cel);
    const now = epochMs(performance.now());
    for (const up of this.#upstream) {
      up.handle.span.updateName(up.name);
      this.#export.end(up.handle, up.attributes, up.error, up.endMs ?? now);
    }
    const route = req.route;
    if (route) this.#server.span.updateName(`${req.method} ${route.name}`);
    const error = req.error
      ? req.error.detail
      : summary.status >= 500
        ? `status ${summary.status}`
        : undefined;
    this.#export.end(this.#server, attributes(rec), error, now);
  }
}

/** The client's tracestate, passed on as it came (the SDK's TraceState interface, without parsing). */
class RawTraceState {
  readonly #value: string;
  constructor(value: string) {
    this.#value = value;
  }
  set(): RawTraceState {
    return this;
  }
  unset(): RawTraceState {
    return this;
  }
  get(): string | undefined {
    return undefined;
  }
  serialize(): string {
    return this.#value;
  }
}

/** A performance.now() time in milliseconds since the epoch, as the SDK takes it. */
function epochMs(t: number): number {
  return performance.timeOrigin + t;
}

/** A record's fields as span attributes: strings, numbers, booleans and lists of them; others as JSON. */
function attributes(rec: Record<string, unknown>): Attributes {
  const out: Attributes = {};
  for (const [k, v] of Object.entries(rec)) {
    if (v === undefined || v === null) continue;
    out[k] = attributeValue(v);
  }
  return out;
}

function attributeValue(v: unknown): AttributeValue {
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return v;
  if (typeof v === 'bigint') return Number(v);
  if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return v as string[];
  if (Array.isArray(v) && v.every((x) => typeof x === 'number')) return v as number[];
  return JSON.stringify(v);
}
