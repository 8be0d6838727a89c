// The PROXY protocol (HAProxy's; v1 text, v2 binary) at the start of a downstream connection: a load
// balancer that passes TCP through (an AWS NLB, HAProxy, …) says there who the client is. gw reads the
// header before anything else (TLS, HTTP, a TCP route) and takes its source address as the peer's:
// networkAuthorization, `source.*` in CEL, access logs and X-Forwarded-For then see the client. A v2
// LOCAL header (the balancer's own health check) and a v1 UNKNOWN keep the connection's own address.
import { isIP, type Server, type Socket } from 'node:net';

export type ProxyVersion = 'v1' | 'v2' | 'all';
export type ProxyMode = 'strict' | 'optional';
export interface ProxyProtocolIR {
  version: ProxyVersion;
  mode: ProxyMode;
}

/** The downstream end of a connection: the peer's address and port. */
export interface Peer {
  address: string;
  port: number;
  /** The connection is the inside of a CONNECT tunnel this client opened (connect-tunnel.ts). */
  tunnelled?: true;
}

const V2_SIGNATURE = Buffer.from('0d0a0d0a000d0a515549540a', 'hex');
const V1_PREFIX = Buffer.from('PROXY ', 'latin1');
/** The longest v1 line, CRLF included (the protocol's own bound). */
const V1_MAX = 107;
/** A v2 header's address block and TLVs are at most this long (a 16-bit length). */
const V2_FIXED = 16;

/** What the bytes read so far are. */
export type Framed =
  /** Too few bytes to tell, or the header is not complete yet. */
  | { kind: 'more' }
  /** Not a PROXY header (of the versions accepted). */
  | { kind: 'none' }
  | { kind: 'error'; reason: string }
  /** A header of `length` bytes; `peer` undefined: keep the connection's own address. */
  | { kind: 'header'; length: number; version: 'v1' | 'v2'; peer: Peer | undefined };

/** Whether `buf` could still be the start of `prefix` (or has it whole). */
function startsLike(buf: Buffer, prefix: Buffer): boolean {
  const n = Math.min(buf.length, prefix.length);
  return buf.subarray(0, n).equals(prefix.subarray(0, n));
}

/** Reads a PROXY header off the start of `buf`, if the accepted versions allow one there. */
export function frame(buf: Buffer, version: ProxyVersion): Framed {
  const v1 = version !== 'v2' && startsLike(buf, V1_PREFIX);
  const v2 = version !== 'v1' && startsLike(buf, V2_SIGNATURE);
  if (!v1 && !v2) return { kind: 'none' };
  if (v1) {
    if (buf.length < V1_PREFIX.length) return { kind: 'more' };
    const end = buf.indexOf('\r\n', 0, 'latin1');
    if (end === -1)
      return buf.length >= V1_MAX ? { kind: 'error', reason: 'v1 line too long' } : { kind: 'more' };
    if (end + 2 > V1_MAX) return { kind: 'error', reason: 'v1 line too long' };
    return parseV1(buf.toString('latin1', V1_PREFIX.length, end), end + 2);
  }
  if (buf.length < V2_FIXED) return { kind: 'more' };
  const length = V2_FIXED + buf.readUInt16BE(14);
  if (buf.length < length) return { kind: 'more' };
  return parseV2(buf.subarray(0, length));
}

function parseV1(line: string, length: number): Framed {
  const parts = line.split(' ');
  if (parts[0] === 'UNKNOWN') return { kind: 'header', length, version: 'v1', peer: undefined };
  const [proto, src, dst, sport, dport] = parts;
  const family = proto === 'TCP4' ? 4 : proto === 'TCP6' ? 6 : 0;
  if (parts.length !== 5 || family === 0) return { kind: 'error', reason: `v1 header "${line}"` };
  const port = (p: string | undefined) => (p && /^(0|[1-9][0-9]{0,4})$/.test(p) ? Number(p) : 65_536);
  if (
    isIP(src ?? '') !== family ||
    isIP(dst ?? '') !== family ||
    port(sport) > 65_535 ||
    port(dport) > 65_535
  )
    return { kind: 'error', reason: `v1 header "${line}"` };
  return { kind: 'header', length, version: 'v1', peer: { address: src as string, port: port(sport) } };
}

function parseV2(h: Buffer): Framed {
  const verCmd = h[12] as number;
  if (verCmd >> 4 !== 2) return { kind: 'error', reason: `v2 version ${verCmd >> 4}` };
  const command = verCmd & 0x0f;
  const length = h.length;
  // LOCAL: the balancer speaking for itself; the addresses, if any, are not a client's.
  if (command === 0) return { kind: 'header', length, version: 'v2', peer: undefined };
  if (command !== 1) return { kind: 'error', reason: `v2 command ${command}` };
  const family = (h[13] as number) >> 4;
  const body = h.subarray(V2_FIXED);
  if (family === 1 && body.length >= 12) {
    const address = `${body[0]}.${body[1]}.${body[2]}.${body[3]}`;
    return { kind: 'header', length, version: 'v2', peer: { address, port: body.readUInt16BE(8) } };
  }
  if (family === 2 && body.length >= 36) {
    const groups: string[] = [];
    for (let i = 0; i < 16; i += 2) groups.push(body.readUInt16BE(i).toString(16));
    return {
      kind: 'header',
      length,
      version: 'v2',
      peer: { address: compactV6(groups), port: body.readUInt16BE(32) },
    };
  }
  // AF_UNSPEC, a unix socket, or a block too short for its family: no client address to take.
  if (family === 0 || family === 3) return { kind: 'header', length, version: 'v2', peer: undefined };
  return { kind: 'error', reason: `v2 address block of ${body.length} bytes for family ${family}` };
}

