// Two sockets joined after a protocol upgrade: bytes flow both ways with backpressure (pipe pauses
// the reader while the other side's buffer is full), each direction's end is passed on as a
// half-close, and an error, the idle timeout or one side closing closes the other.
import type { Duplex, Transform } from 'node:stream';

/** A socket, or an HTTP/2 stream carrying an extended CONNECT. */
type Pipe = Duplex & { setTimeout(ms: number, cb: () => void): unknown };

/** How long a side whose peer closed may take to flush what it still holds before it is cut. */
const FLUSH_MS = 5_000;

/** What reads the bytes between the two ends (a realtime session's guards): one transform each way. */
export interface Relay {
  toUpstream: Transform;
  toClient: Transform;
}

/**
 * Joins `client` and `upstream`, through `relay` when given. `idleMs` (0: none) closes both when no
 * byte has moved either way for that long. `done` runs once, when both sockets are closed.
 */
export function splice(client: Pipe, upstream: Pipe, idleMs: number, done?: () => void, relay?: Relay): void {
  // A FIN from one side ends only that direction; the other keeps flowing until its own end.
  client.allowHalfOpen = true;
  upstream.allowHalfOpen = true;
  if (relay) {
    relay.toUpstream.on('error', noop);
    relay.toClient.on('error', noop);
    client.pipe(relay.toUpstream).pipe(upstream);
    upstream.pipe(relay.toClient).pipe(client);
  } else {
    client.pipe(upstream);
    upstream.pipe(client);
  }
  // Errors show as 'close' with hadError; without a listener they would throw.
  client.on('error', noop);
  upstream.on('error', noop);
  let open = 2;
  const closed = (other: Pipe) => (hadError: boolean) => {
    if (--open === 0) {
      done?.();
      return;
    }
    if (other.destroyed) return;
    if (hadError || other.writableFinished) {
      other.destroy();
      return;
    }
    // What the closed side sent last may still sit in the other's buffer: flush it, then close.
    other.end();
    const cut = setTimeout(() => other.destroy(), FLUSH_MS);
    cut.unref();
    other.once('finish', () => {
      clearTimeout(cut);
      other.destroy();
    });
    other.once('close', () => clearTimeout(cut));
  };
  client.once('close', closed(upstream));
  upstream.once('close', closed(client));
  if (idleMs > 0) {
    // Every byte is read on one socket and written on the other, so either one idle is both idle.
    const idle = () => {
      client.destroy();
      upstream.destroy();
    };
    client.setTimeout(idleMs, idle);
    upstream.setTimeout(idleMs, idle);
  }
}

function noop(): void {}
