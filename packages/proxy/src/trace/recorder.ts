// Records the trace of one request: events in the order things happen, header values of sensitive
// headers redacted (checked at every snapshot, so a header added by a policy is caught too), body
// snapshots taken from the streams as they pass, never by buffering them.
import { PassThrough, type Readable } from 'node:stream';
import type { Headers, RequestContext } from '../pipeline/context.ts';
import type { RequestSnapshotState, TraceEvent } from './events.ts';

export const BODY_SNAPSHOT_LIMIT = 64 * 1024;
const REDACTED = '<redacted>';

export type TraceSink = (event: TraceEvent | null) => void;

export class TraceRecorder {
  readonly #sink: TraceSink;
  readonly #sensitive: ReadonlySet<string>;
  readonly #t0: number;
  #finished = false;

  constructor(sink: TraceSink, sensitive: ReadonlySet<string>, t0: number) {
    this.#sink = sink;
    this.#sensitive = sensitive;
    this.#t0 = t0;
  }

  now(): number {
    return Math.round((performance.now() - this.#t0) * 1000) / 1000;
  }

  emit(
    type: string,
    fields: Record<string, unknown> = {},
    start: number | null = null,
    severity: TraceEvent['severity'] = 'info',
  ): void {
    if (this.#finished) return;
    this.#sink({ eventStart: start, eventEnd: this.now(), severity, message: { type, ...fields } });
  }

  redact(h: Headers): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(h)) {
      out[k] = this.#sensitive.has(k.toLowerCase()) ? REDACTED : Array.isArray(v) ? v.join(', ') : v;
    }
    return out;
  }

  requestState(ctx: RequestContext): RequestSnapshotState {
    const headers = this.redact(ctx.headers);
    const pathAndQuery = ctx.path + ctx.query;
    return {
      request: {
        method: ctx.method,
        uri: `${ctx.scheme}://${ctx.authority}${pathAndQuery}`,
        path: ctx.path,
        pathAndQuery,
        host: ctx.host,
        scheme: ctx.scheme,
        version: `HTTP/${ctx.httpVersion}`,
        headers,
        startTime: ctx.startDate.toISOString(),
      },
      source: {
        address: ctx.source.address,
        port: ctx.source.port,
        rawAddress: ctx.source.address,
        rawPort: ctx.source.port,
      },
      env: {},
    };
  }

  requestSnapshot(stage: string, ctx: RequestContext, extra: Record<string, unknown> = {}): void {
    this.emit('requestSnapshot', { stage, requestState: this.requestState(ctx), ...extra });
  }

  responseSnapshot(stage: string, ctx: RequestContext, extra: Record<string, unknown> = {}): void {
    const state = this.requestState(ctx);
    if (ctx.response)
      state.response = { code: ctx.response.status, headers: this.redact(ctx.response.headers) };
    this.emit('responseSnapshot', { stage, requestState: state, ...extra });
  }

  /** Passes `body` through unchanged and emits a bodySnapshot of its first bytes when it ends. */
  tapBody(stage: string, body: Readable | Buffer): Readable | Buffer {
    if (Buffer.isBuffer(body)) {
      this.#bodySnapshot(stage, [body], body.length);
      return body;
    }
    const chunks: Buffer[] = [];
    let seen = 0;
    let kept = 0;
    const tap = new PassThrough({
      transform: undefined,
    });
    body.on('data', (c: Buffer) => {
      seen += c.length;
      if (kept < BODY_SNAPSHOT_LIMIT) {
        const part = c.subarray(0, BODY_SNAPSHOT_LIMIT - kept);
        chunks.push(part);
        kept += part.length;
      }
      if (!tap.write(c)) body.pause();
    });
    tap.on('drain', () => body.resume());
    body.on('end', () => {
      this.#bodySnapshot(stage, chunks, seen);
      tap.end();
    });
    body.on('error', (err) => tap.destroy(err));
    tap.on('close', () => {
      if (!body.readableEnded) body.destroy();
    });
    return tap;
  }

  #bodySnapshot(stage: string, chunks: Buffer[], total: number): void {
    const data = Buffer.concat(chunks);
    this.emit('bodySnapshot', {
      stage,
      body: data.toString('base64'),
      size: total,
      truncated: total > data.length,
    });
  }

  finish(): void {
    if (this.#finished) return;
    this.emit('requestFinished');
    this.#finished = true;
    this.#sink(null);
  }
}
