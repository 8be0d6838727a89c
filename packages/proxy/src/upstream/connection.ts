// Connection settings of a backend (TLS, TCP keepalive, connect timeout, HTTP version), compiled
// from its policies and the global defaults into what a pool is opened with.
import { parseGoDuration } from '@gw/api/runtime';
import type { GlobalIR, ResolvedBackendPolicies } from '../config/ir.ts';
import type { PoolSpec } from './pools.ts';

/** Connection settings (TLS, TCP, HTTP version) from a backend's policies. */
export function connectionSpec(p: ResolvedBackendPolicies, global: GlobalIR): Omit<PoolSpec, 'origin'> {
  const tls = p.backendTLS;
  return {
    connectTimeoutMs: p.tcp?.connectTimeout
      ? (parseGoDuration(p.tcp.connectTimeout) ?? global.connectTimeoutMs)
      : global.connectTimeoutMs,
    idleTimeoutMs: global.poolIdleTimeoutMs,
    maxConnections: global.poolMaxSize,
    keepalive: p.tcp?.keepalives
      ? {
          enabled: p.tcp.keepalives.enabled ?? true,
          timeMs: parseGoDuration(p.tcp.keepalives.time ?? '') ?? global.keepalive.timeMs,
          intervalMs: parseGoDuration(p.tcp.keepalives.interval ?? '') ?? global.keepalive.intervalMs,
          retries: p.tcp.keepalives.retries ?? global.keepalive.retries,
        }
      : global.keepalive,
    allowH2: p.http?.version === 'HTTP2' || (tls?.alpn?.includes('h2') ?? false),
    // Without TLS there is no ALPN to agree on HTTP/2: the upstream must speak it from the first byte.
    ...(p.http?.version === 'HTTP2' && !tls ? { h2c: true } : {}),
    ...(p.http?.version !== undefined ? { versionSet: true } : {}),
    ...(tls ? { tls } : {}),
    ...(p.backendTunnel ? { tunnel: p.backendTunnel } : {}),
    ...(global.dns ? { dns: global.dns } : {}),
  };
}
