// The request-body idle timeout: a client that starts a body and stops sending it is answered 408
// instead of holding its request, and the upstream request it feeds, open for good. Only the client's
// silence counts: while the gateway itself is not reading (policies still running, the upstream
// applying backpressure) the body is not idle.
import type { IncomingMessage } from 'node:http';
import { constants, type Http2ServerRequest, type ServerHttp2Stream } from 'node:http2';
import { GwError } from '../errors.ts';
import type { RequestContext } from '../pipeline/context.ts';

/** Watches `ctx`'s request body until it ends or the response closes. */
export function watchRequestBody(ctx: RequestContext, ms: number): void {
  const req = ctx.req;
  // Someone reads the body and has taken all that arrived: more is wanted and the client owes it.
  const waitingForClient = () => req.readableFlowing === true && req.readableLength === 0;
  let stop: () => void;
  const stalled = () => {
    stop();
    ctx.abort(new GwError('GW_ERR_REQUEST_BODY_TIMEOUT'));
    if ('stream' in req) closeAfterAnswer(req.stream);
    else if ('shouldKeepAlive' in ctx.res) ctx.res.shouldKeepAlive = false;
  };
  if ('stream' in req) stop = watchStream(req, ms, waitingForClient, stalled);
  else stop = watchSocket(req, ms, waitingForClient, stalled);
  req.once('end', stop);
  ctx.res.once('close', stop);
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
function watchStream(
  req: Http2ServerRequest,
  ms: number,
  waiting: () => boolean,
  stalled: () => void,
): () => void {
  const stream = req.stream;
  const onTimeout = () => {
    if (waiting()) stalled();
    else stream.setTimeout(ms, onTimeout);
  };
  stream.setTimeout(ms, onTimeout);
  return () => {
    if (!stream.destroyed) stream.setTimeout(0, onTimeout);
  };
}

/**
 * HTTP/1: the bytes read on the connection, sampled once per period. The socket's own timeout is
 * node's keep-alive timer between requests, so it is left alone.
 */
function watchSocket(
  req: IncomingMessage,
  ms: number,
  waiting: () => boolean,
  stalled: () => void,
): () => void {
  const socket = req.socket;
  let seen = socket.bytesRead;
  const timer = setTimeout(() => {
    if (req.complete) return;
    const now = socket.bytesRead;
    if (now === seen && waiting()) stalled();
    else {
      seen = now;
      timer.refresh();
    }
  }, ms);
  return () => clearTimeout(timer);
}
