// Streams a response body to the client with backpressure. Node's stream.pipeline() costs an
// AbortController (and a DOMException) per call and keeps end-of-stream listeners on keep-alive
// sockets; on the hot path a few listeners that remove themselves are all that is needed.
import type { Readable, Writable } from 'node:stream';
import { discard } from './body.ts';
import { bodyChurned } from './body-churn.ts';

export function pump(
  body: Readable,
  res: Writable,
  onError: (err: Error) => void,
  /** The upstream's trailers once its body has ended (gRPC's status), to send after the body. */
  trailers?: () => Record<string, string> | undefined,
): void {
  const onData = (chunk: Buffer) => {
    bodyChurned(chunk.length);
    if (!res.write(chunk)) body.pause();
  };
  const onDrain = () => body.resume();
  const onEnd = () => {
    cleanup();
    const t = trailers?.();
    // node's HTTP/1 and HTTP/2 answers take trailers (HTTP/1 sends them when chunked); gw's own
    // HTTP/1 server's answer does not
    const add = (res as unknown as { addTrailers?: (h: Record<string, string>) => void }).addTrailers;
    if (t && typeof add === 'function') add.call(res, t);
    res.end();
  };
  const onBodyError = (err: Error) => {
    cleanup();
    onError(err);
    res.destroy(err);
  };
  const onResClose = () => {
    cleanup();
    // The client is gone before the body ended: stop reading from upstream.
    if (!body.readableEnded) discard(body);
  };
  const cleanup = () => {
    body.off('data', onData);
    body.off('end', onEnd);
    body.off('error', onBodyError);
    res.off('drain', onDrain);
    res.off('close', onResClose);
  };
  body.on('data', onData);
  body.on('end', onEnd);
  body.on('error', onBodyError);
  res.on('drain', onDrain);
  res.on('close', onResClose);
}
