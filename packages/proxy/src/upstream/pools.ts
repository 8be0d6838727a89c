// Keep-alive connection pools (undici) shared across config versions: a pool whose settings did not
// change survives a reload, so a swap costs no reconnects; pools no longer used close once idle.
import dns from 'node:dns';
import type net from 'node:net';
import { isIP, type Socket } from 'node:net';
import { checkServerIdentity, type PeerCertificate } from 'node:tls';
import type { buildConnector as Connector, Dispatcher } from 'undici';
import type { DnsIR, GlobalIR, ResolvedBackendPolicies, TunnelIR } from '../config/ir.ts';
import { dialInTurn, dispatcherKey, type Endpoint, serviceDispatcher } from './in-turn.ts';
import { createTunnel } from './tunnel.ts';
import { Agent, buildConnector, errors, Pool } from './undici.ts';

export interface PoolSpec {
  origin: string;
  socketPath?: string;
  tls?: ResolvedBackendPolicies['backendTLS'];
  connectTimeoutMs: number;
  idleTimeoutMs: number;
  maxConnections: number | null;
  keepalive: GlobalIR['keepalive'];
  allowH2: boolean;
  /** HTTP/2 over plain text by prior knowledge (http.version HTTP2 without TLS). */
  h2c?: boolean;
  /** The backend's http.version was set: gRPC requests keep to it too (see backends/host). */
  versionSet?: true;
  /** Reached through a forward proxy (backendTunnel). */
  tunnel?: TunnelIR;
  /** How the backend's name resolves (config.dns); unset: both families, as the system orders them. */
  dns?: DnsIR;
  /**
   * The origin is a Service of `services`: each connection is dialled at the next of its workloads'
   * addresses (not through a tunnel, whose proxy resolves the origin's name).
   */
  endpoints?: Endpoint[];
}

/** The longest response head (status line and headers) read from a backend: 64 KiB, as on the client side. */
export const UPSTREAM_MAX_HEADER_SIZE = 64 * 1024;
/** The net/tls connect options that make a name resolve as config.dns says. */
export function dnsConnectOptions(d: DnsIR | undefined): { family?: 4 | 6; lookup?: net.LookupFunction } {
  if (!d) return {};
  if (d.family) return { family: d.family };
  if (d.order === 'ipv4first')
    return {
      lookup: ((host: string, options: dns.LookupOptions, cb: (...a: unknown[]) => void) =>
        dns.lookup(host, { ...options, order: 'ipv4first' }, cb as never)) as net.LookupFunction,
    };
  return {};
}

/** A backend's connections: a Pool to its origin, or through its forward proxy (backendTunnel). */
export function createPool(spec: PoolSpec): Dispatcher {
  const tls = spec.tls;
  const connect: Record<string, unknown> = {
    // The deadline is kept by withConnectTimeout; undici's own timer is off.
    timeout: 0,
    allowH2: spec.allowH2,
    keepAlive: spec.keepalive.enabled,
    keepAliveInitialDelay: spec.keepalive.timeMs,
    ...dnsConnectOptions(spec.dns),
  };
  const wrap = (c: Connector.connector) =>
    withConnectTimeout(
      withKeepaliveProbes(c, spec.keepalive, spec.socketPath),
      spec.connectTimeoutMs,
      spec.socketPath,
    );
  if (spec.tunnel) {
    const t = spec.tunnel;
    return createTunnel(
      { ...spec, tunnel: t },
      {
        requestTls: tls ? tlsConnectOptions(tls, spec.allowH2) : undefined,
        proxyTls: t.tls ? tlsConnectOptions(t.tls, false) : undefined,
        connectOptions: {
          timeout: 0,
          keepAlive: spec.keepalive.enabled,
          keepAliveInitialDelay: spec.keepalive.timeMs,
          ...dnsConnectOptions(spec.dns),
        },
        wrap,
      },
    );
  }
  if (spec.socketPath) connect.socketPath = spec.socketPath;
  if (spec.h2c) connect.useH2c = true;
  if (tls) Object.assign(connect, tlsConnectOptions(tls, spec.allowH2));
  const direct = buildConnector(connect);
  return new Pool(spec.origin, {
    // each workload dialled gets the connect deadline of its own
    connect: spec.endpoints ? dialInTurn(wrap(direct), spec.endpoints) : wrap(direct),
    connections: spec.maxConnections,
    keepAliveTimeout: spec.idleTimeoutMs,
    keepAliveMaxTimeout: spec.idleTimeoutMs,
    allowH2: spec.allowH2,
    // Policies own the deadlines (timeout, backendRequestTimeout); undici's own would cut SSE streams.
    headersTimeout: 0,
    bodyTimeout: 0,
    // an answer's head may be as long as a request's (HTTP1_MAX_HEADER_SIZE), not node's 16 KiB
    maxHeaderSize: UPSTREAM_MAX_HEADER_SIZE,
  });
}

