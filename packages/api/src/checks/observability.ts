// Checks of the observability blocks: tracing (frontendPolicies.tracing, or the older config.tracing),
// the access log's global form (config.logging.filter/fields) and extra metric labels (config.metrics).
// The older global forms and the frontend policies that replace them are one or the other, as in
// agentgateway.
import {
  type GlobalTracing,
  METRIC_LABEL_PATTERN,
  type MetricsConfig,
  RESERVED_METRIC_LABELS,
  type Sampling,
  type TracingPolicy,
} from '../config/observability.ts';
import type { FieldPath } from '../config/source.ts';
import { checkCel, checkCelMap } from './cel.ts';
import type { Problem } from './problem.ts';

interface ObservabilityConfig {
  config?:
    | {
        tracing?: GlobalTracing | undefined;
        logging?: { filter?: string | null | undefined; fields?: unknown } | undefined;
        metrics?: MetricsConfig | undefined;
      }
    | undefined;
  frontendPolicies?:
    | {
        accessLog?: unknown;
        logging?: unknown;
        tracing?: TracingPolicy | undefined;
        metrics?: { fields?: { add?: Record<string, string> | undefined } | undefined } | undefined;
      }
    | undefined;
}

export function checkObservability(c: ObservabilityConfig, metricNames: readonly string[] = []): Problem[] {
  const out: Problem[] = [];
  const fp = c.frontendPolicies;
  const g = c.config;
  if (fp?.accessLog !== undefined && fp.logging !== undefined)
    out.push({
      path: ['frontendPolicies', 'logging'],
      message: 'logging is another name of accessLog: set one of them',
    });
  const globalLog = g?.logging && (g.logging.filter != null || g.logging.fields != null);
  if (globalLog && (fp?.accessLog !== undefined || fp?.logging !== undefined))
    out.push({
      path: ['config', 'logging'],
      message:
        'config.logging.filter/fields is the older form of frontendPolicies.accessLog: set one of them, not both',
    });
  if (g?.logging?.filter != null) out.push(...checkCel(g.logging.filter, ['config', 'logging', 'filter']));
  const lf = g?.logging?.fields as { add?: Record<string, string> } | null | undefined;
  out.push(...checkCelMap(lf?.add, ['config', 'logging', 'fields', 'add']));
  if (g?.tracing && fp?.tracing)
    out.push({
      path: ['config', 'tracing'],
      message: 'config.tracing is the older form of frontendPolicies.tracing: set one of them, not both',
    });
  if (g?.tracing) out.push(...checkGlobalTracing(g.tracing, ['config', 'tracing']));
  if (fp?.tracing) out.push(...checkTracingPolicy(fp.tracing, ['frontendPolicies', 'tracing']));
  if (g?.metrics) out.push(...checkMetrics(g.metrics, ['config', 'metrics'], metricNames));
  if (fp?.metrics) out.push(...checkMetrics(fp.metrics, ['frontendPolicies', 'metrics'], metricNames));
  const logName = fp?.accessLog !== undefined ? 'accessLog' : 'logging';
  const otlp = (fp?.[logName] as { otlp?: AccessLogOtlp } | undefined)?.otlp;
  if (otlp) out.push(...checkAccessLogOtlp(otlp, ['frontendPolicies', logName, 'otlp']));
  return out;
}

interface AccessLogOtlp {
  host?: string | undefined;
  backend?: string | undefined;
  service?: unknown;
  filter?: string | null | undefined;
  fields?: { add?: Record<string, string> | undefined } | null | undefined;
  path?: string | undefined;
  protocol?: 'grpc' | 'http' | undefined;
}

/** The collector of a tracing or accessLog.otlp block: host, service or backend, one of them. */
function checkCollector(
  c: { host?: string | undefined; backend?: string | undefined; service?: unknown },
  path: FieldPath,
): Problem[] {
  const set = (['host', 'service', 'backend'] as const).filter((k) => c[k] !== undefined);
  if (set.length > 1)
    return [
      {
        path: [...path, set[1] as string],
        message: 'the collector is host, service or backend: set one of them',
      },
    ];
  if (set.length === 0)
    return [
      {
        path: [...path, 'host'],
        message: 'the collector is required: host (e.g. 127.0.0.1:4317), service or backend',
      },
    ];
  return c.host !== undefined ? checkEndpoint(tracingHostUrl(c.host), [...path, 'host']) : [];
}

function checkAccessLogOtlp(o: AccessLogOtlp, path: FieldPath): Problem[] {
  const out = [
    ...checkCollector(o, path),
    ...(o.filter ? checkCel(o.filter, [...path, 'filter']) : []),
    ...checkCelMap(o.fields?.add, [...path, 'fields', 'add']),
  ];
  if (o.path !== undefined && (o.protocol ?? 'grpc') !== 'http')
    out.push({ path: [...path, 'path'], message: 'path is the OTLP/HTTP path: set protocol http' });
  return out;
}

function checkSampling(s: Sampling | null | undefined, path: FieldPath): Problem[] {
  return typeof s === 'string' ? checkCel(s, path) : [];
}

function checkEndpoint(url: string, path: FieldPath): Problem[] {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return [{ path, message: `expected a URL such as http://127.0.0.1:4317, got ${JSON.stringify(url)}` }];
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    return [{ path, message: `expected an http:// or https:// URL, got ${JSON.stringify(url)}` }];
  return [];
}

export function checkGlobalTracing(t: GlobalTracing, path: FieldPath): Problem[] {
  return [
    ...(t.otlpEndpoint ? checkEndpoint(t.otlpEndpoint, [...path, 'otlpEndpoint']) : []),
    ...checkCelMap(t.fields?.add, [...path, 'fields', 'add']),
    ...checkSampling(t.randomSampling, [...path, 'randomSampling']),
    ...checkSampling(t.clientSampling, [...path, 'clientSampling']),
  ];
}

export function checkTracingPolicy(t: TracingPolicy, path: FieldPath): Problem[] {
  const out: Problem[] = checkCollector(t, path);
  out.push(
    ...checkCelMap(t.attributes, [...path, 'attributes']),
    ...checkCelMap(t.resources, [...path, 'resources']),
    ...checkSampling(t.randomSampling, [...path, 'randomSampling']),
    ...checkSampling(t.clientSampling, [...path, 'clientSampling']),
    ...(t.filter ? checkCel(t.filter, [...path, 'filter']) : []),
  );
  return out;
}

/** frontendPolicies.tracing.host as a URL: host:port means plain http. */
export function tracingHostUrl(host: string): string {
  return host.includes('://') ? host : `http://${host}`;
}

export function checkMetrics(m: MetricsConfig, path: FieldPath, metricNames: readonly string[]): Problem[] {
  const out: Problem[] = [];
  for (const [name, expr] of Object.entries(m.fields?.add ?? {})) {
    const at = [...path, 'fields', 'add', name];
    if (!METRIC_LABEL_PATTERN.test(name))
      out.push({
        path: at,
        message: `${JSON.stringify(name)} is not a Prometheus label name (letters, digits and _, not first a digit)`,
      });
    else if ((RESERVED_METRIC_LABELS as readonly string[]).includes(name) || name.startsWith('__'))
      out.push({ path: at, message: `${JSON.stringify(name)} is a label gw sets itself` });
    out.push(...checkCel(expr, at));
  }
  if (metricNames.length > 0)
    (m.remove ?? []).forEach((name, i) => {
      if (!metricNames.includes(name))
        out.push({
          path: [...path, 'remove', i],
          message: `no metric named ${JSON.stringify(name)} (gw's: ${metricNames.join(', ')})`,
        });
    });
  return out;
}
