// Reading a body into memory up to a limit, for the few policies that need the whole body. Past the
// limit nothing is lost: the caller gets back a stream of everything read plus the rest.
import { IncomingMessage } from 'node:http';
import { PassThrough, Readable } from 'node:stream';
import { GwError } from '../errors.ts';
import type { RequestContext } from './context.ts';

const CLOSED_EARLY = 'the body was closed before it ended';

/** Past the limit: `stream` is the whole body again; `head` the chunks read before the limit was passed. */
export type Buffered = { ok: true; data: Buffer } | { ok: false; stream: Readable; head: readonly Buffer[] };

/** The request whose abort (its deadline, a stalled body, the client gone) ends a read that waits. */
export type AbortSource = Pick<RequestContext, 'addAbortHook' | 'removeAbortHook'>;

/**
 * Reads `body` into memory up to `limit`. `request`: while the read waits for more, an abort of the
 * request (timeout.requestTimeout, requestBodyIdleTimeout) ends it with the abort's reason, so a
 * client that stops sending mid-body cannot hold the request past its deadline.
 */
export async function bufferUpTo(
  body: Readable,
  limit: number,
  declaredLength?: number,
  request?: AbortSource,
): Promise<Buffered> {
  if (declaredLength !== undefined && declaredLength > limit) return { ok: false, stream: body, head: [] };
  const whole = takeComplete(body, limit);
  if (whole) return { ok: true, data: whole };
  // A stream destroyed before its end (its client went away) emits 'close' and never 'end'.
  if (body.destroyed && !body.readableEnded) throw new Error(CLOSED_EARLY);
  const chunks: Buffer[] = [];
  let size = 0;
  return await new Promise<Buffered>((resolve, reject) => {
    let settled = false;
    const hook = {
      abort(reason: Error) {
        if (settled) return;
        settled = true;
        cleanup();
        reject(reason);
      },
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      chunks.push(chunk);
      if (size > limit) {
        settled = true;
        cleanup();
        body.pause();
        resolve({ ok: false, stream: prepend(chunks, body), head: chunks });
      }
    };
    const onEnd = () => {
      settled = true;
      cleanup();
      resolve({ ok: true, data: chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size) });
    };
    const onError = (err: Error) => {
      settled = true;
      cleanup();
      reject(err);
    };
    // 'close' can come just ahead of 'end' (HTTP/2's compatibility layer closes right after the
    // last push), so it is judged a turn later, once an 'end' or 'error' due has been delivered.
    const onClose = () => {
      setImmediate(() => {
        if (settled) return;
        cleanup();
        reject(new Error(CLOSED_EARLY));
      });
    };
    const cleanup = () => {
      body.off('data', onData);
      body.off('end', onEnd);
      body.off('error', onError);
      body.off('close', onClose);
      request?.removeAbortHook(hook);
    };
    body.on('data', onData);
    body.on('end', onEnd);
    body.on('error', onError);
    body.on('close', onClose);
    // last: an already aborted request ends the read at once (and takes the listeners off again)
    request?.addAbortHook(hook);
  });
}

const EMPTY = Buffer.alloc(0);

/**
 * The request's whole body (empty when it has none), read into memory and kept as ctx.body so a
 * retry or failover can send it again. Over `limit` (config.maxBufferSize): a 413 that says so, and
 * ctx.body is the whole body again as a stream.
 */
export async function readRequestBody(ctx: RequestContext, limit: number): Promise<Buffer> {
  const b = ctx.body;
  if (b === null) return EMPTY;
  if (Buffer.isBuffer(b)) return b;
  const r = await bufferUpTo(b, limit, contentLength(ctx.headers), ctx);
  if (!r.ok) {
    ctx.body = r.stream;
    throw new GwError(
      'GW_ERR_REQUEST_TOO_LARGE',
      `the request body is larger than the buffer limit (${limit} bytes; config.maxBufferSize)`,
    );
  }
  ctx.body = r.data;
  return r.data;
}

/**
 * A body stream that says, as IncomingMessage does, when all of it has arrived: `complete` is set
 * before its end is pushed. An upstream's answer is one (upstream/exchange.ts).
 */
export class CompletableBody extends Readable {
  complete = false;
}

/**
 * A body that has all arrived and sits unread in memory, taken in one piece: no listeners, no turn
 * of the event loop. Undefined when some of it is still to come, someone else reads it, or it is
 * over `limit` bytes. Node hands over a request's head before it parses the body, even one from the
 * same packet, and runs the handler's awaits in between: a request body is complete here only when
 * an earlier step waited on I/O (an auth server, a remote rate limit, a token exchange). An
 * upstream's answer that came in one packet is complete by the time its head is awaited.
 */
export function takeComplete(body: Readable, limit: number): Buffer | undefined {
  if (!(body instanceof IncomingMessage || body instanceof CompletableBody) || !body.complete)
    return undefined;
  if (body.readableFlowing === true || body.readableEnded || body.destroyed) return undefined;
  if (body.readableLength > limit || body.readableEncoding !== null || body.listenerCount('data') > 0)
    return undefined;
  return (body.read() as Buffer | null) ?? EMPTY;
}

/** A stream that yields `head` and then the remainder of `rest`. */
export function prepend(head: Buffer[], rest: Readable): Readable {
  const out = new PassThrough();
  for (const c of head) out.write(c);
  rest.pipe(out);
  rest.on('error', (err) => out.destroy(err));
  out.on('close', () => {
    if (!rest.readableEnded) rest.destroy();
  });
  rest.resume();
  return out;
}

export function contentLength(headers: Record<string, string | string[]>): number | undefined {
  const v = headers['content-length'];
  if (typeof v !== 'string') return undefined;
  const n = Number(v);
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

const ignore = () => {};

/** Throws a body away without reading it; an abort error it may emit afterwards is expected. */
export function discard(body: Readable | Buffer | null | undefined): void {
  if (!body || Buffer.isBuffer(body) || body.destroyed) return;
  body.on('error', ignore);
  body.destroy();
}

/**
 * Keeps a streamed request body in memory, up to `limit`, so the request can be sent again (retry,
 * failover). Returns false when the body is larger: then it streams through once, unchanged.
 */
export async function bufferForReplay(ctx: RequestContext, limit: number): Promise<boolean> {
  if (!ctx.body || Buffer.isBuffer(ctx.body)) return true;
  const r = await bufferUpTo(ctx.body, limit, contentLength(ctx.headers), ctx);
  if (!r.ok) {
    ctx.body = r.stream;
    return false;
  }
  ctx.body = r.data;
  ctx.headers['content-length'] = String(r.data.length);
  return true;
}