/**
 * The TLS options of a backend's connections (backendTLS): trust roots, client certificate, SNI,
 * ALPN and how the server's name is checked. Pools and upgraded connections (upgrade.ts) share them.
 */
/**
 * TLS options of a connection of gw's own that carries a client's bytes (a tcp route's, a CONNECT's)
 * or an upgrade: ALPN offers `alpn` only (null: none); the server name is `host`'s when it is a DNS
 * name and backendTLS names none (undefined `host`: a unix socket).
 */
export function ownTlsOptions(
  tls: NonNullable<PoolSpec['tls']>,
  host: string | undefined,
  alpn: readonly string[] | null | undefined,
): Record<string, unknown> {
  const o = tlsConnectOptions(tls, false);
  if (alpn) o.ALPNProtocols = [...alpn];
  else delete o.ALPNProtocols;
  if (!o.servername && host !== undefined && isIP(host) === 0) o.servername = host;
  return o;
}

export function tlsConnectOptions(
  tls: NonNullable<PoolSpec['tls']>,
  allowH2: boolean,
): Record<string, unknown> {
  const connect: Record<string, unknown> = {};
  if (tls.root) connect.ca = tls.root;
  if (tls.cert) connect.cert = tls.cert;
  if (tls.key) connect.key = tls.key.reveal();
  if (tls.hostname) connect.servername = tls.hostname;
  connect.ALPNProtocols = tls.alpn ?? (allowH2 ? ['h2', 'http/1.1'] : ['http/1.1']);
  if (tls.ecdhCurve) connect.ecdhCurve = tls.ecdhCurve;
  if (tls.insecure) connect.rejectUnauthorized = false;
  else if (tls.insecureHost) connect.checkServerIdentity = () => undefined;
  else if (tls.subjectAltNames) {
    const wanted = tls.subjectAltNames;
    connect.checkServerIdentity = (_host: string, cert: PeerCertificate) => {
      // Accept the certificate when any configured name verifies against it.
      for (const name of wanted) if (checkServerIdentity(name, cert) === undefined) return undefined;
      return new Error(`certificate does not match any of subjectAltNames ${wanted.join(', ')}`);
    };
  } else if (tls.hostname) {
    const host = tls.hostname;
    connect.checkServerIdentity = (_h: string, cert: PeerCertificate) => checkServerIdentity(host, cert);
  }
  return connect;
}

/**
 * The connections of a policy's HTTP service (an authorization service, a mirror, a token endpoint),
 * made when first used: one Agent per `what`, Service workloads and TLS settings, shared by the
 * routes and the config versions that call it, so a reload does not reconnect. A Service's
 * connections are dialled at its workloads in turn (dialInTurn).
 */
export function serviceAgent(
  what: string,
  endpoints: readonly Endpoint[] | undefined,
  tls: PoolSpec['tls'],
  options: ConstructorParameters<typeof Agent>[0],
): () => Agent {
  const key = dispatcherKey(what, endpoints ?? null, tls ?? null);
  const create = () => {
    const tlsOptions = tls ? tlsConnectOptions(tls, false) : undefined;
    const connect = endpoints ? dialInTurn(buildConnector(tlsOptions ?? {}), endpoints) : tlsOptions;
    return new Agent({ ...options, ...(connect ? { connect } : {}) });
  };
  let agent: Agent | undefined;
  return () => (agent ??= serviceDispatcher(key, create));
}

/**
 * undici sets only keepalive's idle time; the probe interval and count (tcp.keepalives interval and
 * retries) are set on each new socket, so a dead peer is found after time + interval × retries.
 */
