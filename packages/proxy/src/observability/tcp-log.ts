// The access-log line and the metrics of a proxied TCP or TLS connection (tcpRoutes), written when
// the connection ends: one line a connection, as an HTTP request has one line a request.
import type { FrontendIR } from '../config/ir.ts';
import type { TcpConnectionSummary } from '../server/tcp-bind-server.ts';
import type { RecordLog } from './logger.ts';
import type { ProxyMetrics } from './metrics.ts';

/**
 * What to do with each ended connection. The accessLog policy's `remove` applies; its `filter` and
 * `add` are CEL over an HTTP request and do not apply to a connection's line.
 */
export function tcpConnectionObserver(
  log: RecordLog,
  frontend: FrontendIR,
  metrics: ProxyMetrics | undefined,
): (s: TcpConnectionSummary) => void {
  const remove = frontend.accessLog?.remove ?? [];
  const otel = frontend.accessLog?.preset === 'otel';
  return (s) => {
    metrics?.recordTcp(s);
    if (!log.isLevelEnabled('info')) return;
    const rec: Record<string, unknown> = {
      gateway: s.gateway,
      listener: s.listener,
      route: s.route,
      backend: s.backend,
      endpoint: s.endpoint,
      // preset otel: OpenTelemetry's name for the client's address (its port apart)
      ...(otel
        ? { 'client.address': s.source.address, 'client.port': s.source.port }
        : { 'src.addr': `${s.source.address}:${s.source.port}` }),
      protocol: s.protocol,
      'tls.sni': s.sni,
      'bytes.received': s.bytesReceived,
      'bytes.sent': s.bytesSent,
      duration: `${Math.round(s.seconds * 1e4) / 10}ms`,
    };
    if (s.error !== undefined) rec.error = s.error;
    for (const k of remove) delete rec[k];
    log.info(rec);
  };
}
