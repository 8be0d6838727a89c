// What the span and log exporters (otel-export.ts, otel-logs.ts) share: an OTLP exporter whose
// failed batches are reported, so a collector that is down is logged rather than silent. Loaded with
// them, only by a worker whose config exports.
import { type ExportResult, ExportResultCode } from '@opentelemetry/core';

/** The part of an OpenTelemetry exporter (spans or log records) the batch processors call. */
interface Exporter<T> {
  export(items: T[], done: (result: ExportResult) => void): void;
  shutdown(): Promise<void>;
  forceFlush?(): Promise<void>;
}

/** `inner`, with each batch it could not export reported to `onError`. */
export function reportingFailures<T>(
  inner: Exporter<T>,
  onError: (err: Error) => void,
): Exporter<T> & { forceFlush(): Promise<void> } {
  return {
    export(items, done) {
      inner.export(items, (r) => {
        if (r.code !== ExportResultCode.SUCCESS) onError(r.error ?? new Error('export failed'));
        done(r);
      });
    },
    shutdown: () => inner.shutdown(),
    forceFlush: () => inner.forceFlush?.() ?? Promise.resolve(),
  };
}
