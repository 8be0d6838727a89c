// One listening socket per TCP or TLS bind: each accepted connection is proxied, bytes as they are,
// to a backend of the listener's tcpRoutes. TCP: the listener's route without hostnames. TLS
// passthrough (a listener without tls): the ClientHello's server name (SNI) is read without
// answering it, picks the listener and the route, and the bytes already read go to the backend
// first, so the client's TLS session is with the backend itself. TLS terminate (a listener with
// tls): the gateway completes the handshake (certificate by SNI) and proxies the plaintext.
import net, { type Socket } from 'node:net';
import { networkInterfaces } from 'node:os';
import type { Duplex } from 'node:stream';
import tls, { type TLSSocket } from 'node:tls';
import { getExtensionData, readTlsClientHello } from 'read-tls-client-hello';
import { normalizeAddress } from '../pipeline/context.ts';
import type { CompiledBind, CompiledListener } from '../routing/table.ts';
import { defaultContext, selectListener } from '../routing/table.ts';
import type { CompiledTcpRoute } from '../routing/tcp-routes.ts';
import { type BindSettings, keepAlive, type Peer } from './bind-server.ts';
import { applyClientCerts, verifiesClients } from './client-certs.ts';
import { admitOnce, type ConnectionCheck, holdFor } from './connection-check.ts';
import { Refusals } from './connection-limit.ts';
import { listenOn } from './listen.ts';
import {
  clientOf,
  gateConnections,
  PROXY_HEADER_TIMEOUT_MS,
  type ProxyProtocolIR,
} from './proxy-protocol.ts';
import { Roster } from './roster.ts';
import { splice } from './splice.ts';
import { handshakeOption, setAlpn, setHandshakeTimeout } from './tls-handshake.ts';

/** What the access log and the metrics get when a proxied connection ends (or is refused). */
export interface TcpConnectionSummary {
  protocol: 'tcp' | 'tls';
  gateway: string | undefined;
  listener: string | undefined;
  route: string | undefined;
  backend: string | undefined;
  endpoint: string | undefined;
  /** The TLS server name the client sent (TLS listeners); '' when it sent none. */
  sni: string | undefined;
  source: Peer;
  /** Bytes from the client (passthrough: its TLS records; terminate: the plaintext), and to it. */
  bytesReceived: number;
  bytesSent: number;
  seconds: number;
  /** Why the connection was closed without reaching a backend, or how it failed. */
  error: string | undefined;
}

export interface TcpBindServerOptions extends BindSettings {
  /** Layer-4 admission of a new connection by its peer address (networkAuthorization). */
  admit: (address: string, port: number) => boolean;
  onConnectionLimit: (bind: TcpBindServer, refused: number, limit: number) => void;
  /** Once per accepted and admitted connection, when it is over. */
  onEnd: (s: TcpConnectionSummary) => void;
  onClientError: (err: Error) => void;
  /** The PROXY protocol new connections start with (frontendPolicies.proxyProtocol), if any. */
  proxyProtocol: () => ProxyProtocolIR | undefined;
  onProxyRefused: (reason: string, socket: Socket) => void;
  /** The check each new connection waits for (networkExtAuthz), if any. */
  connectionCheck: () => ConnectionCheck | undefined;
}

export type TcpScheme = 'tcp' | 'tls-passthrough' | 'tls';

/** How a bind's connections are served; a reload that changes it replaces the listening socket. */
export function tcpSchemeOf(bind: CompiledBind['ir']): TcpScheme | undefined {
  if (bind.protocol === 'TCP') return 'tcp';
  if (bind.protocol !== 'TLS') return undefined;
  return bind.listeners.some((l) => l.tls) ? 'tls' : 'tls-passthrough';
}

export class TcpBindServer {
  readonly key: string;
  readonly scheme: TcpScheme;
  current: CompiledBind;
  retired = false;
  readonly #outer: net.Server;
  readonly #sockets = new Roster<Socket>();
  #settings: BindSettings;
  readonly #opts: TcpBindServerOptions;
  #port = 0;
  readonly #refused: Refusals;
  #handshake: string | undefined;

