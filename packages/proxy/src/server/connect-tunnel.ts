// frontendPolicies.connect mode tunnel (and a bind's tunnelProtocol connect): a CONNECT answered 200
// is not joined to a backend; its bytes become a new connection to the gateway's own bind on the
// port it asked for, as if accepted there (that bind's TLS, listeners, routes and connection policies
// serve it), from the client that sent the CONNECT. What does that is here: the bind a CONNECT goes
// to, and the socket the bind is handed.
import { isIP, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { splitHostPort } from '@gw/api/runtime';
import { GwError } from '../errors.ts';
import { type Peer, tunnelPeer } from './proxy-protocol.ts';

/** How long an HTTP/2 tunnel the gateway has ended waits for the client to end its side. */
const HALF_CLOSED_MS = 5_000;

/** What a bind takes a tunnelled connection with (BindServer, TcpBindServer). */
export interface TunnelTarget {
  readonly key: string;
  readonly port: number;
  readonly current: { ir: { address: string; internal?: true } };
  readonly retired: boolean;
  adopt(socket: Duplex): void;
}

/** Addresses a bind listens on all interfaces with: the ones a tunnel reaches by port alone. */
const ANY = new Set(['::', '0.0.0.0', '']);

/**
 * The bind a CONNECT to `authority` (host:port) goes into: the live one listening on all addresses at
 * that port, else an internal bind for that port, else an internal bind without a port; the host is
 * not looked up (the gateway is where the bytes go). A bind on one address only (loopback, say) is
 * never a tunnel's: what it keeps from other clients stays kept. A 400 without a port, a 404 without
 * such a bind.
 */
export function tunnelTarget<T extends TunnelTarget>(
  authority: string,
  binds: Iterable<T>,
): { target: T; host: string; port: number } | GwError {
  const { host, port } = splitHostPort(authority);
  if (host === '' || !Number.isInteger(port) || port < 1 || port > 65_535)
    return new GwError(
      'GW_ERR_BAD_REQUEST',
      `a CONNECT tunnel names host:port (got ${JSON.stringify(authority.slice(0, 100))})`,
    );
  let internal: T | undefined;
  let fallback: T | undefined;
  for (const b of binds) {
    if (b.retired) continue;
    const ir = b.current.ir;
    if (ir.internal) {
      if (b.port === 0) fallback ??= b;
      else if (b.port === port) internal ??= b;
    } else if (b.port === port && ANY.has(ir.address)) return { target: b, host, port };
  }
  const target = internal ?? fallback;
  if (target) return { target, host, port };
  return new GwError(
    'GW_ERR_NO_LISTENER',
    `no bind of this gateway takes tunnels to port ${port} (one listening on all addresses there, or an internal bind, does)`,
  );
}

/** The part of a socket (or HTTP/2 stream) a tunnel carries that its wrapper passes on. */
type Carrier = Duplex & {
  setTimeout(ms: number, cb?: () => void): unknown;
  setKeepAlive?: (...args: never[]) => unknown;
  setNoDelay?: (...args: never[]) => unknown;
  localAddress?: string | undefined;
  localPort?: number | undefined;
};

/**
 * The client's side of a tunnel as the bind it enters sees a connection: its bytes (those the client
 * sent after the CONNECT's head first), the client's address as the peer, and as the address it
 * reached, the CONNECT's host when that is an IP address (else the address the CONNECT came to) at
 * the port it asked for. No PROXY header is read from it (proxy-protocol.ts tunnelPeer). A socket
 * without a handle of its own, so that a TLS socket over it keeps it as its parent (which is how the
 * client is found for a TLS bind's requests).
 */
export class TunnelSocket extends Socket {
  override readonly remoteAddress: string;
  override readonly remotePort: number;
  override readonly remoteFamily: string;
  override readonly localAddress: string;
  override readonly localPort: number;
  override bytesRead = 0;
  override bytesWritten = 0;
  readonly #inner: Carrier;

  constructor(inner: Carrier, head: Buffer, peer: Peer, dest: { host: string; port: number }) {
    super({ allowHalfOpen: true });
    this.#inner = inner;
    this.remoteAddress = peer.address;
    this.remotePort = peer.port;
    this.remoteFamily = isIP(peer.address) === 6 ? 'IPv6' : 'IPv4';
    this.localAddress = isIP(dest.host) ? dest.host : reachedAddress(inner);
    this.localPort = dest.port;
    tunnelPeer(this, peer);
    // Connected from the start: a TLS socket over this one waits for 'connect' before it reads.
    this.on('newListener', (event: string) => {
      if (event === 'connect') process.nextTick(() => this.emit('connect'));
    });
    // the client's FIN ends only its direction: an answer may still go back
    inner.allowHalfOpen = true;
    if (head.length > 0) this.#take(head);
    inner.on('data', (c: Buffer) => {
      if (!this.destroyed && !this.#take(c)) inner.pause();
    });
    inner.on('end', () => this.push(null));
    inner.on('error', (e) => this.destroy(e));
    // after a clean end, what was read stays readable until it is (autoDestroy closes this then)
    inner.on('close', () => {
      if (!inner.readableEnded || inner.errored) this.destroy();
    });
    inner.on('timeout', () => this.emit('timeout'));
    // a timeout of the server it came through no longer applies
    inner.setTimeout(0);
    inner.pause();
  }

  #take(c: Buffer): boolean {
    this.bytesRead += c.length;
    return this.push(c);
  }

  override _read(): void {
    this.#inner.resume();
  }

  // a socket takes strings as they are (decodeStrings false): counted in bytes
  override _write(chunk: Buffer | string, enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.bytesWritten += Buffer.byteLength(chunk, enc);
    this.#inner.write(chunk, enc, cb);
  }

  override _writev(
    chunks: { chunk: Buffer | string; encoding: BufferEncoding }[],
    cb: (err?: Error | null) => void,
  ): void {
    const last = chunks.length - 1;
    chunks.forEach(({ chunk, encoding }, i) => {
      this.bytesWritten += Buffer.byteLength(chunk, encoding);
      this.#inner.write(chunk, encoding, i === last ? cb : undefined);
    });
  }

  override _final(cb: (err?: Error | null) => void): void {
    this.#inner.end(cb);
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    const inner = this.#inner;
    if (err === null && 'session' in inner && inner.writableFinished && !inner.destroyed) {
      // An HTTP/2 stream whose END_STREAM is sent: a RST_STREAM now could reach the client before it
      // has read that end. It closes once the client ends its side, or after a grace period.
      inner.resume();
      const cut = setTimeout(() => inner.destroy(), HALF_CLOSED_MS);
      cut.unref();
      inner.once('close', () => clearTimeout(cut));
    } else inner.destroy(err ?? undefined);
    cb(err);
    // a socket emits its own 'close' (net.Socket turns the stream's off)
    process.nextTick(() => this.emit('close', err !== null));
  }

  /** A socket's idle timeout: the carrier's, as every byte passes through both. */
  override setTimeout(ms: number, cb?: () => void): this {
    this.#inner.setTimeout(ms);
    if (cb && ms === 0) this.off('timeout', cb);
    else if (cb) this.once('timeout', cb);
    return this;
  }

  /** No handle to hold the event loop: the carrier's connection does (net.Socket's waits for 'connect'). */
  override ref(): this {
    return this;
  }

  override unref(): this {
    return this;
  }

  override setKeepAlive(...args: unknown[]): this {
    (this.#inner.setKeepAlive as ((...a: unknown[]) => unknown) | undefined)?.apply(this.#inner, args);
    return this;
  }

  override setNoDelay(...args: unknown[]): this {
    (this.#inner.setNoDelay as ((...a: unknown[]) => unknown) | undefined)?.apply(this.#inner, args);
    return this;
  }
}

/** The address a CONNECT came to: its socket's, or for an HTTP/2 stream, its session's socket's. */
function reachedAddress(inner: Carrier): string {
  if (inner.localAddress) return inner.localAddress;
  const session = (inner as { session?: { socket?: { localAddress?: string } } }).session;
  return session?.socket?.localAddress ?? '';
}
