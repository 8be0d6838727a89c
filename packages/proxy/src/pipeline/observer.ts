// The one interface through which anything watches requests go by: the debug trace, the access log,
// metrics, LLM token accounting, OpenTelemetry spans. Routes are compiled once; a request nobody
// observes in detail carries no Observation, and every hook site is one `ctx.obs` check.
import type { Readable } from 'node:stream';
import { Transform } from 'node:stream';
import type { CelContext } from '../cel/cel.ts';
import type { GwError } from '../errors.ts';
import type { RequestExtensions } from './extensions.ts';

type Headers = Record<string, string | string[]>;

/** What an observer may read of a request. RequestContext implements it; observers never write. */
export interface ObservedRequest {
  readonly startTime: number;
  readonly startDate: Date;
  readonly scheme: 'http' | 'https';
  readonly httpVersion: string;
  readonly source: { address: string; port: number };
  readonly method: string;
  readonly authority: string;
  readonly host: string;
  readonly path: string;
  readonly query: string;
  readonly originalUrl: string;
  readonly headers: Headers;
  readonly route: { key: string; name: string; gateway: string; listener: string } | undefined;
  readonly backendName: string | undefined;
  readonly endpoint: string | undefined;
  readonly response: { status: number; headers: Headers } | undefined;
  readonly error: GwError | undefined;
  /** Per-feature state (the LLM slot: model, provider, usage). */
  readonly ext: Readonly<RequestExtensions>;
  celContext(): CelContext;
}

/**
 * Where a policy runs: configured on the gateway or listener and merged into the route's, on the
 * route, on the backend, or before a route is chosen (a gateway-phase policy: pre-routing).
 */
export type PolicyPhase = 'pre-routing' | 'gateway' | 'route' | 'backend';

export interface PolicyOutcome {
  policy: string;
  phase: PolicyPhase;
  /** passed: called the next layer; responded: answered itself; rejected: raised an error. */
  outcome: 'passed' | 'responded' | 'rejected';
  /** performance.now() when the policy started. */
  start: number;
  /** The status of a rejection or of the answer given. */
  status?: number | null;
  reason?: string;
}

/** A point in the chain where the request is complete in some sense, named as the trace shows it. */
export type Stage = 'pre-routing policies' | 'gateway policies' | 'route policies';

export interface RouteSelection {
  selected: {
    key: string;
    name: string;
    gateway: string;
    listener: string;
    definedAt: string;
    /** A route of a routeGroup: the routes that delegated to it, outermost first. */
    delegatedFrom?: string[];
  } | null;
  /** Effective policies of the selected route by where they were set (unredacted). */
  policies: { gateway: Record<string, unknown>; route: Record<string, unknown> };
  /** Every candidate the router considered; computed on demand, so only a trace pays for it. */
  evaluated(): { route: string; matched: boolean; selected: boolean }[];
  reason?: string;
}

export interface UpstreamInfo {
  name: string;
  /** The backend kind (static, unix, dynamic, …). */
  type: string;
  protocol: string;
  /** Names of the backend's own policies. */
  policies: string[];
}

export interface UpstreamResult {
  start: number;
  status: number | null;
  error: string | null;
}

/** Something a policy wants recorded beyond its outcome (ext_authz verdict, rate-limit headers). */
export interface PolicyEvent {
  type: string;
  fields: Record<string, unknown>;
  start: number | null;
  severity: 'info' | 'warn' | 'error';
}

export interface RequestSummary {
  /** The status the client got (499 when it went away first). */
  status: number;
  seconds: number;
}

/**
 * Every hook is optional and synchronous; an observer must not throw and must not change the
 * request. Hooks arrive in request order: start, gatewayPhase, routeSelected, policy/stage/event…, upstreamChosen,
 * upstreamStart, requestBody…, upstreamEnd, responseHead, responseBody…, error?, end.
 */
export interface RequestObserver {
  start?(req: ObservedRequest): void;
  /** The listener's gateway-phase policies (merged, unredacted), about to run before a route is chosen. */
  gatewayPhase?(req: ObservedRequest, policies: object): void;
  routeSelected?(req: ObservedRequest, sel: RouteSelection): void;
  policy?(req: ObservedRequest, outcome: PolicyOutcome): void;
  stage?(req: ObservedRequest, stage: Stage): void;
  event?(req: ObservedRequest, event: PolicyEvent): void;
  upstreamChosen?(req: ObservedRequest, upstream: UpstreamInfo): void;
  upstreamStart?(req: ObservedRequest, upstream: UpstreamInfo, target: string): void;
  upstreamEnd?(req: ObservedRequest, upstream: UpstreamInfo, result: UpstreamResult): void;
  /**
   * The one hook that writes: trace context (W3C traceparent) for the request about to leave for the
   * upstream, into the headers it is sent with. Called after upstreamStart, once per attempt.
   */
  propagate?(req: ObservedRequest, headers: Record<string, string | string[]>): void;
  /** `backend`: what the backend's chain produced; `final`: what the client is about to get. */
  responseHead?(req: ObservedRequest, at: 'backend' | 'final'): void;
  requestBody?(req: ObservedRequest, chunk: Buffer): void;
  requestBodyEnd?(req: ObservedRequest): void;
  responseBody?(req: ObservedRequest, chunk: Buffer): void;
  responseBodyEnd?(req: ObservedRequest): void;
  error?(req: ObservedRequest, err: GwError): void;
  end?(req: ObservedRequest, summary: RequestSummary): void;
}

