// The request-body idle timeout: a client that starts a body and stops sending it is answered 408
// instead of holding its request, and the upstream request it feeds, open for good. Only the client's
// silence counts: while the gateway itself is not reading (policies still running, the upstream
// applying backpressure) the body is not idle.
import type { IncomingMessage } from 'node:http';
import { constants, type Http2ServerRequest, type ServerHttp2Stream } from 'node:http2';
import { GwError } from '../errors.ts';
import type { RequestContext } from '../pipeline/context.ts';
import { Roster, type RosterEntry } from './roster.ts';

/**
 * Watches `ctx`'s request body until it ends. Returns the function that stops watching, which the
 * caller runs when the response closes.
 */
export function watchRequestBody(ctx: RequestContext, ms: number): () => void {
  const req = ctx.req;
  if ('stream' in req) return watchStream(ctx, req, ms);
  return watchSocket(ctx, ms);
}

/**
 * Someone reads the body and has taken all that arrived: more is wanted and the client owes it. A
 * reader is a flowing stream ('data', a pipe) or one waiting on 'readable' (`for await`, which
 * leaves the stream paused: extProc's streamed body).
 */
function waitingForClient(req: RequestContext['req']): boolean {
  return (req.readableFlowing === true || req.listenerCount('readable') > 0) && req.readableLength === 0;
}

function stalled(ctx: RequestContext): void {
  ctx.abort(new GwError('GW_ERR_REQUEST_BODY_TIMEOUT'));
  const req = ctx.req;
  if ('stream' in req) closeAfterAnswer(req.stream);
  else if ('shouldKeepAlive' in ctx.res) ctx.res.shouldKeepAlive = false;
}

/**
 * The answer ends only our side of the stream; the client's stays open until it sends the rest. Once
 * the answer is out the stream is closed with RST_STREAM NO_ERROR (RFC 9113 §8.1).
 */
function closeAfterAnswer(stream: ServerHttp2Stream): void {
  const close = () => {
    if (!stream.closed) stream.close(constants.NGHTTP2_NO_ERROR);
  };
  if (stream.writableFinished) close();
  else stream.once('finish', close);
}

/** HTTP/2: the stream's own inactivity timer (reset by each frame the stream sends or receives). */
function watchStream(ctx: RequestContext, req: Http2ServerRequest, ms: number): () => void {
  const stream = req.stream;
  const onTimeout = () => {
    if (waitingForClient(req)) stalled(ctx);
    else stream.setTimeout(ms, onTimeout);
  };
  stream.setTimeout(ms, onTimeout);
  const stop = () => {
    if (!stream.destroyed) stream.setTimeout(0, onTimeout);
  };
  // Once the body has ended the stream's timer must not read the wait for the answer as a stall.
  req.once('end', stop);
  return stop;
}

/**
 * HTTP/1: the bytes read on the connection, sampled by one sweep per timeout value and thread (a
 * request with a body costs a set entry, not a timer and two listeners of its own). A request whose
 * connection read nothing for `ms` while its body was wanted has stalled; one that read something
 * starts its quiet time again. The sweep runs every quarter of `ms`, and a request's quiet time
 * starts at the first sweep after it: a stall is seen between `ms` and 1.5 × `ms` after the last byte.
 */
function watchSocket(ctx: RequestContext, ms: number): () => void {
  let sweep = sweeps.get(ms);
  if (!sweep) {
    sweep = new SocketSweep(ms);
    sweeps.set(ms, sweep);
  }
  // The first sweep takes the first sample: the quiet time counts from there.
  const w: SocketWatch = { ctx, seen: -1, quietSince: 0, entry: undefined };
  sweep.add(w);
  const s = sweep;
  return () => s.delete(w);
}

interface SocketWatch {
  ctx: RequestContext;
  /** Its place in the sweep's roster while watched. */
  entry: RosterEntry<SocketWatch> | undefined;
  /** The connection's bytesRead when last sampled changed (or the gateway was not reading); -1 at first. */
  seen: number;
  quietSince: number;
}

const sweeps = new Map<number, SocketSweep>();

/**
 * The watched requests are a Roster, not a Set: a Set that took in and let go of each request with a
 * body kept every one alive into the old generation (server/roster.ts). Measured with node
 * --trace-gc-nvp, pinned, a 1 KiB POST on the plain route under wrk -c64: 1.4 MiB promoted and 1.4
 * MiB surviving each scavenge, 3.3 ms pauses, and about 5 KiB promoted and 0.3 MiB surviving, 0.9
 * ms, with the timeout off or the roster.
 */
class SocketSweep {
  readonly #ms: number;
  readonly #watched = new Roster<SocketWatch>();
  #timer: NodeJS.Timeout | undefined = undefined;

  constructor(ms: number) {
    this.#ms = ms;
  }

  add(w: SocketWatch): void {
    w.entry = this.#watched.add(w);
    if (this.#timer === undefined) {
      // A sweep that finds nothing to watch stops; the next body starts it again.
      this.#timer = setInterval(() => this.#sweep(), Math.max(10, Math.floor(this.#ms / 4)));
      this.#timer.unref();
    }
  }

  delete(w: SocketWatch): void {
    if (w.entry === undefined) return;
    this.#watched.delete(w.entry);
    w.entry = undefined;
  }

  #sweep(): void {
    if (this.#watched.size === 0) {
      clearInterval(this.#timer);
      this.#timer = undefined;
      sweeps.delete(this.#ms);
      return;
    }
    const now = performance.now();
    for (const w of this.#watched) {
      // Dropped during this walk (its response closed).
      if (w.entry === undefined) continue;
      const req = w.ctx.req as IncomingMessage;
      // Ended, or handed its connection back (an upstream failure answers the client without it).
      if (req.complete || !req.socket) {
        this.delete(w);
        continue;
      }
      const read = req.socket.bytesRead;
      if (read !== w.seen || !waitingForClient(req)) {
        w.seen = read;
        w.quietSince = now;
      } else if (now - w.quietSince >= this.#ms) {
        this.delete(w);
        stalled(w.ctx);
      }
    }
  }
}
