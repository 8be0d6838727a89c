// The access log as a request observer: one record per finished request, shaped by the frontend's
// `accessLog` policy (CEL filter, fields added by CEL, fields removed). The record and its shaping
// are also what the spans of a traced request carry (tracing.ts), with the tracing policy's own.

import { setCelField } from '@gw/api/runtime';
import { finalOutcome } from '../a2a/info.ts';
import { type CelContext, type CelProgram, celTrue, compileCel } from '../cel/cel.ts';
import type { FrontendIR } from '../config/ir.ts';
import type { GwError } from '../errors.ts';
import type { ObservedRequest, RequestObserver, RequestSummary } from '../pipeline/observer.ts';
import { redactQuery } from '../trace/redact.ts';
import type { RecordLog } from './logger.ts';

/**
 * A body's bytes as they passed to the backend or the client, up to a limit: what `request.body` or
 * `response.body` is to a log or span field when no policy read the body into memory (a longer body
 * is its first `limit` bytes; the body itself streams on unchanged).
 */
export class BodyCapture {
  readonly #limit: number;
  readonly #chunks: Buffer[] = [];
  #size = 0;

  constructor(limit: number) {
    this.#limit = limit;
  }

  add(chunk: Buffer): void {
    const room = this.#limit - this.#size;
    if (room <= 0 || chunk.length === 0) return;
    const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
    this.#chunks.push(part);
    this.#size += part.length;
  }

  bytes(): Buffer {
    return this.#chunks.length === 1 ? (this.#chunks[0] as Buffer) : Buffer.concat(this.#chunks, this.#size);
  }
}

/** Bodies captured for one request's record. */
export interface CapturedBodies {
  request?: BodyCapture;
  response?: BodyCapture;
}

/** A filter that keeps some requests, fields added by CEL and fields removed, compiled once. */
export class RecordShape {
  readonly #filter: CelProgram | undefined;
  readonly #add: [string, CelProgram][];
  readonly #remove: Set<string>;
  /** Whether an expression reads request.body / response.body: those bodies are captured as they pass. */
  readonly readsBody: { request: boolean; response: boolean };

  /** The record's field names (accessLog.preset): OpenTelemetry's, or gw's when unset. */
  readonly preset: 'otel' | undefined;

