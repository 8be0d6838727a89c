// agentgateway's observability blocks: OpenTelemetry tracing (frontendPolicies.tracing, and the older
// config.tracing it replaces), the access log's global form (config.logging.filter/fields), and extra
// metric labels (config.metrics). The "not supported" marker is schema.ts's; it passes it in, so this
// module does not import it back.
import { z } from 'zod';

const strict = z.strictObject;

export const OTLP_PROTOCOLS = ['grpc', 'http'] as const;

// A CEL expression (crd/types.ts's CELExpression, written here so this module imports no schema).
const Cel = z
  .string()
  .min(1)
  .max(16384)
  .meta({ description: 'A CEL expression (at most 16384 characters).' });

/**
 * agentgateway's StringBoolFloat: true/false, a fraction 0.0-1.0, or a CEL expression giving one of
 * them for each request (e.g. `request.headers["x-debug"] == "1"`, or "0.25").
 */
export const Sampling = z.union([z.boolean(), z.number(), Cel]).meta({
  description:
    'true/false, a fraction of requests 0.0-1.0, or a CEL expression giving one of them for each request',
});
export type Sampling = z.infer<typeof Sampling>;

const randomSampling = Sampling.nullable().optional().meta({
  description:
    'which requests without a trace of their own (no traceparent) start one: true/false, a fraction 0.0-1.0 or CEL (default false)',
});
const clientSampling = Sampling.nullable().optional().meta({
  description:
    'which requests whose client sent a sampled traceparent continue that trace: true/false, a fraction 0.0-1.0 or CEL (default true); a traceparent marked not sampled is left to parentNotSampled',
});
const parentNotSampled = Sampling.nullable().optional().meta({
  description:
    'which requests whose traceparent is marked not sampled (-00, the client asked not to be traced) are traced anyway, and sent on marked sampled (-01): true/false, a fraction 0.0-1.0 or CEL (default false: the client’s choice stands)',
});

/** Fields added to (by CEL) and removed from a record: access log entries, span attributes. */
export const FieldsAddRemove = strict({
  remove: z.array(z.string().min(1)).optional(),
  add: z.record(z.string().min(1), Cel).optional(),
});

/** Prometheus label names; gw's own labels cannot be redefined. */
export const METRIC_LABEL_PATTERN = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
export const RESERVED_METRIC_LABELS = [
  'gateway',
  'listener',
  'route',
  'backend',
  'status',
  'worker',
] as const;

type Fields = { remove?: string[] | undefined; add?: Record<string, string> | undefined };

/** frontendPolicies.tracing, written out: the inferred type would make the config file's too deep. */
export interface TracingPolicy {
  host?: string | undefined;
  service?: { name: string; port: number } | undefined;
  backend?: string | undefined;
  /** The collector's policies (schema.ts's CollectorPolicies; typed there, as this module imports no schema). */
  policies?: unknown;
  attributes?: Record<string, string> | undefined;
  resources?: Record<string, string> | undefined;
  remove?: string[] | undefined;
  randomSampling?: Sampling | null | undefined;
  clientSampling?: Sampling | null | undefined;
  parentNotSampled?: Sampling | null | undefined;
  filter?: string | null | undefined;
  path?: string | undefined;
  protocol?: (typeof OTLP_PROTOCOLS)[number] | undefined;
}

export interface GlobalTracing {
  otlpEndpoint?: string | null | undefined;
  headers?: Record<string, string> | undefined;
  otlpProtocol?: (typeof OTLP_PROTOCOLS)[number] | undefined;
  fields?: Fields | null | undefined;
  randomSampling?: Sampling | null | undefined;
  clientSampling?: Sampling | null | undefined;
  parentNotSampled?: Sampling | null | undefined;
  path?: string | null | undefined;
}

export interface MetricsConfig {
  remove?: string[] | undefined;
  fields?: { add?: Record<string, string> | undefined } | null | undefined;
}