/** Eight hex groups as an IPv6 address in its short form (RFC 5952, by the URL parser). */
function compactV6(groups: string[]): string {
  const full = new URL(`http://[${groups.join(':')}]`).hostname.slice(1, -1);
  // An IPv4-mapped address as the plain IPv4 gw reports everywhere else.
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(full);
  if (!mapped) return full;
  const hi = Number.parseInt(mapped[1] as string, 16);
  const lo = Number.parseInt(mapped[2] as string, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/**
 * Reads the PROXY header off a new connection and calls `done` with the client's address (the
 * connection's own when the header names none), with the bytes after the header put back for whoever
 * reads next. In optional mode a connection without one goes on as it is; in strict mode it, and any
 * malformed header, is closed, as is one that sends nothing within `timeoutMs`.
 */
export function readProxyHeader(
  socket: Socket,
  cfg: ProxyProtocolIR,
  timeoutMs: number,
  done: (peer: Peer, header: 'v1' | 'v2' | 'none') => void,
  refuse: (reason: string) => void,
): void {
  const own: Peer = { address: socket.remoteAddress ?? '', port: socket.remotePort ?? 0 };
  let buf: Buffer = Buffer.alloc(0);
  const timer =
    timeoutMs > 0 ? setTimeout(() => finish(() => refuse('no PROXY header in time')), timeoutMs) : undefined;
  const finish = (then: () => void) => {
    clearTimeout(timer);
    socket.off('data', onData);
    socket.off('end', onEnd);
    socket.pause();
    then();
  };
  const onEnd = () => finish(() => refuse('closed before the PROXY header'));
  const onData = (chunk: Buffer) => {
    buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
    const f = frame(buf, cfg.version);
    if (f.kind === 'more') return;
    finish(() => {
      if (f.kind === 'error') return refuse(`malformed PROXY header: ${f.reason}`);
      if (f.kind === 'none') {
        if (cfg.mode === 'strict') return refuse('no PROXY header');
        socket.unshift(buf);
        return done(own, 'none');
      }
      const rest = buf.subarray(f.length);
      if (rest.length > 0) socket.unshift(rest);
      done(f.peer ?? own, f.version);
    });
  };
  socket.on('data', onData);
  socket.once('end', onEnd);
}

/** How long a connection may take to send its PROXY header when no first-request timeout is set. */
export const PROXY_HEADER_TIMEOUT_MS = 10_000;

/** Connections whose PROXY header named a client: the raw socket, and so a TLS socket's parent. */
const proxied = new WeakMap<object, Peer>();

/**
 * Marks `s` as the inside of a CONNECT tunnel from `peer`: its client is known, so the bind it enters
 * reads no PROXY header from it, and a CONNECT on it is not tunnelled again (Peer.tunnelled).
 */
export function tunnelPeer(s: object, peer: Peer): void {
  proxied.set(s, { address: peer.address, port: peer.port, tunnelled: true });
}

/** Who is on the other end of a connection: the client its PROXY header named, else its own peer. */
export function clientOf(s: { remoteAddress?: string | undefined; remotePort?: number | undefined }): Peer {
  const parent = (s as { _parent?: object | null })._parent;
  return (
    proxied.get(s) ??
    (parent ? proxied.get(parent) : undefined) ?? { address: s.remoteAddress ?? '', port: s.remotePort ?? 0 }
  );
}

/**
 * Makes a server's own handling of each new connection (its 'connection' listeners: a TLS server's
 * handshake, gw's admission) wait for the PROXY header when `config()` asks for one; read per
 * connection, so a reload that turns it on or off applies to the next one. Then `hold`, when it
 * gives a promise (an asynchronous check of the connection: networkExtAuthz), makes them wait for it
 * too: true lets the connection on, false closes it. Call once every 'connection' listener is on.
 */
export function gateConnections(
  server: Server,
  config: () => ProxyProtocolIR | undefined,
  timeoutMs: () => number,
  onRefused: (reason: string, socket: Socket) => void,
  /**
   * Whether the socket flows again once the server has it: yes where its listeners wait for 'data';
   * no for a TLS server, whose TLS layer reads the connection's handle itself (a flowing socket
   * beside it would swallow the handshake), nor where a pipe starts the reading later (a flowing
   * socket with no reader yet would drop the bytes).
   */
  resume: boolean,
  hold: (socket: Socket) => Promise<boolean> | undefined = () => undefined,
): void {
  const listeners = server.listeners('connection') as ((s: Socket) => void)[];
  server.removeAllListeners('connection');
  server.on('connection', (socket: Socket) => {
    const run = () => {
      for (const l of listeners) l.call(server, socket);
    };
    /** The listeners, once `hold` (if it holds) lets the connection on; `flowing`: resume it then. */
    const proceed = (flowing: boolean) => {
      const held = hold(socket);
      if (!held) {
        run();
        if (flowing && !socket.destroyed) socket.resume();
        return;
      }
      socket.on('error', () => socket.destroy());
      held.then(
        (ok) => {
          if (!ok || socket.destroyed) {
            socket.destroy();
            return;
          }
          run();
          if (resume && !socket.destroyed) socket.resume();
        },
        () => socket.destroy(),
      );
    };
    // the inside of a CONNECT tunnel starts with the client's own bytes: its peer is known
    const pp = proxied.get(socket)?.tunnelled ? undefined : config();
    if (!pp) return proceed(false);
    socket.on('error', () => socket.destroy());
    readProxyHeader(
      socket,
      pp,
      timeoutMs(),
      (peer) => {
        proxied.set(socket, peer);
        proceed(resume);
      },
      (reason) => {
        onRefused(reason, socket);
        socket.destroy();
      },
    );
  });
}