  constructor(
    s: {
      preset?: 'otel' | undefined;
      filter?: string | undefined;
      add?: Record<string, string> | undefined;
      remove?: string[] | undefined;
    } = {},
  ) {
    this.preset = s.preset;
    this.#filter = s.filter ? compileCel(s.filter) : undefined;
    this.#add = Object.entries(s.add ?? {}).map(([k, v]) => [k, compileCel(v)] as [string, CelProgram]);
    this.#remove = new Set(s.remove ?? []);
    const programs = [...(this.#filter ? [this.#filter] : []), ...this.#add.map(([, p]) => p)];
    this.readsBody = {
      request: programs.some((p) => p.reads('request', 'body')),
      response: programs.some((p) => p.reads('response', 'body')),
    };
  }

  /** The CEL view of a finished request, when the filter or an added field needs one. */
  cel(req: ObservedRequest, status: number, bodies?: CapturedBodies): CelContext | undefined {
    if (!this.#filter && this.#add.length === 0) return undefined;
    const cel = req.celContext();
    if (req.response === undefined) cel.response = { code: status, headers: {} };
    // a body no policy held in memory: the bytes that passed (none passed: empty)
    const request = cel.request as Record<string, unknown>;
    if (this.readsBody.request && request.body === undefined)
      request.body = bodies?.request?.bytes() ?? EMPTY;
    const response = cel.response as Record<string, unknown>;
    if (this.readsBody.response && response.body === undefined)
      response.body = bodies?.response?.bytes() ?? EMPTY;
    return cel;
  }

  /** Whether the filter keeps the request (an error or a non-true value drops it). */
  keeps(cel: CelContext | undefined): boolean {
    return !this.#filter || (cel !== undefined && celTrue(this.#filter, cel));
  }

  /** Removes the removed fields, then adds the added ones (a failing expression adds nothing). */
  apply(rec: Record<string, unknown>, cel: CelContext | undefined): void {
    for (const k of this.#remove) delete rec[k];
    if (!cel) return;
    for (const [k, p] of this.#add) {
      const v = p.eval(cel);
      // flatten(x): one field per entry of x (`k.<key>`)
      if (v !== undefined) setCelField(rec, k, v);
    }
  }
}

/** Where finished requests' records go: the access log, an OTLP collector. */
export interface RecordSink {
  /** Whether records are wanted now (the log level, an exporter still loading). */
  enabled(): boolean;
  write(rec: Record<string, unknown>): void;
}

/**
 * One record per finished request into a sink, shaped by `shape`: the access log (its policy's
 * filter, fields added and removed), and accessLog.otlp's records with their own shaping.
 */
export class RecordObserver implements RequestObserver {
  readonly #sink: RecordSink;
  readonly #shape: RecordShape;
  /** Query parameters that carry credentials: logged as [redacted]. */
  readonly #credentialParams: ReadonlySet<string>;

  readonly #bodies = new WeakMap<ObservedRequest, CapturedBodies>();
  /** Set only when a field reads a body: otherwise requests need no observation beyond their end. */
  requestBody?: (req: ObservedRequest, chunk: Buffer) => void;
  responseBody?: (req: ObservedRequest, chunk: Buffer) => void;

  constructor(
    sink: RecordSink,
    shape: RecordShape,
    credentialParams: readonly string[] = [],
    /** The most of a body a field may read (the global buffer limit). */
    bodyLimit = DEFAULT_BODY_LIMIT,
  ) {
    this.#sink = sink;
    this.#shape = shape;
    this.#credentialParams = new Set(credentialParams);
    for (const which of ['request', 'response'] as const) {
      if (!this.#shape.readsBody[which]) continue;
      this[`${which}Body`] = (req, chunk) => {
        let bodies = this.#bodies.get(req);
        if (!bodies) {
          bodies = {};
          this.#bodies.set(req, bodies);
        }
        let capture = bodies[which];
        if (!capture) {
          capture = new BodyCapture(bodyLimit);
          bodies[which] = capture;
        }
        capture.add(chunk);
      };
    }
  }

  end(req: ObservedRequest, summary: RequestSummary): void {
    if (!this.#sink.enabled()) return;
    const cel = this.#shape.cel(req, summary.status, this.#bodies.get(req));
    if (!this.#shape.keeps(cel)) return;
    const rec = requestRecord(req, summary, this.#credentialParams, this.#shape.preset);
    this.#shape.apply(rec, cel);
    this.#sink.write(rec);
  }
}

/** The access log: records at info level, shaped by the frontend's accessLog policy. */
export function accessLogObserver(
  log: RecordLog,
  frontend: FrontendIR,
  credentialParams: readonly string[] = [],
  bodyLimit = DEFAULT_BODY_LIMIT,
): RecordObserver {
  return new RecordObserver(
    { enabled: () => log.isLevelEnabled('info'), write: (rec) => log.info(rec) },
    new RecordShape(frontend.accessLog),
    credentialParams,
    bodyLimit,
  );
}

const EMPTY = Buffer.alloc(0);
/** agentgateway's default body buffer limit, for an observer built without the config's. */
const DEFAULT_BODY_LIMIT = 2 * 1024 * 1024;

/** What gw records of a finished request: the access-log line's fields, before any shaping. */
export function requestRecord(
  req: ObservedRequest,
  { status, seconds }: RequestSummary,
  credentialParams: ReadonlySet<string>,
  preset?: 'otel',
): Record<string, unknown> {
  const route = req.route;
  const duration = `${Math.round(seconds * 1e4) / 10}ms`;
  const rec: Record<string, unknown> =
    preset === 'otel'
      ? otelRecord(req, status, credentialParams, duration)
      : {
          gateway: route?.gateway,
          listener: route?.listener,
          route: route?.key,
          endpoint: req.endpoint,
          'src.addr': `${req.source.address}:${req.source.port}`,
          'http.method': req.method,
          'http.host': req.authority,
          'http.path': redactQuery(req.originalUrl, credentialParams),
          'http.version': `HTTP/${req.httpVersion}`,
          'http.status': status,
          duration,
        };
  if (req.error) rec.error = logged(req.error);
  // as agentgateway writes it: the retry the answer came from
  if (req.ext.retryAttempt !== undefined) rec['retry.attempt'] = req.ext.retryAttempt;
  const upgrade = req.ext.upgrade;
  if (upgrade) {
    // a CONNECT tunnel has no protocol of its own
    if (upgrade.protocol !== '') rec['upgrade.protocol'] = upgrade.protocol;
    // Counted on the client's connection from the switch on: what the tunnel carried each way.
    if (upgrade.spliced && upgrade.socket) {
      rec['upgrade.bytesReceived'] = upgrade.socket.bytesRead - upgrade.spliced.read;
      rec['upgrade.bytesSent'] = upgrade.socket.bytesWritten - upgrade.spliced.written;
    }
  }
  const llm = req.ext.llm;
  if (llm) {
    rec['llm.provider'] = llm.provider;
    rec['llm.requestModel'] = llm.requestModel;
    rec['llm.model'] = llm.model;
    rec['llm.responseModel'] = llm.responseModel;
    rec['llm.streaming'] = llm.streaming;
    if (llm.usage) {
      rec['llm.inputTokens'] = llm.usage.input;
      rec['llm.outputTokens'] = llm.usage.output;
      if (llm.usage.cachedInput > 0) rec['llm.cachedInputTokens'] = llm.usage.cachedInput;
      if (llm.usage.reasoning > 0) rec['llm.reasoningTokens'] = llm.usage.reasoning;
      const cost = llm.cost;
      if (cost) rec['llm.cost'] = cost.total;
    }
    if (llm.firstOutputAt !== undefined)
      rec['llm.timeToFirstToken'] =
        `${Math.round(Math.max(0, llm.firstOutputAt - req.startTime) * 10) / 10}ms`;
    if (llm.usageUnread !== undefined) rec['llm.usageUnread'] = llm.usageUnread;
    if (llm.guardrails.length > 0)
      rec['llm.guardrails'] = llm.guardrails.map(
        (g) => `${g.phase}:${g.guard}:${g.action}${g.applied ? '' : '(not applied)'}:${g.rule}`,
      );
  }
  const mcp = req.ext.mcp;
  if (mcp) {
    rec['mcp.method'] = mcp.method;
    if (mcp.target) rec['mcp.target'] = mcp.target;
    if (mcp.outcome) rec['mcp.outcome'] = mcp.outcome;
    const item = mcp.tool?.name ?? mcp.prompt?.name ?? mcp.resource?.uri;
    if (item) rec[mcp.tool ? 'mcp.tool' : mcp.prompt ? 'mcp.prompt' : 'mcp.resource'] = item;
    if (mcp.failed) rec['mcp.failedTargets'] = mcp.failed;
    if (mcp.guardrails?.length)
      rec['mcp.guardrails'] = mcp.guardrails.map(
        (g) => `${g.phase}:processor${g.processor}:${g.action}${g.applied ? '' : '(not applied)'}`,
      );
  }
  const a2a = req.ext.a2a;
  if (a2a) {
    rec['a2a.method'] = a2a.method;
    if (a2a.taskId) rec['a2a.taskId'] = a2a.taskId;
    if (a2a.taskState) rec['a2a.taskState'] = a2a.taskState;
    rec['a2a.outcome'] = finalOutcome(a2a, req.error);
    if (a2a.errorCode !== undefined) rec['a2a.errorCode'] = a2a.errorCode;
  }
  return rec;
}

/**
 * The record's first fields with the request's HTTP fields under OpenTelemetry's names
 * (accessLog.preset: otel): the client's address and port apart, the Host split into server.address
 * and server.port (when the Host names one), the path and the query (its credentials redacted,
 * without its `?`) apart, the protocol version as OpenTelemetry writes it (`1.1`, `2`).
 */
function otelRecord(
  req: ObservedRequest,
  status: number,
  credentialParams: ReadonlySet<string>,
  duration: string,
): Record<string, unknown> {
  const route = req.route;
  // an absolute-form target (a forward proxy's request) is a whole URL: its path and query only
  const target = req.originalUrl.startsWith('/') ? req.originalUrl : pathAndQueryOf(req.originalUrl);
  const url = redactQuery(target, credentialParams);
  const q = url.indexOf('?');
  const port = /:([0-9]{1,5})$/.exec(req.authority)?.[1];
  return {
    gateway: route?.gateway,
    listener: route?.listener,
    route: route?.key,
    endpoint: req.endpoint,
    'client.address': req.source.address,
    'client.port': req.source.port,
    'http.request.method': req.method,
    'server.address': req.host,
    ...(port !== undefined ? { 'server.port': Number(port) } : {}),
    'url.scheme': req.scheme,
    'url.path': q < 0 ? url : url.slice(0, q),
    ...(q >= 0 && q < url.length - 1 ? { 'url.query': url.slice(q + 1) } : {}),
    'network.protocol.version': req.httpVersion === '2.0' ? '2' : req.httpVersion,
    'http.response.status_code': status,
    duration,
  };
}

/** The path and query of an absolute URL (`http://h/p?q` → `/p?q`); the text itself when it is none. */
function pathAndQueryOf(target: string): string {
  try {
    const u = new URL(target);
    return `${u.pathname}${u.search}`;
  } catch {
    return target;
  }
}

/**
 * An error as the log shows it: the reason the client was given and, when it had one, its cause (a
 * service's connection error, say), which the client is not told.
 */
function logged(e: GwError): string {
  const cause = e.cause;
  if (!(cause instanceof Error) || cause.message === '' || cause.message === e.detail) return e.detail;
  return `${e.detail}: ${cause.message}`;
}