  constructor(bind: CompiledBind, opts: TcpBindServerOptions) {
    this.key = bind.ir.key;
    this.current = bind;
    this.scheme = tcpSchemeOf(bind.ir) ?? 'tcp';
    this.#opts = opts;
    this.#refused = new Refusals((n) =>
      opts.onConnectionLimit(this, n, this.#settings.limits.maxConnections),
    );
    this.#settings = {
      idleTimeoutMs: opts.idleTimeoutMs,
      limits: opts.limits,
      connections: opts.connections,
      requests: opts.requests,
    };
    if (this.scheme === 'tls') {
      const first = bind.listeners.find((l) => l.secureContext)?.ir.tls;
      const limits = this.#settings.limits;
      const server = tls.createServer({
        allowHalfOpen: true,
        ...handshakeOption(limits),
        ...(first ? defaultContext(first) : {}),
        SNICallback: (servername, cb) => {
          const l = selectListener(this.current, servername.toLowerCase()) ?? this.current.listeners[0];
          cb(null, l?.secureContext);
        },
      });
      applyClientCerts(server, bind);
      setAlpn(server, first?.alpn);
      this.#handshake = first ? JSON.stringify(defaultContext(first, false)) : undefined;
      // Before the handshake: a refused peer costs no crypto.
      server.prependListener('connection', (socket: Socket) => {
        this.#admitted(socket);
      });
      server.on('secureConnection', (s: TLSSocket) => this.#terminated(s));
      // Node reports a handshake that timed out (handshakeTimeout) but leaves the connection open.
      server.on('tlsClientError', (err, socket) => {
        opts.onClientError(err);
        socket.destroy();
      });
      this.#outer = server;
    } else {
      this.#outer = net.createServer({ noDelay: true, allowHalfOpen: true }, (socket) => {
        if (!this.#admitted(socket)) return;
        if (this.scheme === 'tcp') this.#plain(socket);
        else this.#passthrough(socket);
      });
    }
    // A PROXY header comes before all of it: admission, networkExtAuthz, TLS, the route. The socket
    // stays paused after it: the pipes to the backend (and the ClientHello reader) read it when they
    // start.
    gateConnections(
      this.#outer,
      opts.proxyProtocol,
      () => this.#settings.limits.firstRequestTimeoutMs || PROXY_HEADER_TIMEOUT_MS,
      opts.onProxyRefused,
      false,
      holdFor(this.#admitted, opts.connectionCheck),
    );
  }

  /** A connection that reached this bind through a CONNECT tunnel (connect-tunnel.ts). */
  adopt(socket: Duplex): void {
    this.#outer.emit('connection', socket);
  }

  /** #accept once per socket (the gate's hold may have run it already). */
  readonly #admitted = admitOnce((socket) => this.#accept(socket));

  /** The connection cap, then networkAuthorization; counted until the socket closes. */
  #accept(socket: Socket): boolean {
    const conns = this.#settings.connections;
    const counted = this.#settings.counted;
    if (!conns.tryOpen(this.#settings.limits.maxConnections)) {
      socket.destroy();
      this.#refused.note();
      if (counted) counted.limit.value++;
      return false;
    }
    socket.once('close', () => conns.close());
    const client = clientOf(socket);
    if (!this.#opts.admit(client.address, client.port)) {
      socket.destroy();
      if (counted) counted.denied.value++;
      return false;
    }
    if (counted) counted.accepted.value++;
    keepAlive(socket, this.#settings.limits);
    socket.on('error', noop);
    const listed = this.#sockets.add(socket);
    socket.once('close', () => this.#sockets.delete(listed));
    return true;
  }

  #plain(socket: Socket): void {
    const c = this.#start(socket, 'tcp');
    const listener = this.current.listeners[0];
    this.#route(socket, c, listener, undefined);
  }

  #passthrough(socket: Socket): void {
    const c = this.#start(socket, 'tls');
    // The ClientHello must arrive within the first-request timeout, like any first bytes.
    const first = this.#settings.limits.firstRequestTimeoutMs;
    let late = false;
    const timer =
      first > 0
        ? setTimeout(() => {
            late = true;
            socket.destroy();
          }, first)
        : undefined;
    // A client that stops sending before its hello is complete is not waited for.
    const ended = () => socket.destroy();
    socket.once('end', ended);
    readTlsClientHello(socket).then(
      (hello) => {
        if (timer) clearTimeout(timer);
        socket.off('end', ended);
        if (socket.destroyed) return this.#end(c, 'client closed before its ClientHello was complete');
        const sni = serverName(getExtensionData(hello, 'server_name')?.serverName);
        c.sni = sni ?? '';
        const listener = selectListener(this.current, sni ?? '');
        if (!listener) {
          this.#end(c, `no listener for server name ${JSON.stringify(c.sni)}`);
          socket.destroy();
          return;
        }
        this.#route(socket, c, listener, sni);
      },
      (err: Error) => {
        if (timer) clearTimeout(timer);
        socket.off('end', ended);
        const why = late
          ? 'no complete ClientHello within the first-request timeout'
          : socket.destroyed
            ? 'client closed before its ClientHello was complete'
            : `not a TLS ClientHello: ${err.message}`;
        this.#end(c, why);
        socket.destroy();
      },
    );
  }

