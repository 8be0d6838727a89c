// One listening socket per bind (address:port). Plain-text binds serve HTTP/1.1 and h2c (prior
// knowledge) on the same port by looking at the first bytes; TLS binds serve h2 and HTTP/1.1 by ALPN
// and pick the certificate by SNI from the listeners of the current table.
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import http2, { type Http2ServerRequest, type Http2ServerResponse, type Http2Session } from 'node:http2';
import net, { type Socket } from 'node:net';
import { Duplex } from 'node:stream';
import type { DownstreamLimits } from '../config/ir.ts';
import { ChurnCountingHttp2Request, ChurnCountingRequest } from '../pipeline/body-churn.ts';
import type { CompiledBind } from '../routing/table.ts';
import { defaultContext, selectListener } from '../routing/table.ts';
import { applyClientCerts } from './client-certs.ts';
import { admitOnce, type ConnectionCheck, holdFor } from './connection-check.ts';
import { type ConnectionLimit, Refusals } from './connection-limit.ts';
import { H1Server } from './h1-server.ts';
import { http1ServerKind } from './http1-kind.ts';
import { listenOn } from './listen.ts';
import {
  clientOf,
  gateConnections,
  type Peer,
  PROXY_HEADER_TIMEOUT_MS,
  type ProxyProtocolIR,
} from './proxy-protocol.ts';
import { Roster } from './roster.ts';
import { HTTPS_ALPN, handshakeOption, setAlpn, setHandshakeTimeout } from './tls-handshake.ts';

export type RequestListener = (
  bind: BindServer,
  req: IncomingMessage | Http2ServerRequest,
  res: ServerResponse | Http2ServerResponse,
) => void;

const H2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n');

export type { Peer };

/** What a bind's connections may hold; a reload changes them in place (see `configure`). */
export interface BindSettings {
  idleTimeoutMs: number;
  limits: DownstreamLimits;
  /** The bind's open connections, counted across workers against `limits.maxConnections`. */
  connections: ConnectionLimit;
  /** The bind's requests in flight, counted across workers against `limits.maxConcurrentRequests`. */
  requests: ConnectionLimit;
  /** gw_downstream_connections_total's series of the bind, by outcome (no metrics: absent). */
  counted?: ConnectionCounts | undefined;
}

/** Connections accepted, and refused by the connection cap (limit) or networkAuthorization (denied). */
export interface ConnectionCounts {
  accepted: { value: number };
  limit: { value: number };
  denied: { value: number };
}

/** An HTTP/1.1 request that asks to switch protocols: its connection is no longer HTTP's. */
export type UpgradeListener = (bind: BindServer, req: IncomingMessage, socket: Socket, head: Buffer) => void;

export interface BindServerOptions extends BindSettings {
  onRequest: RequestListener;
  onUpgrade: UpgradeListener;
  onClientError: (err: Error) => void;
  /** Layer-4 admission of a new connection by its peer address (networkAuthorization). */
  admit: (address: string, port: number) => boolean;
  /** The connection cap refused connections: `refused` since the last call, at most one call per 10 s. */
  onConnectionLimit: (bind: BindServer, refused: number, limit: number) => void;
  /** The request cap refused requests: `refused` since the last call, at most one call per 10 s. */
  onRequestLimit: (bind: BindServer, refused: number, limit: number) => void;
  /** The PROXY protocol new connections start with (frontendPolicies.proxyProtocol), if any. */
  proxyProtocol: () => ProxyProtocolIR | undefined;
  /** A connection closed for its PROXY header: missing (strict), malformed, or too slow. */
  onProxyRefused: (reason: string, socket: Socket) => void;
  /** The check each new connection waits for (networkExtAuthz), if any. */
  connectionCheck: () => ConnectionCheck | undefined;
}

/**
 * frontendPolicies.tcp.keepalives on an accepted connection. The kernel counts the interval in whole
 * seconds: under one second it is left to the system's default.
 */
export function keepAlive(socket: Socket, limits: DownstreamLimits): void {
  const ka = limits.keepalive;
  if (!ka) return;
  socket.setKeepAlive(true, ka.timeMs, ka.intervalMs >= 1000 ? ka.intervalMs : undefined, ka.retries);
}

