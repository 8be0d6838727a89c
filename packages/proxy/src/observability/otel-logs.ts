// The OpenTelemetry SDK side of accessLog.otlp: a logger provider whose records go in batches to an
// OTLP collector, over gRPC or HTTP (protobuf). Like otel-export.ts (spans), this module is loaded
// lazily, only by a worker whose config exports access log records.
import { type AnyValue, type Attributes, SeverityNumber } from '@opentelemetry/api';
import { OTLPLogExporter as GrpcExporter } from '@opentelemetry/exporter-logs-otlp-grpc';
import { OTLPLogExporter as HttpExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchLogRecordProcessor, LoggerProvider, type LogRecordExporter } from '@opentelemetry/sdk-logs';
import type { CollectorConnectionIR } from '../config/ir.ts';
import { reportingFailures } from './otel-failures.ts';
import { exportHeaders, grpcCredentials, grpcMetadata, httpAgentOptions } from './otlp-connection.ts';

const SHUTDOWN_MS = 3000;
/**
 * How long one batch may take, its retries included (the SDK's default is 10 s): a collector that is
 * down is given up on soon, and no retry outlives a stopping worker by much.
 */
const EXPORT_MS = 5000;

export interface LogExportSettings {
  endpoint: string;
  protocol: 'grpc' | 'http';
  /** TLS to the collector, a key and headers sent with each export (its policies). */
  connection: CollectorConnectionIR;
  /** Called when a batch could not be exported. */
  onError: (err: Error) => void;
}

export class LogExport {
  readonly #provider: LoggerProvider;
  readonly #logger;

  constructor(s: LogExportSettings) {
    const headers = exportHeaders(s.connection);
    const credentials = grpcCredentials(s.connection);
    const agent = httpAgentOptions(s.connection);
    const inner: LogRecordExporter =
      s.protocol === 'grpc'
        ? new GrpcExporter({
            url: s.endpoint,
            timeoutMillis: EXPORT_MS,
            metadata: grpcMetadata(headers),
            ...(credentials ? { credentials } : {}),
          })
        : new HttpExporter({
            url: s.endpoint,
            timeoutMillis: EXPORT_MS,
            headers,
            ...(agent ? { httpAgentOptions: agent } : {}),
          });
    const exporter: LogRecordExporter = reportingFailures(inner, s.onError);
    this.#provider = new LoggerProvider({
      resource: resourceFromAttributes({ 'service.name': 'gw' }),
      // OTEL_BLRP_SCHEDULE_DELAY (ms), OpenTelemetry's variable for it: how long records wait to be sent
      processors: [new BatchLogRecordProcessor({ exporter, scheduledDelayMillis: scheduleDelayMs() })],
    });
    this.#logger = this.#provider.getLogger('gw.access');
  }

  /** One access log record, at `endMs` (milliseconds since the epoch); its fields are attributes. */
  emit(fields: Record<string, unknown>, endMs: number): void {
    this.#logger.emit({
      timestamp: endMs,
      severityNumber: SeverityNumber.INFO,
      severityText: 'INFO',
      eventName: 'request',
      body: 'request',
      attributes: attributesOf(fields),
    });
  }

  /**
   * Exports what is buffered and closes the exporter; a collector that does not answer is given
   * SHUTDOWN_MS (the exporter would retry for longer), so a worker stops in time.
   */
  async shutdown(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.#provider.shutdown(),
      new Promise<void>((r) => {
        timer = setTimeout(r, SHUTDOWN_MS);
      }),
    ]);
    clearTimeout(timer);
  }
}

/** The record's fields as log attributes: strings, numbers and booleans as they are, the rest as JSON. */
function attributesOf(fields: Record<string, unknown>): Attributes {
  const out: Record<string, AnyValue> = {};
  for (const [k, v] of Object.entries(fields)) {
    if (v === undefined || v === null) continue;
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') out[k] = v;
    else if (typeof v === 'bigint') out[k] = Number(v);
    else out[k] = JSON.stringify(v);
  }
  return out as Attributes;
}

function scheduleDelayMs(): number {
  const v = Number(process.env.OTEL_BLRP_SCHEDULE_DELAY);
  return Number.isFinite(v) && v >= 0 ? v : 1000;
}
