// The backend side of a proxied TCP connection: a connection of its own to host:port (or a unix
// socket), plain or TLS (backendTLS), directly or through a backendTunnel's forward proxy, with the
// backend's connect timeout and TCP keepalive, as a pooled HTTP connection would have them
// (connection.ts), but never pooled: it lives as long as the client's connection.
import net, { type Socket } from 'node:net';
import tls from 'node:tls';
import { hostPort } from '@gw/api/runtime';
import type { GlobalIR, TcpBackendIR } from '../config/ir.ts';
import { connectionSpec } from './connection.ts';
import { dnsConnectOptions, ownTlsOptions } from './pools.ts';
import { dialThrough, tunnelDialer } from './tunnel-dial.ts';

export interface TcpEndpoint {
  /** host:port or unix:/path, as logs name it. */
  address: string;
  tls: boolean;
  /**
   * Opens the connection; `done` gets the socket once it is ready (TLS: after the handshake), or the
   * error. What it returns stops the attempt (or closes the connection made).
   */
  connect(done: (err: Error | undefined, socket: Socket) => void): { destroy(): void };
}

/** A backend with the place to dial: host:port or a unix socket. */
export type DialableTcpBackend = Omit<TcpBackendIR, 'target'> & {
  target: Exclude<TcpBackendIR['target'], { kind: 'dynamic' }>;
};

export function tcpEndpoint(b: DialableTcpBackend, global: GlobalIR): TcpEndpoint {
  const spec = connectionSpec(b.policies, global);
  const t = b.target;
  const where: net.NetConnectOpts =
    t.kind === 'unix'
      ? { path: t.path }
      : { host: t.host, port: t.port, noDelay: true, ...dnsConnectOptions(spec.dns) };
  const address = t.kind === 'unix' ? `unix:${t.path}` : hostPort(t.host, t.port);
  let tlsOptions: tls.ConnectionOptions | undefined;
  if (spec.tls) {
    // ALPN only when configured: the bytes are the client's, in whatever protocol it speaks
    const o = ownTlsOptions(spec.tls, t.kind === 'host' ? t.host : undefined, spec.tls.alpn);
    tlsOptions = { ...(where as tls.ConnectionOptions), ...o };
  }
  const { connectTimeoutMs, keepalive } = spec;
  const tunnel = spec.tunnel && t.kind === 'host' ? tunnelDialer(spec.tunnel, connectTimeoutMs) : undefined;
  if (tunnel && t.kind === 'host')
    return {
      address,
      tls: tlsOptions !== undefined,
      connect: (done) =>
        dialThrough(tunnel, t.host, t.port, tlsOptions, connectTimeoutMs, (err, s) => done(err, s as Socket)),
    };
  return {
    address,
    tls: tlsOptions !== undefined,
    connect(done) {
      const socket = tlsOptions ? tls.connect(tlsOptions) : net.connect(where);
      let settled = false;
      const finish = (err: Error | undefined) => {
        if (settled) return;
        settled = true;
        if (timer) clearTimeout(timer);
        socket.off('error', finish);
        if (err) socket.destroy();
        done(err, socket);
      };
      const timer =
        connectTimeoutMs > 0
          ? setTimeout(
              () =>
                finish(new Error(`upstream connect error: timeout after ${connectTimeoutMs}ms (${address})`)),
              connectTimeoutMs,
            )
          : undefined;
      socket.once(tlsOptions ? 'secureConnect' : 'connect', () => {
        if (keepalive.enabled && t.kind === 'host')
          // Under a second the kernel's unit would round the interval to 0, which it refuses.
          socket.setKeepAlive(
            true,
            keepalive.timeMs,
            keepalive.intervalMs >= 1000 ? keepalive.intervalMs : undefined,
            keepalive.retries,
          );
        finish(undefined);
      });
      socket.once('error', finish);
      return socket;
    },
  };
}
