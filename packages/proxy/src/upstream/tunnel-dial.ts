// backendTunnel for connections undici does not make (a tcp route's, an upgrade's): an HTTP/1.1
// CONNECT to the forward proxy (over TLS to an https proxy, with the proxy's credential), and once it
// answers 2xx the socket carries the backend's bytes; TLS to the backend, when it has backendTLS, goes
// inside it.
import { isIP, type Socket } from 'node:net';
import tls from 'node:tls';
import { hostPort, splitHostPort } from '@gw/api/runtime';
import type { buildConnector as Connector } from 'undici';
import type { TunnelIR } from '../config/ir.ts';
import { dialInTurn } from './in-turn.ts';
import { tlsConnectOptions } from './pools.ts';
import { buildConnector } from './undici.ts';

/** The most a proxy's answer head to CONNECT may take. */
const MAX_ANSWER_HEAD = 16 * 1024;

/** One CONNECT through the proxy; `cancel` stops it, closing what it opened, and `done` is not called. */
export type TunnelDialer = (
  host: string,
  port: number,
  done: (err: Error | undefined, socket?: Socket) => void,
) => { cancel(): void };

/** Dialers by tunnel and deadline: a Service's turn, skipped workloads and TLS sessions are kept. */
const dialers = new WeakMap<TunnelIR, Map<number, TunnelDialer>>();

/** Opens connections through `t` to a host:port of the caller's; `timeoutMs` bounds each (0: none). */
export function tunnelDialer(t: TunnelIR, timeoutMs: number): TunnelDialer {
  const byTimeout = dialers.get(t) ?? new Map<number, TunnelDialer>();
  dialers.set(t, byTimeout);
  const d = byTimeout.get(timeoutMs) ?? newDialer(t, timeoutMs);
  byTimeout.set(timeoutMs, d);
  return d;
}

function newDialer(t: TunnelIR, timeoutMs: number): TunnelDialer {
  const { host: proxyHost, port: proxyPort } = splitHostPort(t.proxy);
  const direct = buildConnector({
    ...(t.tls ? tlsConnectOptions(t.tls, false) : {}),
    ...(t.tls && !t.tls.alpn ? { ALPNProtocols: ['http/1.1'] } : {}),
    // undici reads 0 as no deadline of its own
    timeout: timeoutMs,
  } as Connector.BuildOptions);
  const toProxy = t.endpoints ? dialInTurn(direct, t.endpoints) : direct;
  const servername = t.tls?.hostname ?? (isIP(proxyHost) === 0 ? proxyHost : undefined);
  // undici's connector returns the socket it opens, though its types say void
  const open = toProxy as (o: Connector.Options, cb: Connector.Callback) => Socket | undefined;
  return (host, port, done) => {
    let settled = false;
    let pending: Socket | undefined;
    const finish = (err: Error | undefined, socket?: Socket) => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      if (err) (socket ?? pending)?.destroy();
      done(err, err ? undefined : socket);
    };
    // the connector's own deadline covers reaching the proxy; this one its answer too
    const timer =
      timeoutMs > 0
        ? setTimeout(
            () => finish(new Error(`backendTunnel: no answer to CONNECT within ${timeoutMs}ms (${t.proxy})`)),
            timeoutMs,
          )
        : undefined;
    const authority = hostPort(host, port);
    pending = open(
      {
        hostname: proxyHost,
        host: t.proxy,
        protocol: t.tls ? 'https:' : 'http:',
        port: String(proxyPort),
        ...(servername ? { servername } : {}),
        localAddress: null,
        httpSocket: undefined,
      } as unknown as Connector.Options,
      (err, socket) => {
        const s = socket as Socket | null;
        if (settled) {
          s?.destroy();
          return;
        }
        if (err || !s) {
          finish(new Error(`backendTunnel: the proxy ${t.proxy} could not be reached: ${err?.message}`));
          return;
        }
        pending = s;
        const auth = t.auth ? `${t.auth.header}: ${t.auth.value.reveal()}\r\n` : '';
        s.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n${auth}\r\n`);
        let head = Buffer.alloc(0);
        const fail = (e: Error) => finish(e, s);
        const onClose = () =>
          fail(new Error(`backendTunnel: the proxy ${t.proxy} closed before answering CONNECT`));
        const onData = (chunk: Buffer) => {
          head = Buffer.concat([head, chunk]);
          const end = head.indexOf('\r\n\r\n');
          if (end === -1) {
            if (head.length > MAX_ANSWER_HEAD)
              fail(new Error(`backendTunnel: the proxy's answer to CONNECT has no end of head`));
            return;
          }
          s.off('data', onData);
          s.off('error', fail);
          s.off('close', onClose);
          s.pause();
          const status = /^HTTP\/1\.[01] ([0-9]{3})/.exec(head.subarray(0, end).toString('latin1'));
          if (!status || !(status[1] as string).startsWith('2')) {
            fail(
              new Error(
                `backendTunnel: the proxy ${t.proxy} answered CONNECT ${authority} with ${status ? status[1] : 'something not HTTP'}`,
              ),
            );
            return;
          }
          const rest = head.subarray(end + 4);
          if (rest.length > 0) s.unshift(rest);
          finish(undefined, s);
        };
        s.on('data', onData);
        s.once('error', fail);
        s.once('close', onClose);
      },
    );
    return {
      cancel() {
        if (settled) return;
        settled = true;
        if (timer) clearTimeout(timer);
        pending?.destroy();
      },
    };
  };
}

/**
 * One connection to host:port through `dial`, with TLS to the backend inside the tunnel when
 * `tlsOptions` are given: `done` gets it once ready (TLS: after the handshake), or the error, within
 * `timeoutMs` (0: none). What it returns stops the attempt, or closes what was made.
 */
export function dialThrough(
  dial: TunnelDialer,
  host: string,
  port: number,
  tlsOptions: tls.ConnectionOptions | undefined,
  timeoutMs: number,
  done: (err: Error | undefined, socket?: Socket) => void,
): { destroy(): void } {
  let raw: Socket | undefined;
  let socket: Socket | undefined;
  let over = false;
  const end = (err: Error | undefined, s?: Socket) => {
    if (over) return;
    over = true;
    if (timer) clearTimeout(timer);
    if (err) {
      socket?.destroy();
      raw?.destroy();
    }
    done(err, err ? undefined : s);
  };
  const attempt = dial(host, port, (err, through) => {
    if (err || !through) {
      end(err ?? new Error('backendTunnel: no connection'));
      return;
    }
    raw = through;
    if (!tlsOptions) {
      socket = through;
      end(undefined, through);
      return;
    }
    const secure = tls.connect({ ...tlsOptions, socket: through });
    socket = secure;
    const failed = (e: Error) => end(e);
    secure.once('error', failed);
    secure.once('secureConnect', () => {
      secure.off('error', failed);
      end(undefined, secure);
    });
  });
  const timer =
    timeoutMs > 0
      ? setTimeout(() => {
          attempt.cancel();
          end(
            new Error(
              `upstream connect error: timeout after ${timeoutMs}ms (${host}:${port}, through the backendTunnel)`,
            ),
          );
        }, timeoutMs)
      : undefined;
  return {
    destroy() {
      if (!over) {
        over = true;
        if (timer) clearTimeout(timer);
      }
      attempt.cancel();
      socket?.destroy();
      raw?.destroy();
    },
  };
}