  #terminated(socket: TLSSocket): void {
    socket.on('error', noop);
    const c = this.#start(socket, 'tls');
    const name = typeof socket.servername === 'string' ? socket.servername.toLowerCase() : undefined;
    c.sni = name ?? '';
    const listener = selectListener(this.current, name ?? '');
    if (!listener) {
      this.#end(c, `no listener for server name ${JSON.stringify(c.sni)}`);
      socket.destroy();
      return;
    }
    if (verifiesClients(listener) && !socket.authorized) {
      this.#end(c, `no client certificate that listener ${listener.ir.name}'s CA verifies`);
      socket.destroy();
      return;
    }
    this.#route(socket, c, listener, name);
  }

  #start(socket: Socket, protocol: 'tcp' | 'tls'): Conn {
    return {
      protocol,
      at: performance.now(),
      source: clientOf(socket),
      gateway: undefined,
      listener: undefined,
      route: undefined,
      backend: undefined,
      endpoint: undefined,
      sni: undefined,
      received: 0,
      sent: 0,
      ended: false,
    };
  }

  #route(client: Socket, c: Conn, listener: CompiledListener | undefined, sni: string | undefined): void {
    c.gateway = listener?.ir.gateway;
    c.listener = listener?.ir.name;
    const route: CompiledTcpRoute | undefined = listener?.tcp?.select(sni);
    if (!route) {
      this.#end(
        c,
        sni === undefined && c.protocol === 'tls' ? 'no route (the client sent no server name)' : 'no route',
      );
      client.destroy();
      return;
    }
    c.route = route.ir.key;
    const backend = route.pick();
    if (!backend) {
      this.#end(c, 'no backend');
      client.destroy();
      return;
    }
    c.backend = backend.name;
    let endpoint = backend.endpoint;
    if (backend.dial) {
      const reached = reachedSocket(client);
      const dialled = backend.dial({
        source: { address: c.source.address, port: c.source.port },
        destination: {
          address: normalizeAddress(reached.localAddress ?? ''),
          port: reached.localPort ?? 0,
          ...(sni ? { hostname: sni } : {}),
        },
      });
      if (typeof dialled === 'string') {
        this.#end(c, dialled);
        client.destroy();
        return;
      }
      endpoint = dialled;
    }
    if (!endpoint) {
      this.#end(c, 'no backend');
      client.destroy();
      return;
    }
    c.endpoint = endpoint.address;
    const onClientClose = () => upstream.destroy();
    client.once('close', onClientClose);
    const upstream = endpoint.connect((err, up) => {
      client.off('close', onClientClose);
      if (err) {
        // a client that left first is not the backend's failure
        if (!client.destroyed) backend.health?.fail(Date.now(), 'connection failed');
        this.#end(c, err.message);
        client.destroy();
        return;
      }
      backend.health?.succeed(Date.now());
      if (client.destroyed) {
        up.destroy();
        this.#end(c, 'client closed before the backend connection was made');
        return;
      }
      // a dynamic dial that reached this gateway's own port would open another, and so on
      if (backend.dial && reachesItself(up, reachedSocket(client), this.#outer.address())) {
        up.destroy();
        this.#end(c, `the dynamic backend would dial this gateway itself (${c.endpoint})`);
        client.destroy();
        return;
      }
      // Counted as they pass (added with the pipes, so no chunk goes by uncounted).
      client.on('data', (d: Buffer) => {
        c.received += d.length;
      });
      up.on('data', (d: Buffer) => {
        c.sent += d.length;
      });
      splice(client, up, this.#settings.idleTimeoutMs, () => this.#end(c, undefined));
    });
  }

  #end(c: Conn, error: string | undefined): void {
    if (c.ended) return;
    c.ended = true;
    this.#opts.onEnd({
      protocol: c.protocol,
      gateway: c.gateway,
      listener: c.listener,
      route: c.route,
      backend: c.backend,
      endpoint: c.endpoint,
      sni: c.sni,
      source: c.source,
      bytesReceived: c.received,
      bytesSent: c.sent,
      seconds: (performance.now() - c.at) / 1000,
      error,
    });
  }

  /** Applies a new config's settings; open connections keep theirs. */
  configure(settings: BindSettings): void {
    this.#settings = settings;
    if (this.scheme !== 'tls') return;
    setHandshakeTimeout(this.#outer as tls.Server, settings.limits);
    applyClientCerts(this.#outer as tls.Server, this.current);
    const first = this.current.listeners.find((l) => l.secureContext)?.ir.tls;
    setAlpn(this.#outer as tls.Server, first?.alpn);
    if (!first) return;
    const key = JSON.stringify(defaultContext(first, false));
    if (key === this.#handshake) return;
    (this.#outer as tls.Server).setSecureContext(defaultContext(first));
    this.#handshake = key;
  }

  get port(): number {
    return this.#port;
  }

  /** An internal bind (mode internal): no socket; `port` (0: any) is what tunnels reach it by. */
  internal(port: number): void {
    this.#port = port;
  }

  get idleTimeoutMs(): number {
    return this.#settings.idleTimeoutMs;
  }

  async listen(address: string, port: number, reusePort: boolean): Promise<number> {
    this.#port = await listenOn(this.#outer, address, port, reusePort);
    return this.#port;
  }

  /** Stops accepting; proxied connections go on until they end, or until destroyAll. */
  stopAccepting(): void {
    this.retired = true;
    this.#outer.close();
  }

  /** A proxied connection is never idle in the HTTP sense: nothing to close early. */
  closeIdle(): void {}

  destroyAll(): void {
    for (const s of this.#sockets) s.destroy();
  }

  get connections(): number {
    return this.#sockets.size;
  }
}

interface Conn {
  protocol: 'tcp' | 'tls';
  at: number;
  source: Peer;
  gateway: string | undefined;
  listener: string | undefined;
  route: string | undefined;
  backend: string | undefined;
  endpoint: string | undefined;
  sni: string | undefined;
  received: number;
  sent: number;
  ended: boolean;
}

/**
 * The SNI as a lower-case host name, without a trailing dot; undefined when the client sent none or
 * something that is not a host name (matched as no name, so only a route without hostnames takes it).
 */
function serverName(raw: string | undefined): string | undefined {
  if (!raw) return undefined;
  const name = (raw.endsWith('.') ? raw.slice(0, -1) : raw).toLowerCase();
  return /^[a-z0-9]([a-z0-9_-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9_-]*[a-z0-9])?)*$/.test(name) &&
    name.length <= 253
    ? name
    : undefined;
}

function noop(): void {}

/**
 * The socket whose addresses a connection has: a terminated TLS connection's underlying one (a TLS
 * socket over a CONNECT tunnel's has none of its own).
 */
function reachedSocket(client: Socket): Socket {
  return (client as Socket & { _parent?: Socket | null })._parent ?? client;
}

/**
 * Whether `up` is connected to this bind itself: the port `client` came in on, at the address the
 * bind listens on, or (a bind on every address) at a loopback address or another of this host's.
 */
function reachesItself(up: Socket, client: Socket, bound: ReturnType<net.Server['address']>): boolean {
  if (up.remotePort !== client.localPort) return false;
  const a = normalizeAddress(up.remoteAddress ?? '');
  const at = bound && typeof bound === 'object' ? normalizeAddress(bound.address) : '';
  if (at !== '' && at !== '::' && at !== '0.0.0.0') return a === at;
  if (a === '::1' || a.startsWith('127.') || a === normalizeAddress(client.localAddress ?? '')) return true;
  for (const list of Object.values(networkInterfaces()))
    for (const i of list ?? []) if (i.address === a) return true;
  return false;
}
