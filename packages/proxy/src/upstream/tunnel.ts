// backendTunnel: a backend's connections go through an HTTP forward proxy. undici's ProxyAgent does
// the protocol (CONNECT, then TLS to the backend inside the tunnel; or the request in absolute form for
// plaintext HTTP/1.1); this module gives it the backend's pool settings and pins the backend's origin,
// so a tunnel is used exactly like the Pool a backend without one gets. A proxy given as a Service is
// dialled at its workloads in turn.
import type { Socket } from 'node:net';
import type { buildConnector as Connector, Dispatcher } from 'undici';
import type { TunnelIR } from '../config/ir.ts';
import { dialInTurn } from './in-turn.ts';
import { buildConnector, Pool, ProxyAgent } from './undici.ts';

/** What a tunnel needs of the backend's pool settings (PoolSpec, without a cycle of imports). */
export interface TunnelSpec {
  origin: string;
  tunnel: TunnelIR;
  tls?: unknown;
  allowH2: boolean;
  h2c?: boolean;
  maxConnections: number | null;
  idleTimeoutMs: number;
}

export interface TunnelParts {
  /** TLS options of the backend's connection inside the tunnel (tlsConnectOptions). */
  requestTls: Record<string, unknown> | undefined;
  /** TLS options of the connection to the proxy, for an https proxy. */
  proxyTls: Record<string, unknown> | undefined;
  /** Wraps a connector with the connect deadline and keepalive probes of the backend's pools. */
  wrap(connect: Connector.connector): Connector.connector;
  /** undici's connector options for sockets to the proxy (keepalive, no undici timer). */
  connectOptions: Record<string, unknown>;
}

/** Whether requests go by CONNECT: always in mode Connect; in Auto for TLS and HTTP/2 (h2c) backends. */
export function tunnelsByConnect(spec: Pick<TunnelSpec, 'origin' | 'tunnel' | 'h2c'>): boolean {
  return spec.tunnel.mode === 'Connect' || spec.origin.startsWith('https:') || spec.h2c === true;
}

export function createTunnel(spec: TunnelSpec, parts: TunnelParts): Dispatcher {
  const t = spec.tunnel;
  const proxyOrigin = `${t.tls ? 'https' : 'http'}://${t.proxy}`;
  const direct = buildConnector({ ...parts.connectOptions, ...parts.proxyTls } as Connector.BuildOptions);
  // each workload dialled gets the connect deadline of its own
  const toProxy = t.endpoints ? dialInTurn(parts.wrap(direct), t.endpoints) : parts.wrap(direct);
  const poolOptions = {
    connections: spec.maxConnections,
    keepAliveTimeout: spec.idleTimeoutMs,
    keepAliveMaxTimeout: spec.idleTimeoutMs,
    // Policies own the deadlines (timeout, backendRequestTimeout), as on the direct pools.
    headersTimeout: 0,
    bodyTimeout: 0,
  };
  const agent = new ProxyAgent({
    uri: proxyOrigin,
    proxyTunnel: tunnelsByConnect(spec),
    ...(t.auth ? { headers: { [t.auth.header]: t.auth.value.reveal() } } : {}),
    ...(parts.requestTls ? { requestTls: parts.requestTls } : {}),
    // CONNECT requests to the proxy: a pool whose sockets get the backend's connect settings.
    clientFactory: (origin) => new Pool(origin, { ...poolOptions, connect: toProxy }),
    // The backend's pool (its connector is the tunnel), or, for the absolute form, the proxy's.
    factory: (origin, opts) => {
      if (new URL(String(origin)).origin === proxyOrigin)
        return new Pool(origin, { ...poolOptions, connect: toProxy });
      const through = (opts as { connect: Connector.connector }).connect;
      return new Pool(origin, {
        ...poolOptions,
        allowH2: spec.allowH2,
        connect: parts.wrap(spec.h2c ? priorKnowledgeH2(through) : through),
      });
    },
  });
  const origin = spec.origin;
  // Requests name no origin (a Pool has one); the agent picks the backend's pool by it. A client's
  // Proxy-Authorization is meant for the gateway, not passed to the gateway's own proxy.
  return agent.compose((dispatch) => (opts, handler) => {
    const headers = opts.headers as Record<string, string | string[]> | undefined;
    if (headers && 'proxy-authorization' in headers) {
      const { 'proxy-authorization': _, ...rest } = headers;
      return dispatch({ ...opts, origin, headers: rest }, handler);
    }
    return dispatch({ ...opts, origin }, handler);
  });
}

/** A plaintext socket through the tunnel speaks HTTP/2 from the first byte (h2c), as useH2c does. */
function priorKnowledgeH2(connect: Connector.connector): Connector.connector {
  return (opts, callback) =>
    connect(opts, (err, socket) => {
      if (socket) (socket as Socket & { alpnProtocol?: string }).alpnProtocol = 'h2';
      (callback as (e: Error | null, s: Socket | null) => void)(err, socket as Socket | null);
    });
}