/** Produces an observer for the requests it wants to watch (a claimed trace, a sampled span). */
export interface ObserverSource {
  attach(req: ObservedRequest): RequestObserver | undefined;
}

const DETAIL_HOOKS = [
  'start',
  'gatewayPhase',
  'routeSelected',
  'policy',
  'stage',
  'event',
  'upstreamChosen',
  'upstreamStart',
  'upstreamEnd',
  'propagate',
  'responseHead',
  'requestBody',
  'requestBodyEnd',
  'responseBody',
  'responseBodyEnd',
  'error',
] as const satisfies readonly (keyof RequestObserver)[];

/** Whether an observer needs more than the end of a request (and so an Observation per request). */
export function wantsDetail(o: RequestObserver): boolean {
  return DETAIL_HOOKS.some((h) => o[h] !== undefined);
}

/** The observers of one request, and the fan-out of each hook to them. */
export class Observation {
  readonly #observers: RequestObserver[];
  #requestBody = false;
  #responseBody = false;

  constructor(observers: RequestObserver[] = []) {
    this.#observers = [];
    for (const o of observers) this.add(o);
  }

  add(o: RequestObserver): void {
    this.#observers.push(o);
    if (o.requestBody || o.requestBodyEnd) this.#requestBody = true;
    if (o.responseBody || o.responseBodyEnd) this.#responseBody = true;
  }

  get wantsRequestBody(): boolean {
    return this.#requestBody;
  }

  get wantsResponseBody(): boolean {
    return this.#responseBody;
  }

  start(req: ObservedRequest): void {
    for (const o of this.#observers) o.start?.(req);
  }
  gatewayPhase(req: ObservedRequest, policies: object): void {
    for (const o of this.#observers) o.gatewayPhase?.(req, policies);
  }
  routeSelected(req: ObservedRequest, sel: RouteSelection): void {
    for (const o of this.#observers) o.routeSelected?.(req, sel);
  }
  policy(req: ObservedRequest, outcome: PolicyOutcome): void {
    for (const o of this.#observers) o.policy?.(req, outcome);
  }
  stage(req: ObservedRequest, stage: Stage): void {
    for (const o of this.#observers) o.stage?.(req, stage);
  }
  event(
    req: ObservedRequest,
    type: string,
    fields: Record<string, unknown>,
    start: number | null = null,
    severity: PolicyEvent['severity'] = 'info',
  ): void {
    const e: PolicyEvent = { type, fields, start, severity };
    for (const o of this.#observers) o.event?.(req, e);
  }
  upstreamChosen(req: ObservedRequest, u: UpstreamInfo): void {
    for (const o of this.#observers) o.upstreamChosen?.(req, u);
  }
  upstreamStart(req: ObservedRequest, u: UpstreamInfo, target: string): void {
    for (const o of this.#observers) o.upstreamStart?.(req, u, target);
  }
  upstreamEnd(req: ObservedRequest, u: UpstreamInfo, r: UpstreamResult): void {
    for (const o of this.#observers) o.upstreamEnd?.(req, u, r);
  }
  propagate(req: ObservedRequest, headers: Record<string, string | string[]>): void {
    for (const o of this.#observers) o.propagate?.(req, headers);
  }
  responseHead(req: ObservedRequest, at: 'backend' | 'final'): void {
    for (const o of this.#observers) o.responseHead?.(req, at);
  }
  requestBody(req: ObservedRequest, chunk: Buffer): void {
    for (const o of this.#observers) o.requestBody?.(req, chunk);
  }
  requestBodyEnd(req: ObservedRequest): void {
    for (const o of this.#observers) o.requestBodyEnd?.(req);
  }
  responseBody(req: ObservedRequest, chunk: Buffer): void {
    for (const o of this.#observers) o.responseBody?.(req, chunk);
  }
  responseBodyEnd(req: ObservedRequest): void {
    for (const o of this.#observers) o.responseBodyEnd?.(req);
  }
  error(req: ObservedRequest, err: GwError): void {
    for (const o of this.#observers) o.error?.(req, err);
  }
  end(req: ObservedRequest, summary: RequestSummary): void {
    for (const o of this.#observers) o.end?.(req, summary);
  }
}

/**
 * Reports a body's chunks as they pass, without buffering it: a Buffer at once, a stream through a
 * pass-through transform. Used where a body leaves the gateway (to the backend, to the client).
 */
export function observeBody(
  body: Readable | Buffer,
  onChunk: (chunk: Buffer) => void,
  onEnd: () => void,
): Readable | Buffer {
  if (Buffer.isBuffer(body)) {
    if (body.length > 0) onChunk(body);
    onEnd();
    return body;
  }
  const tap = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      onChunk(chunk);
      cb(null, chunk);
    },
    flush(cb) {
      onEnd();
      cb();
    },
  });
  body.on('error', (err) => tap.destroy(err));
  tap.on('close', () => {
    if (!body.readableEnded) body.destroy();
  });
  body.pipe(tap);
  return tap;
}
