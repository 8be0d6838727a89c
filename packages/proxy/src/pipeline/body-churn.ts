// Collects the young generation after every CHURN_BYTES of body passed through the data plane.
//
// A body's bytes arrive in Buffers whose memory lives outside V8's heap: undici's socket reads (up to
// 64 KiB each) for answers, the HTTP parser's copies for requests. Once written on they are garbage,
// but V8 frees that memory only when it collects the Buffer objects, and it collects the young
// generation when JS objects fill it, not when outside memory grows. Streaming 1 MiB bodies allocates
// a few hundred bytes of objects per 64 KiB chunk, so scavenges come rarely; what frees the buffers
// instead is the full mark-compact V8 forces once outside memory has grown 64 MiB since the last one.
// Measured pinned on one worker, 64 connections each posting 1 MiB to an nginx that answers 1 MiB,
// 8 s of wrk: 8 scavenges and 45 mark-compacts of ~10 ms each.
//
// A scavenge frees the young Buffers' memory, and the buffers of a proxied body die young. Counting
// the bytes as they pass and scavenging every CHURN_BYTES keeps that garbage to a few MiB, and the
// mark-compacts mostly go; a scavenge of the small young generation takes well under a millisecond.
// Same load, 5 interleaved rounds: 246 scavenges and 8 mark-compacts; 123-147 -> 177-190 req/s,
// CPU per request 6.8-8.0 -> 5.2-5.6 ms, peak RSS 179-189 -> 150-169 MiB (idle 84). CHURN_BYTES of
// 2, 4, 8 and 16 MiB measured the same within the noise on node:http, and 8 MiB was chosen as the
// rarest. gw's own HTTP/1.1 server (GW_HTTP1_SERVER=net) makes far fewer objects per request, so V8
// scavenges by itself far less often there and the counted scavenges are nearly all of them: at
// 8 MiB, body buffers lived long enough to be promoted, and the same load ran 155 mark-compacts for
// 1,308 requests (node:http: 70 for 2,098). At 2 MiB: 52 for 2,120. On node:http 2 MiB measured the
// same as 8 within the noise (2,714-3,073 against 2,582-2,890 requests in 8 s, 3 alternating rounds).
//
// Small bodies never get there between V8's own scavenges; those reset nothing here, so a trickle of
// small bodies adds a scavenge every CHURN_BYTES at most. It needs `gc` (node --expose-gc, as bin/gw
// and the image run it); without it this counts and does nothing else.

import { IncomingMessage } from 'node:http';
import { Http2ServerRequest } from 'node:http2';

type Gc = (opts: { type: 'minor'; execution: 'sync' }) => void;

/** How many bytes of body pass between two scavenges (see above). */
export const CHURN_BYTES = 2 * 1024 * 1024;

const gc = (globalThis as { gc?: Gc }).gc;
let pending = 0;
let collections = 0;
let total = 0;

/** `n` bytes of body have passed through (read from one side, handed to the other). */
export function bodyChurned(n: number): void {
  total += n;
  pending += n;
  if (pending < CHURN_BYTES) return;
  pending = 0;
  if (gc === undefined) return;
  collections++;
  gc({ type: 'minor', execution: 'sync' });
}

/** The bytes of body that have passed through this thread. */
export function bodyBytes(): number {
  return total;
}

/** The scavenges bodyChurned has run in this thread. */
export function churnCollections(): number {
  return collections;
}

/**
 * The servers' request classes (createServer's IncomingMessage, Http1IncomingMessage and
 * Http2ServerRequest options): node pushes each piece of a request body it has read into the request,
 * and each piece is counted on its way in.
 */
export class ChurnCountingRequest extends IncomingMessage {
  override push(chunk: Buffer | null, encoding?: BufferEncoding): boolean {
    if (chunk !== null) bodyChurned(chunk.length);
    return super.push(chunk, encoding);
  }
}
// undici destroys a request body it was sending when the upstream connection ends first (an answer
// complete before the body's 'end', a reset), and detaches the client's socket from it beforehand
// only when `Object.getPrototypeOf(body).constructor === IncomingMessage` (undici/lib/core/util.js,
// destroy). A subclass fails that test, and the client's connection was destroyed with its request:
// 1 MiB uploads to an upstream that answers as soon as it has read them were reset mid-answer in
// about a third of the requests. The prototype names IncomingMessage as its constructor so that
// undici keeps treating gw's requests as node's own.
Object.defineProperty(ChurnCountingRequest.prototype, 'constructor', {
  value: IncomingMessage,
  writable: true,
  configurable: true,
});

export class ChurnCountingHttp2Request extends Http2ServerRequest {
  override push(chunk: Buffer | null, encoding?: BufferEncoding): boolean {
    if (chunk !== null) bodyChurned(chunk.length);
    return super.push(chunk, encoding);
  }
}
