// The upstream half of a protocol upgrade (WebSocket and other `Upgrade:` tokens): a connection of its
// own to the backend (a pooled keep-alive connection cannot change protocols), the handshake as the
// route's policies left it, and either the 101 with the upgraded socket or an ordinary response.
import http, { type IncomingMessage } from 'node:http';
import type { ServerHttp2Stream } from 'node:http2';
import net, { type Socket } from 'node:net';
import tls from 'node:tls';
import { GwError } from '../errors.ts';
import type { RequestContext } from '../pipeline/context.ts';
import type { Relay } from '../server/splice.ts';
import { inClientCase, responseHeaders, toGwError, upstreamHost } from './call.ts';
import { dnsConnectOptions, ownTlsOptions, type PoolSpec } from './pools.ts';
import { dialThrough, tunnelDialer } from './tunnel-dial.ts';

declare module '../pipeline/context.ts' {
  interface RequestExtensions {
    /** Set when the request asks to switch protocols (it came through the server's 'upgrade'). */
    upgrade?: UpgradeState;
  }
}

export interface UpgradeState {
  /** The client's Upgrade header (HTTP/2: its `:protocol`): the protocols it asks for. */
  protocol: string;
  /** HTTP/1.1: the client's connection, taken out of HTTP; the response to the handshake is written on it. */
  socket?: Socket;
  /** HTTP/2 extended CONNECT (RFC 8441): the client's stream, which carries the new protocol. */
  stream?: ServerHttp2Stream;
  /** HTTP/2: the bind's idle timeout, for the joined stream and connection. */
  idleMs?: number;
  /** What the client sent after the handshake's head. */
  head: Buffer;
  /**
   * A CONNECT (frontendPolicies.connect route): the backend gets a TCP connection rather than a
   * handshake, the client a 200 once it is open, and the two are joined.
   */
  connect?: true;
  /**
   * A CONNECT tunnel into one of the gateway's own binds (server/connect-tunnel.ts): hands the client's
   * connection over once the 200 is written.
   */
  handover?: () => void;
  /** The backend's connection once it answered 101, and what it sent after its response head. */
  upstream?: { socket: Socket; head: Buffer };
  /** The client socket's byte counters when the two sockets were joined (for the access log). */
  spliced?: { read: number; written: number };
  /**
   * Called when an HTTP/2 stream becomes the tunnel (its 200 written, the stream itself going on):
   * the request is over, as an HTTP/1.1 one is when its answer is sent.
   */
  joined?: () => void;
  /**
   * Reads what the backend sends after the switch, as it passes to the client (a realtime session's
   * token usage). `settle` runs when the connection has closed, before the request's end is
   * recorded (access log, metrics).
   */
  reader?: { write(chunk: Buffer): void; settle(): Promise<void> };
  /** Reads and may change the messages each way (a realtime session's guards); unset: bytes pass as they are. */
  relay?: Relay;
}

/** Gives the upgrade's reader, if any, what the backend sends from the switch on. */
export function readUpstream(state: UpgradeState): void {
  const reader = state.reader;
  const up = state.upstream;
  if (!reader || !up) return;
  if (up.head.length > 0) reader.write(up.head);
  up.socket.on('data', (chunk: Buffer) => reader.write(chunk));
}

/** Where an upgraded connection goes: an address or a unix socket, with the backend's connection settings. */
export interface UpgradeTarget {
  /** host:port (or unix:/path), as logs and `authority: auto` name it. */
  endpoint: string;
  host: string;
  port: number;
  socketPath?: string | undefined;
  spec: Omit<PoolSpec, 'origin'>;
  /** The Host a backend named by DNS name sends by default (see call.ts upstreamHost). */
  hostHeader?: string | undefined;
}