function withKeepaliveProbes(
  connect: Connector.connector,
  ka: PoolSpec['keepalive'],
  socketPath: string | undefined,
): Connector.connector {
  if (!ka.enabled || socketPath) return connect;
  const open = connect as (o: Connector.Options, cb: Connector.Callback) => Socket | undefined;
  return ((opts: Connector.Options, callback: Connector.Callback) =>
    open(opts, (...args) => {
      // Under a second the kernel's unit would round the interval to 0, which it refuses.
      args[1]?.setKeepAlive(true, ka.timeMs, ka.intervalMs >= 1000 ? ka.intervalMs : undefined, ka.retries);
      callback(...args);
    })) as Connector.connector;
}

/**
 * undici's connect timer runs on its coarse clock (ticks of ~0.5 s), so `connectTimeout: 200ms` fired
 * after 0.5–1 s. A plain timer fails the attempt at the configured time (TCP plus TLS handshake).
 */
function withConnectTimeout(
  connect: Connector.connector,
  ms: number,
  socketPath: string | undefined,
): Connector.connector {
  if (ms <= 0) return connect;
  // undici's connector returns the socket it opens, though its types say void.
  const open = connect as (o: Connector.Options, cb: Connector.Callback) => Socket | undefined;
  return (opts, callback) => {
    let settled = false;
    const timer = setTimeout(() => {
      if (settled) return;
      settled = true;
      socket?.destroy();
      const where = socketPath ?? `${opts.hostname}:${opts.port}`;
      callback(
        new errors.ConnectTimeoutError(
          `Connect Timeout Error (attempted address: ${where}, timeout: ${ms}ms)`,
        ),
        null,
      );
    }, ms);
    const socket = open(opts, (...args) => {
      if (settled) {
        args[1]?.destroy();
        return;
      }
      settled = true;
      clearTimeout(timer);
      callback(...args);
    });
  };
}

/** What a table may hold besides pools (an MCP backend's processes): closed when no table uses it. */
export interface Retained {
  close(): Promise<unknown>;
}

export class PoolRegistry {
  readonly #pools = new Map<string, Dispatcher>();
  readonly #others = new Map<string, Retained>();
  readonly #workers: number;
  /** Whether this worker runs the active health probers (one worker per proxy does). */
  readonly probes: boolean;

  /**
   * `workers`: how many data-plane workers each hold a registry like this one. A pool's
   * `maxConnections` is the replica's, so each worker opens its share of it (rounded up).
   * `probes`: this worker probes the endpoints with active health checks for all of them.
   */
  constructor(workers = 1, probes = true) {
    this.#workers = Math.max(1, workers);
    this.probes = probes;
  }

  acquire(spec: PoolSpec): Dispatcher {
    // what the pool is made of, its secrets (TLS keys) hashed in rather than kept in the key
    const key = dispatcherKey(spec);
    let pool = this.#pools.get(key);
    if (!pool) {
      const max = spec.maxConnections;
      pool = createPool(max === null ? spec : { ...spec, maxConnections: Math.ceil(max / this.#workers) });
      this.#pools.set(key, pool);
    }
    return pool;
  }

  /** The resource under `key`, created on first use and kept while a table holds it (see retainOnly). */
  keep<T extends Retained>(key: string, create: () => T): T {
    let r = this.#others.get(key);
    if (!r) {
      r = create();
      this.#others.set(key, r);
    }
    return r as T;
  }

  /** Closes pools and resources not in `keep`; close() lets their running requests finish first. */
  retainOnly(keep: Set<Retained>): void {
    for (const [key, pool] of this.#pools) {
      if (!keep.has(pool)) {
        this.#pools.delete(key);
        pool.close().catch(() => {});
      }
    }
    for (const [key, r] of this.#others) {
      if (!keep.has(r)) {
        this.#others.delete(key);
        r.close().catch(() => {});
      }
    }
  }

  /** The resources kept besides pools (an endpoint's health, an MCP backend's processes). */
  retained(): Retained[] {
    return [...this.#others.values()];
  }

  get size(): number {
    return this.#pools.size;
  }

  async closeAll(): Promise<void> {
    const all: Retained[] = [...this.#pools.values(), ...this.#others.values()];
    this.#pools.clear();
    this.#others.clear();
    await Promise.allSettled(all.map((p) => p.close()));
  }
}