/**
 * HTTP/1 connections that left HTTP (an upgrade or a CONNECT, joined or handed on): no longer closed
 * between requests, as they carry none (maxConnectionDuration).
 */
export const leftHttp = new WeakSet<Socket>();

export class BindServer {
  readonly key: string;
  readonly scheme: 'http' | 'https';
  current: CompiledBind;
  /** Set once the bind is gone from the config (or the proxy drains): connections close after use. */
  retired = false;
  readonly #outer: net.Server;
  readonly #h1: http.Server | H1Server | undefined;
  readonly #sockets = new Roster<Socket>();
  readonly #sessions = new Roster<Http2Session>();
  /**
   * The peer of each HTTP/2 session, taken from the accepted socket. An h2c session runs over the
   * Duplex that replays the peeked preface, and http2 wraps that in a socket without an address.
   */
  readonly #peers = new WeakMap<Http2Session, Peer>();
  /** The peer of the h2c connection being handed to http2 ('session' is emitted synchronously). */
  #handingOver: Peer | undefined;
  #port = 0;
  #settings: BindSettings;
  readonly #h2: http2.Http2Server | http2.Http2SecureServer;
  /** Plain-text connections handed to the HTTP/2 server (h2c). */
  readonly #h2Sockets = new WeakSet<Socket>();
  /** The handshake settings the TLS server runs with (see #applyHandshake). */
  #handshake: string | undefined;
  readonly #connectionsRefused: Refusals;
  readonly #requestsRefused: Refusals;

