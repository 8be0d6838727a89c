// One request/response exchange with an upstream through undici's dispatch API and a handler of gw's
// own, in place of undici's `request()`. request() wraps each call in an AsyncResource, listens on an
// AbortSignal, parses the response head into an object (which gw then copied without the hop-by-hop
// names) and hands the body over as its BodyReadable. Here the head is parsed once, straight into
// what gw forwards, the body is a plain Readable, and the caller aborts through `abort()`.
import { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { CompletableBody } from '../pipeline/body.ts';
import { connectionNames, type Headers, HOP_BY_HOP } from '../pipeline/context.ts';
import { errors } from './undici.ts';

export interface UpstreamResponse {
  status: number;
  /** As received, without hop-by-hop headers and those the `connection` header names. */
  headers: Headers;
  body: Readable;
  /** The head as received: name and value in turn, names as the upstream spelled them. */
  raw: readonly Buffer[];
}

const noop = (): void => {};
/** As undici's request(): the body buffers up to this much before the upstream is paused. */
const HIGH_WATER_MARK = 64 * 1024;

/**
 * Sends one request. `response` settles with the head (or the error that came first); the body
 * streams after it. `abort(reason)` ends the exchange at any point: before the head `response`
 * rejects with `reason`, after it the body is destroyed with it.
 */
export class Exchange implements Dispatcher.DispatchHandler {
  readonly response: Promise<UpstreamResponse>;
  #resolve!: (r: UpstreamResponse) => void;
  #reject!: (err: Error) => void;
  #settled = false;
  #undiciAbort: ((err?: Error) => void) | undefined = undefined;
  #reason: Error | undefined = undefined;
  #body: ResponseBody | undefined = undefined;
  /** The request body, when a stream: destroyed when the exchange fails, as request() does. */
  #requestBody: Readable | undefined;

  constructor(dispatcher: Dispatcher, opts: Dispatcher.DispatchOptions) {
    this.response = new Promise<UpstreamResponse>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    const body = opts.body;
    this.#requestBody = body instanceof Readable ? body : undefined;
    // A dispatcher that throws (closed, bad options) reports through onError.
    dispatcher.dispatch(opts, this);
  }

  abort(reason: Error): void {
    if (this.#reason !== undefined) return;
    this.#reason = reason;
    // Before onConnect: the abort happens there.
    this.#undiciAbort?.(reason);
  }

  onConnect(abort: (err?: Error) => void): void {
    if (this.#reason !== undefined) abort(this.#reason);
    else this.#undiciAbort = abort;
  }

  onHeaders(status: number, raw: Buffer[], resume: () => void): boolean {
    // 1xx interim answers (100 Continue, 103 Early Hints) are not forwarded.
    if (status < 200) return true;
    const abort = this.#undiciAbort ?? noop;
    const body = new ResponseBody(resume, abort);
    this.#body = body;
    this.#settled = true;
    this.#resolve({ status, headers: forwardedHeaders(raw), body, raw });
    return true;
  }

  onData(chunk: Buffer): boolean {
    return this.#body?.push(chunk) ?? true;
  }

  onComplete(trailers?: Buffer[] | string[] | Record<string, string | string[] | undefined> | null): void {
    const body = this.#body;
    if (!body) return;
    const t = trailerFields(trailers);
    if (t) body.trailers = t;
    body.complete = true;
    body.push(null);
  }

  onError(err: Error): void {
    const body = this.#body;
    this.#body = undefined;
    if (!this.#settled) {
      this.#settled = true;
      this.#reject(err);
    }
    // As request() does: the response body errors a turn later, with a listener so that a body
    // nobody reads yet does not throw; a request body still streaming is destroyed.
    if (body) {
      queueMicrotask(() => {
        body.on('error', noop);
        body.destroy(err);
      });
    }
    const rb = this.#requestBody;
    this.#requestBody = undefined;
    if (rb && !rb.destroyed) {
      rb.on('error', noop);
      // The client's own request: destroyed with its socket attached, it would take the connection
      // down before the gateway's answer (a 408, a 504) is written. Detached first, as undici does.
      if (rb instanceof IncomingMessage) Object.assign(rb, { socket: null });
      rb.destroy(err);
    }
  }
}

/**
 * The response body: reading resumes the upstream; destroying it before its end aborts the exchange.
 * `complete` once all of it has arrived, so that a reader who wants it whole can take it at once.
 */
class ResponseBody extends CompletableBody {
  /** What came after the body (gRPC's grpc-status and grpc-message), for the client's answer. */
  trailers: Record<string, string> | undefined = undefined;
  readonly #resume: () => void;
  readonly #abort: (err?: Error) => void;

  constructor(resume: () => void, abort: (err?: Error) => void) {
    super({ highWaterMark: HIGH_WATER_MARK });
    this.#resume = resume;
    this.#abort = abort;
  }

  override _read(): void {
    this.#resume();
  }

  override _destroy(err: Error | null, callback: (err?: Error | null) => void): void {
    let e = err;
    if (!e && !this.readableEnded) e = new errors.RequestAbortedError();
    if (e) this.#abort(e);
    callback(e);
  }
}

/**
 * The response head as gw forwards it: lower-case names, repeated headers as arrays, without
 * hop-by-hop headers or those the `connection` header lists.
 */
export function forwardedHeaders(raw: Buffer[]): Headers {
  const out: Headers = {};
  let connection: string | undefined;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = (raw[i] as Buffer).toString('latin1').toLowerCase();
    const value = (raw[i + 1] as Buffer).toString('latin1');
    if (name === 'connection') connection = connection === undefined ? value : `${connection},${value}`;
    if (HOP_BY_HOP.has(name)) continue;
    // A header named like an Object.prototype member must stay an own property of the result.
    if (!Object.hasOwn(out, name)) {
      if (name === '__proto__')
        Object.defineProperty(out, name, { value, enumerable: true, writable: true, configurable: true });
      else out[name] = value;
      continue;
    }
    const prev = out[name] as string | string[];
    if (typeof prev === 'string') out[name] = [prev, value];
    else prev.push(value);
  }
  const extra = connectionNames(connection);
  if (extra) for (const k of extra) if (Object.hasOwn(out, k)) delete out[k];
  return out;
}

/**
 * An answer's trailers as header fields (lower-case names), whichever way undici hands them over: name
 * and value in turn (HTTP/1, or HTTP/2 through its handler wrapper) or node's object. None: undefined.
 */
function trailerFields(
  t: Buffer[] | string[] | Record<string, string | string[] | undefined> | null | undefined,
): Record<string, string> | undefined {
  if (!t) return undefined;
  const out: Record<string, string> = {};
  let n = 0;
  if (Array.isArray(t)) {
    for (let i = 0; i + 1 < t.length; i += 2) {
      const name = String(t[i]).toLowerCase();
      out[name] = String(t[i + 1]);
      n++;
    }
  } else {
    for (const [name, v] of Object.entries(t)) {
      // node's own keys on an HTTP/2 trailers object (its raw pseudo-headers) are not fields
      if (v === undefined || name.startsWith(':')) continue;
      out[name.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
      n++;
    }
  }
  return n > 0 ? out : undefined;
}