export function observabilitySchemas(
  collectorPolicies: z.ZodType,
  collectorBackend: z.ZodType<string>,
  /** `{name: <namespace>/<hostname>, port}`: a Service, dialled at its hostname. */
  serviceRef: z.ZodType<{ name: string; port: number }>,
): {
  TracingPolicy: z.ZodType<TracingPolicy>;
  GlobalTracing: z.ZodType<GlobalTracing>;
  GlobalLoggingFilter: z.ZodOptional<z.ZodNullable<z.ZodString>>;
  GlobalLoggingFields: z.ZodType<Fields | null | undefined>;
  Metrics: z.ZodType<MetricsConfig>;
} {
  /** frontendPolicies.tracing (agentgateway's TracingConfig): the collector and what spans carry. */
  const TracingPolicy = strict({
    host: z.string().min(1).optional().meta({
      description: 'the OTLP collector: host:port (http:// is assumed) or a URL (or set backend)',
    }),
    service: serviceRef.optional().meta({
      description:
        'the collector as a Service: its hostname and port, resolved by DNS (as agentgateway does)',
    }),
    backend: collectorBackend.optional(),
    policies: collectorPolicies.nullable().optional(),
    attributes: z.record(z.string().min(1), Cel).optional().meta({
      description: 'span attributes to add, each a CEL expression evaluated when the request ends',
    }),
    resources: z.record(z.string().min(1), Cel).optional().meta({
      description:
        'resource attributes of every span (e.g. service.name), CEL evaluated once at load without a request (default service.name "gw")',
    }),
    remove: z.array(z.string().min(1)).optional().meta({
      description: 'attributes to leave out of the spans (applied before attributes are added)',
    }),
    randomSampling,
    clientSampling,
    parentNotSampled,
    filter: Cel.nullable().optional().meta({
      description:
        'CEL: only requests for which it is true have their spans exported (evaluated when the request ends; an error drops them)',
    }),
    path: z.string().min(1).optional().meta({ description: 'the OTLP/HTTP path (default /v1/traces)' }),
    protocol: z.enum(OTLP_PROTOCOLS).optional().meta({ description: 'OTLP over grpc (default) or http' }),
  });

  /** config.tracing (agentgateway's RawTracing): the older, global form of frontendPolicies.tracing. */
  const GlobalTracing = strict({
    otlpEndpoint: z.string().min(1).nullable().optional().meta({
      description:
        'the OTLP collector URL; unset: OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT',
    }),
    headers: z.record(z.string().min(1), z.string()).optional().meta({
      description: 'headers sent with every export (e.g. authorization)',
    }),
    otlpProtocol: z.enum(OTLP_PROTOCOLS).optional().meta({ description: 'grpc (default) or http' }),
    fields: FieldsAddRemove.nullable().optional().meta({
      description: 'span attributes to remove, and to add by CEL',
    }),
    randomSampling,
    clientSampling,
    parentNotSampled,
    path: z
      .string()
      .min(1)
      .nullable()
      .optional()
      .meta({ description: 'the OTLP/HTTP path (default /v1/traces)' }),
  });

  /** config.logging's access-log part: the older, global form of frontendPolicies.accessLog. */
  const GlobalLoggingFilter = Cel.nullable().optional().meta({
    description: 'CEL: only requests for which it is true are logged (as frontendPolicies.accessLog.filter)',
  });
  const GlobalLoggingFields = FieldsAddRemove.nullable().optional().meta({
    description: 'access-log fields to remove, and to add by CEL (as frontendPolicies.accessLog.remove/add)',
  });

  /** config.metrics (agentgateway's RawMetrics). */
  const Metrics = strict({
    remove: z.array(z.string().min(1)).optional().meta({
      description: "names of gw's metrics not to collect or serve (e.g. gw_upstream_duration_seconds)",
    }),
    fields: strict({
      add: z.record(z.string().min(1), Cel).optional().meta({
        description:
          'labels added to gw_requests_total and gw_request_duration_seconds, each a CEL expression evaluated when the request ends; every distinct value is a new series',
      }),
    })
      .nullable()
      .optional(),
  });

  return { TracingPolicy, GlobalTracing, GlobalLoggingFilter, GlobalLoggingFields, Metrics };
}
