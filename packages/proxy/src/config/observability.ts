// The observability blocks as IR: the access log policy (frontendPolicies.accessLog, its other name
// logging, or the older config.logging.filter/fields), tracing (frontendPolicies.tracing or the older
// config.tracing) and the extra metric labels (config.metrics). @gw/api's checkObservability says
// which combinations are wrong; this only reads what is there.
import { type AccessLog, type ConfigFile, type Sampling, tracingHostUrl } from '@gw/api';
import type { AccessLogOtlpIR, CollectorConnectionIR, MetricsIR, SamplingIR, TracingIR } from './ir.ts';

/** The access log policy in force, whichever of its three spellings the file used. */
export function accessLogOf(cfg: ConfigFile): AccessLog | undefined {
  const fp = cfg.frontendPolicies;
  const own = fp?.accessLog ?? fp?.logging;
  if (own) {
    const { otlp: _, ...log } = own;
    return log;
  }
  const g = cfg.config?.logging;
  if (!g || (g.filter == null && g.fields == null)) return undefined;
  const out: AccessLog = {};
  if (g.filter != null) out.filter = g.filter;
  if (g.fields?.add) out.add = { ...g.fields.add };
  if (g.fields?.remove) out.remove = [...g.fields.remove];
  return out;
}

/**
 * accessLog.otlp as the IR: the collector's URL (the OTLP/HTTP path added for http), and the shaping
 * of its records, each part unset taking the access log's.
 */
export function accessLogOtlpOf(
  cfg: ConfigFile,
  collector: Collector | undefined,
): AccessLogOtlpIR | undefined {
  const fp = cfg.frontendPolicies;
  const log = fp?.accessLog ?? fp?.logging;
  const o = log?.otlp;
  if (!o || !collector) return undefined;
  const protocol = o.protocol ?? 'grpc';
  const base = collectorUrl(collector);
  const filter = o.filter ?? log.filter;
  const add = o.fields ? o.fields.add : log.add;
  const remove = o.fields ? o.fields.remove : log.remove;
  return {
    endpoint: protocol === 'http' ? withPath(base, o.path ?? '/v1/logs') : base,
    protocol,
    ...collector.connection,
    ...(log.preset ? { preset: log.preset } : {}),
    ...(filter ? { filter } : {}),
    ...(add ? { add: { ...add } } : {}),
    ...(remove ? { remove: [...remove] } : {}),
  };
}

/** Environment variables that name the collector when config.tracing.otlpEndpoint is unset (agentgateway's). */
export const OTLP_ENDPOINT_ENV = [
  'OTLP_ENDPOINT',
  'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
  'OTEL_EXPORTER_OTLP_ENDPOINT',
];

/**
 * Tracing as configured, or a problem to report at `path` (config.tracing without any endpoint).
 * `env` reads the process environment.
 */
export function tracingOf(
  cfg: ConfigFile,
  env: (name: string) => string | undefined,
  collector: Collector | undefined,
): { tracing?: TracingIR; problem?: { path: (string | number)[]; message: string } } {
  const p = cfg.frontendPolicies?.tracing;
  if (p) {
    if (!collector) return {};
    const protocol = p.protocol ?? 'grpc';
    const base = collectorUrl(collector);
    const { headers, ...connection } = collector.connection;
    return {
      tracing: {
        endpoint: protocol === 'http' ? withPath(base, p.path ?? '/v1/traces') : base,
        protocol,
        headers: { ...headers },
        ...connection,
        resources: { ...(p.resources ?? {}) },
        attributes: { ...(p.attributes ?? {}) },
        remove: [...(p.remove ?? [])],
        randomSampling: sampling(p.randomSampling, false),
        clientSampling: sampling(p.clientSampling, true),
        parentNotSampled: sampling(p.parentNotSampled, false),
        ...(p.filter ? { filter: p.filter } : {}),
      },
    };
  }
  const g = cfg.config?.tracing;
  if (!g) return {};
  let url = g.otlpEndpoint ?? undefined;
  for (const name of OTLP_ENDPOINT_ENV) url ??= env(name) || undefined;
  if (url === undefined)
    return {
      problem: {
        path: ['config', 'tracing', 'otlpEndpoint'],
        message: `config.tracing needs otlpEndpoint, or one of ${OTLP_ENDPOINT_ENV.join(', ')} set`,
      },
    };
  const protocol = g.otlpProtocol ?? 'grpc';
  return {
    tracing: {
      endpoint: protocol === 'http' ? withPath(url, g.path ?? '/v1/traces') : url,
      protocol,
      headers: { ...(g.headers ?? {}) },
      resources: {},
      attributes: { ...(g.fields?.add ?? {}) },
      remove: [...(g.fields?.remove ?? [])],
      randomSampling: sampling(g.randomSampling, false),
      clientSampling: sampling(g.clientSampling, true),
      parentNotSampled: sampling(g.parentNotSampled, false),
    },
  };
}

/**
 * An OTLP collector as the loader resolved it: its host (the block's own, or its named backend's) and
 * how exports reach it (its policies, or the named backend's).
 */
export interface Collector {
  host: string;
  connection: CollectorConnectionIR;
}

/** The collector's URL; https when its policies give TLS to it. */
function collectorUrl(c: Collector): string {
  const url = tracingHostUrl(c.host);
  return c.connection.tls && url.startsWith('http://') ? `https://${url.slice('http://'.length)}` : url;
}

/** A constant where the text is one (true, 0.25), else the CEL expression. */
function sampling(s: Sampling | null | undefined, fallback: boolean): SamplingIR {
  if (s == null) return fallback;
  if (typeof s !== 'string') return s;
  const t = s.trim();
  if (t === 'true' || t === 'false') return t === 'true';
  if (/^[0-9]+(\.[0-9]*)?$|^\.[0-9]+$/.test(t)) return Number(t);
  return s;
}

/** The collector URL with the OTLP/HTTP path (an endpoint that already has one keeps it). */
function withPath(base: string, path: string): string {
  let u: URL;
  try {
    u = new URL(base);
  } catch {
    return base;
  }
  if (u.pathname === '/' || u.pathname === '') u.pathname = path.startsWith('/') ? path : `/${path}`;
  return u.toString();
}

/** config.metrics and frontendPolicies.metrics: extra labels by CEL, and metrics not to collect. */
export function metricsOf(cfg: ConfigFile): MetricsIR | undefined {
  const m = cfg.config?.metrics;
  const f = cfg.frontendPolicies?.metrics;
  if (!m && !f) return undefined;
  // frontendPolicies.metrics (GwPolicy frontend.metrics), then config.metrics, which wins
  const labels = { ...(f?.fields?.add ?? {}), ...(m?.fields?.add ?? {}) };
  const remove = [...(m?.remove ?? [])];
  if (Object.keys(labels).length === 0 && remove.length === 0) return undefined;
  return { labels, remove };
}