/** `[::1]` → `::1`: the host part of an endpoint as net.connect wants it. */
function bare(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/** Splits `host:port` (IPv6 in brackets) with the scheme's default port. */
export function upgradeTarget(
  endpoint: string,
  spec: Omit<PoolSpec, 'origin'>,
  socketPath?: string,
): UpgradeTarget {
  if (socketPath) return { endpoint, host: 'localhost', port: 0, socketPath, spec };
  const i = endpoint.lastIndexOf(':');
  const hasPort = i > endpoint.lastIndexOf(']');
  return {
    endpoint,
    host: bare(hasPort ? endpoint.slice(0, i) : endpoint),
    port: hasPort ? Number(endpoint.slice(i + 1)) : spec.tls ? 443 : 80,
    spec,
  };
}

/**
 * The TLS options of a connection to the backend. ALPN offers `alpn` only (null: none): the upgrade
 * is an HTTP/1.1 mechanism (an h2 upstream would need extended CONNECT), and a tunnel offers what
 * backendTLS names, if anything.
 */
function backendTls(t: UpgradeTarget, alpn: string[] | null): tls.ConnectionOptions | undefined {
  return t.spec.tls && ownTlsOptions(t.spec.tls, t.socketPath ? undefined : t.host, alpn);
}

/**
 * A connection of its own to the backend, opened through its backendTunnel's proxy (CONNECT), with
 * TLS inside when it has backendTLS (tunnel-dial.ts); the opening's deadlines (openingDeadlines)
 * bound it.
 */
function connectThroughTunnel(
  t: UpgradeTarget,
  alpn: string[] | null,
  done: (err: Error | undefined, socket?: Socket) => void,
): { destroy(): void } {
  const dial = tunnelDialer(t.spec.tunnel as NonNullable<UpgradeTarget['spec']['tunnel']>, 0);
  return dialThrough(dial, t.host, t.port, backendTls(t, alpn), 0, done);
}

/** A connection of its own to the backend; over TLS, ALPN offers `alpn` (null: no ALPN). */
function connect(t: UpgradeTarget, alpn: string[] | null): Socket {
  const { spec } = t;
  const where: net.NetConnectOpts = t.socketPath
    ? { path: t.socketPath }
    : { host: t.host, port: t.port, noDelay: true, ...dnsConnectOptions(spec.dns) };
  const options = backendTls(t, alpn);
  const socket = options
    ? tls.connect({ ...(where as tls.ConnectionOptions), ...options })
    : net.connect(where);
  if (spec.keepalive.enabled) socket.setKeepAlive(true, spec.keepalive.timeMs);
  return socket;
}

/**
 * A connection of gw's own to the backend, direct or through its backendTunnel: `done` gets it once
 * open (TLS: after the handshake), or the error. What it returns gives the attempt up.
 */
function open(
  t: UpgradeTarget,
  alpn: string[] | null,
  done: (err: Error | undefined, socket?: Socket) => void,
): { destroy(): void } {
  if (t.spec.tunnel)
    return connectThroughTunnel(t, alpn, (err, s) =>
      done(err && new GwError('GW_ERR_UPSTREAM_CONNECT', err.message), s),
    );
  const socket = connect(t, alpn);
  const failed = (err: Error) => done(err);
  socket.once('error', failed);
  socket.once(t.spec.tls ? 'secureConnect' : 'connect', () => {
    socket.off('error', failed);
    done(undefined, socket);
  });
  return {
    destroy() {
      // whatever the socket still reports once it is given up on goes nowhere
      socket.on('error', () => {});
      socket.destroy();
    },
  };
}

/**
 * Sends the handshake and waits for the backend's answer: a 101 leaves ctx.ext.upgrade.upstream set
 * and a bodiless 101 in ctx.response; anything else is relayed as a normal response. The deadlines
 * (connect timeout, the attempt's timeout, the request's abort) cover the handshake only: once the
 * protocols switched, the connection lives as long as its two ends (and the idle timeout) allow.
 */
export function upgradeUpstream(
  ctx: RequestContext,
  target: UpgradeTarget,
  attemptTimeoutMs: number,
): Promise<void> {
  const state = ctx.ext.upgrade;
  if (!state) return Promise.reject(new GwError('GW_ERR_INTERNAL', 'not an upgrade request'));
  const headers = ctx.headers;
  const host = upstreamHost(ctx, target);
  if (host !== undefined) headers.host = host;
  ctx.endpoint = target.endpoint;
  if (ctx.abortReason !== undefined) return Promise.reject(ctx.abortReason);

  if (state.connect) return openTunnel(ctx, state, target, attemptTimeoutMs);

  return new Promise<void>((resolve, reject) => {
    /** The opening under way (createConnection runs within http.request). */
    let opener: { destroy(): void } | undefined;
    const req = http.request({
      method: ctx.method,
      path: ctx.path + ctx.query,
      headers: {
        ...(ctx.ext.clientHeaderCase ? inClientCase(headers, ctx.ext.clientHeaderCase) : headers),
        connection: 'Upgrade',
        upgrade: state.protocol,
      },
      setHost: false,
      // node's request takes the connection once it is open, through the callback
      createConnection: (_opts: unknown, oncreate: (err: Error | null, socket?: Socket) => void) => {
        opener = open(target, ['http/1.1'], (err, s) => {
          if (err || !s) return oncreate(err ?? new GwError('GW_ERR_UPSTREAM_CONNECT'));
          opening.connected();
          oncreate(null, s);
          // a tunnel leaves it paused; node's request reads it from its next turn (before this resumes)
          if (s.isPaused()) s.resume();
        });
        return undefined;
      },
    } as http.RequestOptions);
    const opening = openingDeadlines(ctx, target, attemptTimeoutMs, (err) => {
      opener?.destroy();
      req.destroy();
      reject(toGwError(err));
    });

    req.on('upgrade', (res: IncomingMessage, upgraded: Socket, head: Buffer) => {
      if (!opening.settle()) {
        upgraded.destroy();
        return;
      }
      state.upstream = { socket: upgraded, head };
      const h = responseHeaders(res.headers);
      h.connection = 'Upgrade';
      h.upgrade = res.headers.upgrade ?? state.protocol;
      ctx.response = { status: 101, headers: h, body: null };
      resolve();
    });
    req.on('response', (res: IncomingMessage) => {
      if (!opening.settle()) {
        res.destroy();
        return;
      }
      ctx.response = { status: res.statusCode ?? 502, headers: responseHeaders(res.headers), body: res };
      resolve();
    });
    req.on('error', opening.fail);
    req.end();
  });
}

/**
 * The deadlines of opening a connection of gw's own to the backend: its connect timeout (until
 * `connected`), the attempt's timeout and the request's abort. The first of them, or `fail`, runs
 * `onFail` once; `settle` ends them all, and says whether it came first.
 */
function openingDeadlines(
  ctx: RequestContext,
  target: UpgradeTarget,
  attemptTimeoutMs: number,
  onFail: (err: unknown) => void,
): { fail(err: unknown): void; settle(): boolean; connected(): void } {
  let settled = false;
  const connectMs = target.spec.connectTimeoutMs;
  const where = target.socketPath ?? target.endpoint;
  const fail = (err: unknown) => {
    if (settle()) onFail(err);
  };
  const hook = { abort: fail };
  const connectTimer =
    connectMs > 0
      ? setTimeout(
          () =>
            fail(
              new GwError(
                'GW_ERR_UPSTREAM_CONNECT',
                `upstream connect error: timeout after ${connectMs}ms (${where})`,
              ),
            ),
          connectMs,
        )
      : undefined;
  const attemptTimer =
    attemptTimeoutMs > 0
      ? setTimeout(() => fail(new GwError('GW_ERR_BACKEND_TIMEOUT')), attemptTimeoutMs)
      : undefined;
  const settle = () => {
    if (settled) return false;
    settled = true;
    clearTimeout(connectTimer);
    clearTimeout(attemptTimer);
    ctx.removeAbortHook(hook);
    return true;
  };
  ctx.addAbortHook(hook);
  return { fail, settle, connected: () => clearTimeout(connectTimer) };
}

/**
 * A CONNECT's tunnel: a TCP connection of the gateway's own to the backend (TLS with backendTLS,
 * offering ALPN only when backendTLS names it: the bytes are the client's), and a bodiless 200 once
 * it is open. The connect timeout, the attempt's timeout and the request's abort cover the opening.
 */
function openTunnel(
  ctx: RequestContext,
  state: UpgradeState,
  target: UpgradeTarget,
  attemptTimeoutMs: number,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const opening = openingDeadlines(ctx, target, attemptTimeoutMs, (err) => {
      opener.destroy();
      reject(toGwError(err));
    });
    const opener = open(target, target.spec.tls?.alpn ?? null, (err, socket) => {
      if (err || !socket) {
        opening.fail(err ?? new GwError('GW_ERR_UPSTREAM_CONNECT'));
        return;
      }
      if (!opening.settle()) {
        socket.destroy();
        return;
      }
      // errors after this point end the joined connections (splice)
      socket.on('error', () => socket.destroy());
      state.upstream = { socket, head: Buffer.alloc(0) };
      ctx.response = { status: 200, headers: {}, body: null };
      resolve();
    });
  });
}
