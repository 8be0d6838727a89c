// requestMirror: a sampled share of a route's requests is copied to another backend, whose answer is
// thrown away. The copy never holds up the client: its body is teed off the request as it streams by.
import { PassThrough, type Readable, Transform, type TransformCallback } from 'node:stream';
import type { RequestContext } from '../../pipeline/context.ts';
import { serviceAgent } from '../../upstream/pools.ts';
import { type Agent, request } from '../../upstream/undici.ts';
import type { PolicyDefinition } from '../types.ts';

/** What became of a request's copy, for metrics (the mirror's own answer is only traced). */
export type MirrorOutcome = 'sent' | 'busy' | 'dropped';

declare module '../../pipeline/context.ts' {
  interface RequestExtensions {
    requestMirror?: { outcome: MirrorOutcome };
  }
}

/** Copies in flight per route; past this a sampled request is not mirrored (a stuck mirror costs no more). */
export const MAX_IN_FLIGHT = 256;
/** A mirror that does not answer within this long is given up on. */
const MIRROR_TIMEOUT_MS = 30_000;
// Headers undici will not send as given, or that describe the client's connection.
const NOT_COPIED = new Set(['expect', 'host']);

const AGENT_OPTIONS = {
  keepAliveTimeout: 30_000,
  headersTimeout: MIRROR_TIMEOUT_MS,
  bodyTimeout: MIRROR_TIMEOUT_MS,
};
const ignore = () => {};

export const requestMirror: PolicyDefinition<'requestMirror'> = {
  name: 'requestMirror',
  build(config, env) {
    const origin = `http://${config.backend.host}`;
    // the mirrors share their connections; a Service's go to its workloads in turn
    const dispatcher = serviceAgent('mirror', config.backend.endpoints, undefined, AGENT_OPTIONS);
    const percentage = config.percentage;
    // The copy may fall this far behind the request before it is dropped.
    const cap = env.global.maxBufferSize;
    let inFlight = 0;
    const done = () => {
      inFlight--;
    };
    return (ctx, next) => {
      if (percentage <= 0 || (percentage < 1 && Math.random() >= percentage)) return next(ctx);
      if (inFlight >= MAX_IN_FLIGHT) {
        ctx.ext.requestMirror = { outcome: 'busy' };
        ctx.obs?.event(ctx, 'requestMirror', {
          result: 'skipped',
          reason: 'too many mirrored requests in flight',
        });
        return next(ctx);
      }
      inFlight++;
      send(ctx, origin, cap, dispatcher).then(done, done);
      return next(ctx);
    };
  },
};

/** Starts the copy; resolves when the mirror has answered or failed, never rejects. */
function send(ctx: RequestContext, origin: string, cap: number, dispatcher: () => Agent): Promise<void> {
  const state: { outcome: MirrorOutcome } = { outcome: 'sent' };
  ctx.ext.requestMirror = state;
  const headers: Record<string, string | string[]> = {};
  for (const k in ctx.headers) if (!NOT_COPIED.has(k)) headers[k] = ctx.headers[k] as string | string[];
  headers.host = ctx.authority;
  let body: Buffer | Readable | null = null;
  const src = ctx.body;
  if (Buffer.isBuffer(src)) body = src;
  else if (src) {
    const tee = new MirrorTee(cap, () => {
      state.outcome = 'dropped';
      ctx.obs?.event(
        ctx,
        'requestMirror',
        { result: 'dropped', reason: `the mirror fell more than ${cap} bytes behind the request body` },
        null,
        'warn',
      );
    });
    src.on('error', (err) => tee.destroy(err));
    tee.on('close', () => {
      if (!src.readableEnded) src.destroy();
    });
    src.pipe(tee);
    ctx.body = tee;
    body = tee.copy;
  }
  const target = ctx.path + ctx.query;
  const start = performance.now();
  ctx.obs?.event(ctx, 'requestMirror', { result: 'sent', target: origin + target });
  return request(origin + target, { method: ctx.method, headers, body, dispatcher: dispatcher() }).then(
    (res) => {
      res.body.dump().catch(ignore);
      ctx.obs?.event(ctx, 'requestMirror', { result: 'answered', status: res.statusCode }, start);
    },
    (err: unknown) => {
      if (body instanceof PassThrough) body.destroy();
      if (state.outcome === 'dropped') return; // already traced, and the cause of this error
      const reason = err instanceof Error ? err.message : String(err);
      ctx.obs?.event(ctx, 'requestMirror', { result: 'failed', reason }, start, 'warn');
    },
  );
}

/**
 * Passes the request body on unchanged and writes each chunk to `copy` as well. The request never
 * waits for the copy: when the mirror reads too slowly for `cap` bytes, the copy is abandoned.
 */
class MirrorTee extends Transform {
  readonly copy = new PassThrough();
  readonly #cap: number;
  readonly #onDrop: () => void;
  #dropped = false;

  constructor(cap: number, onDrop: () => void) {
    super();
    this.#cap = cap;
    this.#onDrop = onDrop;
    this.copy.on('error', ignore);
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    if (!this.#dropped) {
      if (this.copy.writableLength + chunk.length > this.#cap) {
        this.#dropped = true;
        this.copy.destroy(new Error('mirror dropped: it fell behind the request body'));
        this.#onDrop();
      } else this.copy.write(chunk);
    }
    cb(null, chunk);
  }

  override _flush(cb: TransformCallback): void {
    if (!this.#dropped) this.copy.end();
    cb();
  }

  override _destroy(err: Error | null, cb: (error?: Error | null) => void): void {
    // Once ended, the copy keeps whatever the mirror has still to read.
    if (!this.copy.writableEnded) this.copy.destroy(err ?? new Error('the request body ended early'));
    cb(err);
  }
}
