// The OpenTelemetry SDK side of tracing: a tracer provider whose spans go in batches to an OTLP
// collector, over gRPC or HTTP (protobuf). The SDK and its exporters cost a worker about 22 MiB (HTTP)
// to 30 MiB (gRPC) of memory and a few hundred milliseconds to load, so this module is only imported
// (lazily, tracing.ts) by a worker whose config has tracing.
import {
  type Attributes,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import { OTLPTraceExporter as GrpcExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPTraceExporter as HttpExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, type SpanExporter, TracerProvider } from '@opentelemetry/sdk-trace';
import type { CollectorConnectionIR } from '../config/ir.ts';
import { reportingFailures } from './otel-failures.ts';
import { exportHeaders, grpcCredentials, grpcMetadata, httpAgentOptions } from './otlp-connection.ts';

export interface ExportSettings {
  endpoint: string;
  protocol: 'grpc' | 'http';
  headers: Record<string, string>;
  /** TLS to the collector and a key sent with each export (its policies). */
  connection: CollectorConnectionIR;
  resource: Attributes;
  /** Called when a batch could not be exported. */
  onError: (err: Error) => void;
}

/** A span's end, kept until the request's end decides whether it is exported. */
export interface SpanHandle {
  span: Span;
  traceId: string;
  spanId: string;
}

export class SpanExport {
  readonly #provider: TracerProvider;
  readonly #tracer;

  constructor(s: ExportSettings) {
    const headers = exportHeaders(s.connection, s.headers);
    const credentials = grpcCredentials(s.connection);
    const agent = httpAgentOptions(s.connection);
    const inner: SpanExporter =
      s.protocol === 'grpc'
        ? new GrpcExporter({
            url: s.endpoint,
            metadata: grpcMetadata(headers),
            ...(credentials ? { credentials } : {}),
          })
        : new HttpExporter({ url: s.endpoint, headers, ...(agent ? { httpAgentOptions: agent } : {}) });
    const exporter: SpanExporter = reportingFailures(inner, s.onError);
    this.#provider = new TracerProvider({
      resource: resourceFromAttributes(s.resource),
      // OTEL_BSP_SCHEDULE_DELAY (ms), OpenTelemetry's variable for it: how long spans wait to be sent
      spanProcessors: [new BatchSpanProcessor({ exporter, scheduledDelayMillis: scheduleDelayMs() })],
    });
    this.#tracer = this.#provider.getTracer('gw');
  }

  /**
   * The span of a downstream request, from `startMs` (milliseconds since the epoch); a child of the
   * client's span when it sent a traceparent.
   */
  server(name: string, startMs: number, parent: SpanContext | undefined): SpanHandle {
    const ctx = parent ? trace.setSpanContext(ROOT_CONTEXT, parent) : ROOT_CONTEXT;
    return handle(this.#tracer.startSpan(name, { kind: SpanKind.SERVER, startTime: startMs }, ctx));
  }

  /** The span of one upstream call, a child of the request's span. */
  client(name: string, startMs: number, parent: SpanHandle): SpanHandle {
    const ctx = trace.setSpan(ROOT_CONTEXT, parent.span);
    return handle(this.#tracer.startSpan(name, { kind: SpanKind.CLIENT, startTime: startMs }, ctx));
  }

  /** Sets the attributes and status and ends the span at `endMs`: from here it is exported. */
  end(h: SpanHandle, attributes: Attributes, error: string | undefined, endMs: number): void {
    h.span.setAttributes(attributes);
    if (error !== undefined) h.span.setStatus({ code: SpanStatusCode.ERROR, message: error });
    h.span.end(endMs);
  }

  /** Exports what is buffered and closes the exporter. */
  async shutdown(): Promise<void> {
    await this.#provider.shutdown();
  }
}

function scheduleDelayMs(): number {
  const v = Number(process.env.OTEL_BSP_SCHEDULE_DELAY);
  return Number.isFinite(v) && v >= 0 ? v : 5000;
}

function handle(span: Span): SpanHandle {
  const c = span.spanContext();
  return { span, traceId: c.traceId, spanId: c.spanId };
}