  constructor(bind: CompiledBind, opts: BindServerOptions) {
    this.key = bind.ir.key;
    this.current = bind;
    this.scheme = bind.ir.protocol === 'HTTPS' ? 'https' : 'http';
    this.#settings = {
      idleTimeoutMs: opts.idleTimeoutMs,
      limits: opts.limits,
      connections: opts.connections,
      requests: opts.requests,
    };
    this.#connectionsRefused = new Refusals((n) =>
      opts.onConnectionLimit(this, n, this.#settings.limits.maxConnections),
    );
    this.#requestsRefused = new Refusals((n) =>
      opts.onRequestLimit(this, n, this.#settings.limits.maxConcurrentRequests ?? 0),
    );
    const { limits } = opts;
    const handler = (req: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse) =>
      opts.onRequest(this, req, res);
    const onSession = (s: Http2Session) => {
      const listed = this.#sessions.add(s);
      const window = this.#settings.limits.http2ConnectionWindowSize;
      if (window !== undefined) s.setLocalWindowSize(window);
      // maxConnectionDuration: GOAWAY, so the client opens a new connection for its next requests
      const lifetime = this.#settings.limits.maxConnectionDurationMs;
      if (lifetime > 0) {
        const timer = setTimeout(() => s.close(), lifetime);
        s.once('close', () => clearTimeout(timer));
      }
      this.#peers.set(s, this.#handingOver ?? clientOf(s.socket));
      s.once('close', () => this.#sessions.delete(listed));
      const keepalive = this.#settings.limits.http2Keepalive;
      if (keepalive) pingEvery(s, keepalive.intervalMs, keepalive.timeoutMs);
      // A session that opens no stream is closed like a connection that sends nothing.
      const first = this.#settings.limits.firstRequestTimeoutMs;
      if (first > 0) {
        const timer = setTimeout(() => s.destroy(), first);
        const clear = () => clearTimeout(timer);
        s.once('stream', clear);
        s.once('close', clear);
      }
    };
    /** Admission of an accepted socket: the connection cap, then networkAuthorization. */
    const accept = admitOnce((socket: Socket): boolean => {
      const conns = this.#settings.connections;
      const counted = this.#settings.counted;
      if (!conns.tryOpen(this.#settings.limits.maxConnections)) {
        socket.destroy();
        this.#connectionsRefused.note();
        if (counted) counted.limit.value++;
        return false;
      }
      socket.once('close', () => conns.close());
      const client = clientOf(socket);
      if (!opts.admit(client.address, client.port)) {
        socket.destroy();
        if (counted) counted.denied.value++;
        return false;
      }
      if (counted) counted.accepted.value++;
      keepAlive(socket, this.#settings.limits);
      return true;
    });
    const onUpgrade = (req: IncomingMessage, socket: Socket, head: Buffer) =>
      opts.onUpgrade(this, req, socket, head);
    // enableConnectProtocol: WebSockets over HTTP/2 (extended CONNECT, RFC 8441) reach the data
    // plane through the server's 'connect' event.
    const h2Settings = {
      ...limits.http2,
      maxConcurrentStreams: limits.http2MaxConcurrentStreams,
      enableConnectProtocol: true,
    };

    if (this.scheme === 'https') {
      const first = bind.listeners.find((l) => l.secureContext)?.ir.tls;
      const secure = http2.createSecureServer(
        {
          allowHTTP1: true,
          Http1IncomingMessage: ChurnCountingRequest,
          Http2ServerRequest: ChurnCountingHttp2Request,
          settings: h2Settings,
          ...handshakeOption(limits),
          ...(first ? defaultContext(first) : {}),
          SNICallback: (servername, cb) => {
            const l = selectListener(this.current, servername.toLowerCase()) ?? this.current.listeners[0];
            cb(null, l?.secureContext);
          },
        },
        handler,
      );
      // HTTP/1.1 over TLS runs node's http connection code with the secure server's own defaults
      // (5 s keep-alive, 300 s request timeout); make it behave like the plain-text port.
      Object.assign(secure, http1Timeouts(opts));
      secure.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) =>
        answerClientError(err, socket, opts),
      );
      secure.on('session', onSession);
      // Upgrade requests over HTTP/1.1 on TLS take the same path as on plain text (below).
      Object.assign(secure, { shouldUpgradeCallback: proxiesUpgrade });
      secure.on('upgrade', onUpgrade);
      // Expect: 100-continue reaches the data plane unanswered; it sends the 100 when the body is read.
      secure.on('checkContinue', handler);
      // 'connect' is HTTP/2's CONNECT stream (request, response) or HTTP/1.1's CONNECT (request,
      // socket, head): the latter leaves HTTP as an upgrade does.
      secure.on('connect', (req: IncomingMessage | Http2ServerRequest, second: unknown, head?: Buffer) => {
        if ('stream' in req) handler(req, second as Http2ServerResponse);
        else onUpgrade(req, second as Socket, head ?? Buffer.alloc(0));
      });
      // Before the TLS handshake: a refused peer costs no crypto.
      secure.prependListener('connection', (socket: Socket) => {
        accept(socket);
      });
      secure.on('secureConnection', (s: Socket) => this.#track(s));
      // Node reports a handshake that timed out (handshakeTimeout) but leaves the connection open.
      secure.on('tlsClientError', (err, socket) => {
        opts.onClientError(err);
        socket.destroy();
      });
      secure.setTimeout(opts.idleTimeoutMs);
      applyClientCerts(secure, bind);
      setAlpn(secure, first?.alpn ?? HTTPS_ALPN);
      this.#handshake = first ? JSON.stringify(defaultContext(first, false)) : undefined;
      this.#h1 = undefined;
      this.#h2 = secure;
      this.#outer = secure;
    } else {
      // requestTimeout 0 (policies own request deadlines) would also turn node's headersTimeout off,
      // which is what leaves a half-sent request head holding its socket: set it explicitly.
      const h1 =
        http1ServerKind() === 'net'
          ? ownHttp1(handler, onUpgrade, opts)
          : nodeHttp1(handler, onUpgrade, opts);
      const h2 = http2.createServer(
        { settings: h2Settings, Http2ServerRequest: ChurnCountingHttp2Request },
        handler,
      );
      // Idle h2c sessions close like h2 over TLS ones (the secure server's setTimeout above).
      h2.setTimeout(opts.idleTimeoutMs);
      h2.on('session', onSession);
      // Expect: 100-continue reaches the data plane unanswered; it sends the 100 when the body is read.
      h2.on('checkContinue', handler);
      h2.on('connect', handler);
      this.#h1 = h1;
      this.#h2 = h2;
      this.#outer = net.createServer({ noDelay: true }, (socket) => {
        if (!accept(socket)) return;
        this.#track(socket);
        // Until its first byte a connection belongs to neither protocol server, so neither's timers
        // run: this one closes a connection that never sends anything.
        const first = this.#settings.limits.firstRequestTimeoutMs;
        const silent = () => socket.destroy();
        if (first > 0) {
          socket.setTimeout(first);
          socket.once('timeout', silent);
        }
        socket.once('data', (chunk: Buffer) => {
          if (first > 0) {
            socket.setTimeout(0);
            socket.off('timeout', silent);
          }
          socket.pause();
          if (startsWithPreface(chunk)) {
            this.#h2Sockets.add(socket);
            this.#handingOver = clientOf(socket);
            try {
              h2.emit('connection', wrapWithPrefix(socket, chunk));
            } finally {
              this.#handingOver = undefined;
            }
          } else {
            socket.unshift(chunk);
            if (h1 instanceof H1Server) h1.connection(socket);
            else {
              // As on node's own listener (allowHalfOpen: true): the HTTP server ends the connection
              // when the client ends its side (socketOnEnd), so net need not. Left false, net also
              // gives each such socket an own `write` (writeAfterFIN): the first client to close a
              // connection reshapes the socket objects the hot path was optimized for, and V8 throws
              // away the compiled code of some 40 functions of it (bench/TAIL.md).
              socket.allowHalfOpen = true;
              h1.emit('connection', socket);
            }
            socket.resume();
          }
        });
        socket.on('error', () => socket.destroy());
      });
    }
    // A PROXY header comes before all of it: admission, networkExtAuthz, TLS, HTTP.
    gateConnections(
      this.#outer,
      opts.proxyProtocol,
      () => this.#settings.limits.firstRequestTimeoutMs || PROXY_HEADER_TIMEOUT_MS,
      opts.onProxyRefused,
      this.scheme === 'http',
      holdFor(accept, opts.connectionCheck),
    );
  }

  /** Applies the settings of a new config to this bind's servers; open connections keep theirs. */
  configure(settings: BindSettings): void {
    const before = this.#settings.limits;
    this.#settings = settings;
    const h1 = this.#h1 ?? (this.#h2 as http2.Http2SecureServer);
    Object.assign(h1, http1Timeouts(settings));
    this.#h2.setTimeout(settings.idleTimeoutMs);
    const h2 = (l: DownstreamLimits) => JSON.stringify([l.http2MaxConcurrentStreams, l.http2]);
    if (h2(before) !== h2(settings.limits))
      this.#h2.updateSettings({
        // a setting no longer configured goes back to the protocol's default
        initialWindowSize: 65_535,
        maxFrameSize: 16_384,
        maxHeaderListSize: 65_535,
        ...settings.limits.http2,
        maxConcurrentStreams: settings.limits.http2MaxConcurrentStreams,
      });
    this.#applyHandshake();
  }

  /**
   * TLS versions, cipher suites and key exchange groups are settled before the SNI callback picks a
   * listener's context (OpenSSL keeps the first context's), so they are the server's own: those of the
   * port's listeners (which agree), set again when a new config changes them.
   */
  #applyHandshake(): void {
    if (this.scheme !== 'https') return;
    setHandshakeTimeout(this.#h2 as http2.Http2SecureServer, this.#settings.limits);
    applyClientCerts(this.#h2 as http2.Http2SecureServer, this.current);
    const first = this.current.listeners.find((l) => l.secureContext)?.ir.tls;
    setAlpn(this.#h2 as http2.Http2SecureServer, first?.alpn ?? HTTPS_ALPN);
    if (!first) return;
    const key = JSON.stringify(defaultContext(first, false));
    if (key === this.#handshake) return;
    (this.#h2 as http2.Http2SecureServer).setSecureContext(defaultContext(first));
    this.#handshake = key;
  }

  /**
   * A place for one more request under frontendPolicies.http.maxConcurrentRequests: the counter that
   * holds it (its `close()` gives it back when the response is sent); null: the bind has no limit;
   * false: it has its limit in flight.
   */
  startRequest(): ConnectionLimit | null | false {
    const max = this.#settings.limits.maxConcurrentRequests;
    if (max === undefined) return null;
    const requests = this.#settings.requests;
    if (requests.tryOpen(max)) return requests;
    this.#requestsRefused.note();
    return false;
  }

  /** Who sent `req`: the address of the connection it came on, whatever the protocol. */
  peer(req: IncomingMessage | Http2ServerRequest): Peer {
    if ('stream' in req) {
      const session = req.stream.session;
      const known = session && this.#peers.get(session);
      if (known) return known;
    }
    return clientOf(req.socket);
  }

  #track(s: Socket): void {
    const listed = this.#sockets.add(s);
    s.once('close', () => this.#sockets.delete(listed));
    const lifetime = this.#settings.limits.maxConnectionDurationMs;
    if (lifetime > 0) {
      const timer = setTimeout(() => this.#retire(s), lifetime);
      s.once('close', () => clearTimeout(timer));
    }
  }

  /**
   * maxConnectionDuration on an HTTP/1 connection: closed now when idle, else once the response in
   * flight is sent, which says `connection: close` when its head has not gone yet. An HTTP/2
   * connection gets GOAWAY from its session's own timer (onSession).
   */
  #retire(s: Socket): void {
    if (this.#h2Sockets.has(s) || (s as Socket & { alpnProtocol?: string | false }).alpnProtocol === 'h2')
      return;
    // an upgraded connection (WebSocket, CONNECT) is its one request: it lasts until it closes
    if (leftHttp.has(s)) return;
    // node's http server keeps the response being written on its socket (_httpMessage)
    const res = (s as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
    if (!res) {
      s.end();
      return;
    }
    if (!res.headersSent) res.shouldKeepAlive = false;
    res.once('finish', () => s.end());
  }

  get port(): number {
    return this.#port;
  }

  /** An internal bind (mode internal): no socket; `port` (0: any) is what tunnels reach it by. */
  internal(port: number): void {
    this.#port = port;
  }

  /**
   * A connection that reached this bind through a CONNECT tunnel (connect-tunnel.ts): served as one
   * accepted on the port, admission and connection checks included.
   */
  adopt(socket: Duplex): void {
    this.#outer.emit('connection', socket);
  }

  /** The most headers an HTTP/1 request may have (frontendPolicies.http.http1MaxHeaders); 0: Node's bound. */
  get http1MaxHeaders(): number {
    return this.#settings.limits.http1MaxHeaders ?? 0;
  }

  /** frontendPolicies.http.http1HeaderCase preserve. */
  get preserveHeaderCase(): boolean {
    return this.#settings.limits.preserveHeaderCase === true;
  }

  /** How long a connection may sit without traffic (frontend http1IdleTimeout); 0: no limit. */
  get idleTimeoutMs(): number {
    return this.#settings.idleTimeoutMs;
  }

  async listen(address: string, port: number, reusePort: boolean): Promise<number> {
    this.#port = await listenOn(this.#outer, address, port, reusePort);
    return this.#port;
  }

  /** Stops accepting and asks open connections to finish: idle HTTP/1 ones close, h2 gets GOAWAY. */
  stopAccepting(): void {
    this.retired = true;
    this.#outer.close();
    // Closes the idle connections and stops h1's timer checks (h1 itself never listened).
    this.#h1?.close();
    for (const s of this.#sessions) s.close();
  }

  closeIdle(): void {
    this.#h1?.closeIdleConnections();
  }

  destroyAll(): void {
    for (const s of this.#sessions) s.destroy();
    for (const s of this.#sockets) s.destroy();
  }

  get connections(): number {
    return this.#sockets.size;
  }
}

/** node's HTTP/1.1 server for a plain-text bind (GW_HTTP1_SERVER unset or `node`). */
function nodeHttp1(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  onUpgrade: (req: IncomingMessage, socket: Socket, head: Buffer) => void,
  opts: BindServerOptions,
): http.Server {
  // requestTimeout 0 (policies own request deadlines) would also turn node's headersTimeout off,
  // which is what leaves a half-sent request head holding its socket: set it explicitly.
  const h1 = http.createServer(
    {
      ...http1Timeouts(opts),
      shouldUpgradeCallback: proxiesUpgrade,
      IncomingMessage: ChurnCountingRequest,
      optimizeEmptyRequests: true,
    },
    handler,
  );
  h1.on('upgrade', onUpgrade);
  // CONNECT leaves HTTP as an upgrade does (the data plane answers it: frontendPolicies.connect).
  h1.on('connect', onUpgrade);
  // h1 never listens (connections are handed to it), and node starts the list of connections
  // whose header and request timers it checks on 'listening': start it here.
  h1.emit('listening');
  h1.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => answerClientError(err, socket, opts));
  // Expect: 100-continue reaches the data plane unanswered; it sends the 100 when the body is read.
  h1.on('checkContinue', handler);
  return h1;
}

/** gw's own HTTP/1.1 server on node:net (GW_HTTP1_SERVER=net; see h1-server.ts). */
function ownHttp1(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  onUpgrade: (req: IncomingMessage, socket: Socket, head: Buffer) => void,
  opts: BindServerOptions,
): H1Server {
  const h1 = new H1Server({
    // H1Response is the slice of ServerResponse the data plane writes through
    request: (req, res) => handler(req, res as unknown as ServerResponse),
    upgrade: onUpgrade,
    shouldUpgrade: proxiesUpgrade,
    clientError: (err, socket) => answerClientError(err, socket, opts),
  });
  Object.assign(h1, http1Timeouts(opts));
  return h1;
}

/** Statuses for HTTP/1 parse errors other than 400, as node's default handler and hyper send them. */
const CLIENT_ERROR_STATUS: Record<string, string> = {
  HPE_HEADER_OVERFLOW: '431 Request Header Fields Too Large',
  ERR_HTTP_REQUEST_TIMEOUT: '408 Request Timeout',
};

/** Connections whose parse error is answered (or waits for the answers owed before it). */
const erred = new WeakSet<Socket>();

/**
 * An HTTP/1 request that cannot be parsed gets a status and a one-line reason, then the connection
 * closes. Answers owed to the requests before it on the connection (pipelined) go out first, in order
 * (RFC 9112 §9.3.2); bytes after a request that said `Connection: close` are not a request at all
 * (§9.6): its answer ends the connection, with no 400 after it.
 */
function answerClientError(err: NodeJS.ErrnoException, socket: Socket, opts: BindServerOptions): void {
  if (erred.has(socket)) return;
  erred.add(socket);
  opts.onClientError(err);
  if (!socket.writable || err.code === 'ECONNRESET') {
    socket.destroy();
    return;
  }
  const closing = err.code === 'HPE_CLOSED_CONNECTION';
  if (owedAnswer(socket)) {
    socket.pause();
    if (!closing) afterOwedAnswers(socket, () => refuse(err, socket));
    return;
  }
  if (closing) socket.end();
  else refuse(err, socket);
}

function refuse(err: NodeJS.ErrnoException, socket: Socket): void {
  if (!socket.writable) return;
  const status = CLIENT_ERROR_STATUS[err.code ?? ''] ?? '400 Bad Request';
  const reason = `bad request: ${err.code ?? err.message}\n`;
  socket.end(
    `HTTP/1.1 ${status}\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(reason)}\r\nconnection: close\r\n\r\n${reason}`,
  );
}

/**
 * The answer a connection is writing (node's http server and h1-server.ts both keep it on the
 * socket) to a request read whole: the answer to the request the error cut short is not owed.
 */
function owedAnswer(socket: Socket): ServerResponse | undefined {
  const res = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
  return res && !res.writableFinished && res.req.complete ? res : undefined;
}

/** `then`, once the connection wrote every answer it owes (the next pipelined one takes the socket). */
function afterOwedAnswers(socket: Socket, then: () => void): void {
  const res = owedAnswer(socket);
  if (!res) {
    then();
    return;
  }
  let seen = false;
  const next = () => {
    if (seen) return;
    seen = true;
    setImmediate(() => afterOwedAnswers(socket, then));
  };
  res.once('finish', next);
  res.once('close', next);
}

/**
 * The longest HTTP/1 request head (request line and headers) a bind reads; a longer one is answered
 * 431. node's default (16 KiB) turned away requests with large cookies or tokens that HTTP/2 clients
 * could send (its header list is 64 KiB, maxHeaderListSize) and other proxies pass (Envoy 60 KiB).
 */
export const HTTP1_MAX_HEADER_SIZE = 64 * 1024;

/**
 * node's HTTP/1 timers. requestHeadersTimeout also bounds the wait for the first request of a new
 * connection (node counts from the connection's start). Expiry is checked on an interval, which is
 * kept well below the timeout so a connection is cut close to its deadline.
 */
function http1Timeouts(s: BindSettings): {
  keepAliveTimeout: number;
  requestTimeout: number;
  headersTimeout: number;
  connectionsCheckingInterval: number;
  maxHeadersCount: number;
  maxHeaderSize: number;
} {
  const headers = s.limits.requestHeadersTimeoutMs;
  const max = s.limits.http1MaxHeaders;
  return {
    keepAliveTimeout: s.idleTimeoutMs,
    requestTimeout: 0,
    headersTimeout: headers,
    connectionsCheckingInterval: headers > 0 ? Math.min(1000, Math.max(25, Math.floor(headers / 4))) : 1000,
    // Node keeps the first maxHeadersCount headers and drops the rest without a word: one more than
    // the limit is read, so the data plane can tell a request over it and answer 431.
    maxHeadersCount: max === undefined ? 2000 : max + 1,
    maxHeaderSize: HTTP1_MAX_HEADER_SIZE,
  };
}

/**
 * Which Upgrade requests leave HTTP for the data plane's 'upgrade' path. `h2c` is refused here: the
 * HTTP/2 upgrade is between the client and gw (which speaks h2c by prior knowledge only), so such a
 * request is served as the plain HTTP/1.1 request it also is, as RFC 9110 lets a server do.
 */
function proxiesUpgrade(req: IncomingMessage): boolean {
  const token = req.headers.upgrade;
  return token !== undefined && token.trim().toLowerCase() !== 'h2c';
}

function startsWithPreface(chunk: Buffer): boolean {
  const n = Math.min(chunk.length, H2_PREFACE.length);
  return n >= 4 && chunk.subarray(0, n).equals(H2_PREFACE.subarray(0, n));
}

/**
 * http2 reads a net.Socket's handle directly, past anything unshifted, so for h2c the peeked bytes
 * are replayed through a small Duplex in front of the socket.
 */
function wrapWithPrefix(socket: Socket, first: Buffer): Duplex {
  const d = new Duplex({
    read() {
      socket.resume();
    },
    write(chunk, enc, cb) {
      socket.write(chunk, enc, cb);
    },
    final(cb) {
      socket.end(cb);
    },
    destroy(err, cb) {
      socket.destroy(err ?? undefined);
      cb(err);
    },
  });
  Object.assign(d, { encrypted: false });
  d.push(first);
  socket.on('data', (c: Buffer) => {
    if (!d.push(c)) socket.pause();
  });
  socket.on('end', () => d.push(null));
  socket.on('error', (e) => d.destroy(e));
  socket.on('close', () => d.destroy());
  return d;
}

/**
 * HTTP/2 keepalive: a PING every `intervalMs`; one not answered within `timeoutMs` closes the
 * session (a peer that is gone, or a path that dropped the connection without a FIN).
 */
function pingEvery(s: Http2Session, intervalMs: number, timeoutMs: number): void {
  let deadline: NodeJS.Timeout | undefined;
  const answered = () => {
    clearTimeout(deadline);
    deadline = undefined;
  };
  const timer = setInterval(() => {
    // one PING in flight at a time
    if (s.destroyed || s.closed || deadline) return;
    deadline = setTimeout(() => s.destroy(), timeoutMs);
    if (!s.ping(answered)) answered();
  }, intervalMs);
  s.once('close', () => {
    clearInterval(timer);
    clearTimeout(deadline);
  });
}
