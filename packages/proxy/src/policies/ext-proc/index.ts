// extProc: sends the request and the response through an external processing service over Envoy's
// ext_proc v3 gRPC API, one bidirectional Process stream per request. Each phase the config sends
// (request headers, request body, response headers, response body) is one message and one answer:
// header mutations, a replaced or cleared body, or an immediate response that ends the request.
// Bodies: `none`; `buffered` (the whole body up to the buffer limit, 413/502 over it, as Envoy);
// `bufferedPartial` (up to the limit; the rest follows unprocessed). The service failing, or not
// answering within the timeout (default 200ms, Envoy's message_timeout): failClosed (default) answers
// 500, failOpen carries on without it for the rest of the request.
import { Readable } from 'node:stream';
import { parseGoDuration } from '@gw/api/runtime';
import { GwError } from '../../errors.ts';
import { Lazy } from '../../lazy.ts';
import { bufferUpTo, contentLength, discard, prepend } from '../../pipeline/body.ts';
import type { Body, Headers, ProxyResponse } from '../../pipeline/context.ts';
import type { PolicyDefinition } from '../types.ts';
import type { Answer, Phase, ProcessStream } from './stream.ts';

// grpc-js and the generated ext_proc messages load with the first config that has an extProc.
const grpc = new Lazy(() => import('./stream.ts'));

const DEFAULT_TIMEOUT_MS = 200;

type BodyMode = 'none' | 'buffered' | 'bufferedPartial';

export const extProc: PolicyDefinition<'extProc'> = {
  name: 'extProc',
  build(config, env) {
    const host = config.host as string;
    const timeoutMs = (config.timeout && parseGoDuration(config.timeout)) || DEFAULT_TIMEOUT_MS;
    const failOpen = config.failureMode === 'failOpen';
    const o = config.processingOptions ?? {};
    const reqHeaders = o.requestHeaderMode !== 'skip';
    const resHeaders = o.responseHeaderMode !== 'skip';
    const reqBody = (o.requestBodyMode ?? 'none') as BodyMode;
    const resBody = (o.responseBodyMode ?? 'none') as BodyMode;
    const limit = env.global.maxBufferSize;
    // Start loading now, so the first request does not wait for it.
    grpc.ready.catch(() => {});

    return async (ctx, next) => {
      const m = grpc.value ?? (await grpc.ready);
      const stream = new m.ProcessStream(host, timeoutMs, ctx.signal);
      let live = true;
      let failing: (() => void) | undefined;
      /** One phase: its answer, or undefined when the service is out of the picture. */
      const exchange = async (phase: Phase, send: () => Parameters<ProcessStream['exchange']>[1]) => {
        if (!live) return undefined;
        const start = ctx.obs ? performance.now() : null;
        let a: Answer;
        try {
          a = await stream.exchange(phase, send());
        } catch (err) {
          const reason = (err as Error).message;
          ctx.obs?.event(ctx, 'extProc', { phase, result: 'failure', reason, failOpen }, start, 'warn');
          live = false;
          stream.close();
          if (!failOpen) throw new GwError('GW_ERR_INTERNAL', 'external processing failed');
          return undefined;
        }
        if (a.kind === 'done') live = false;
        const fields: Record<string, unknown> = { phase, result: a.kind };
        if (a.kind === 'immediate') fields.status = a.response.status;
        if (a.kind === 'continue') {
          const c = a.common;
          const mutations =
            (c?.headerMutation?.setHeaders.length ?? 0) + (c?.headerMutation?.removeHeaders.length ?? 0);
          if (mutations) fields.headerMutations = mutations;
          if (c?.bodyMutation?.mutation.case) fields.bodyMutation = c.bodyMutation.mutation.case;
        }
        ctx.obs?.event(ctx, 'extProc', fields, start, a.kind === 'immediate' ? 'warn' : undefined);
        return a;
      };
      /**
       * One body phase: what the mode takes of the body goes to the service, and its answer applies.
       * The body is put back whole (taken part, then the rest); a replacement covers the part sent,
       * and what was not sent follows it.
       */
      const bodyPhase = async (
        phase: 'requestBody' | 'responseBody',
        headers: Headers,
        current: Exclude<Body, null>,
        mode: BodyMode,
        set: (b: Body) => void,
      ) => {
        const tooLarge = phase === 'requestBody' ? 'GW_ERR_REQUEST_TOO_LARGE' : 'GW_ERR_RESPONSE_TOO_LARGE';
        const body = await take(current, headers, mode, limit, tooLarge);
        const a = await exchange(phase, () => ({
          case: phase,
          value: { body: body.data, endOfStream: body.rest === null },
        }));
        set(body.rest ? prepend([body.data], body.rest) : body.data);
        if (a?.kind === 'continue') {
          m.applyMutation(headers, a.common?.headerMutation);
          const b = m.bodyMutation(a.common);
          if (b !== undefined)
            setBody(headers, body.rest ? prepend([b ?? Buffer.alloc(0)], body.rest) : b, set);
        }
        return a;
      };
      /** An immediate response ends the request here; the service's part is over. */
      const respond = (r: ProxyResponse) => {
        live = false;
        stream.close();
        // The request goes no further; its body is not read (as extAuthz's denial).
        ctx.body = null;
        ctx.response = r;
      };

      try {
        // Request headers.
        if (reqHeaders) {
          const a = await exchange('requestHeaders', () => ({
            case: 'requestHeaders',
            value: {
              headers: m.headerMap(ctx.headers, {
                ':authority': ctx.authority,
                ':method': ctx.method,
                ':path': ctx.path + ctx.query,
                ':scheme': ctx.scheme,
              }),
              endOfStream: ctx.body === null,
            },
          }));
          if (a?.kind === 'immediate') return respond(a.response);
          if (a?.kind === 'continue') {
            m.applyMutation(ctx.headers, a.common?.headerMutation);
            setBody(ctx.headers, m.bodyMutation(a.common), (b) => (ctx.body = b));
          }
        }
        // Request body.
        if (reqBody !== 'none' && ctx.body !== null && live) {
          const a = await bodyPhase('requestBody', ctx.headers, ctx.body, reqBody, (x) => (ctx.body = x));
          if (a?.kind === 'immediate') return respond(a.response);
        }

        await next(ctx);

        const res = ctx.response;
        if (!res || !live) return;
        // Failing closed on the way back: the upstream's answer is dropped for the error's (as buffer).
        failing = () => {
          if (ctx.response !== res) return;
          discard(res.body);
          ctx.response = undefined;
        };
        // Response headers.
        if (resHeaders) {
          const a = await exchange('responseHeaders', () => ({
            case: 'responseHeaders',
            value: {
              headers: m.headerMap(res.headers, { ':status': String(res.status) }),
              endOfStream: res.body === null,
            },
          }));
          if (a?.kind === 'immediate') {
            discard(res.body);
            ctx.response = a.response;
            return;
          }
          if (a?.kind === 'continue') {
            m.applyMutation(res.headers, a.common?.headerMutation);
            setBody(res.headers, m.bodyMutation(a.common), (b) => (res.body = b));
          }
        }
        // Response body.
        if (resBody !== 'none' && res.body !== null && live) {
          const a = await bodyPhase('responseBody', res.headers, res.body, resBody, (x) => (res.body = x));
          if (a?.kind === 'immediate') {
            discard(res.body);
            ctx.response = a.response;
            return;
          }
        }
      } catch (err) {
        failing?.();
        throw err;
      } finally {
        if (live) stream.end();
        else stream.close();
      }
    };
  },
};

/** Sets a body the service replaced (null: cleared) and the length that goes with it. */
function setBody(headers: Headers, b: Body | undefined, set: (b: Body) => void): void {
  if (b === undefined) return;
  set(b);
  delete headers['transfer-encoding'];
  if (b === null || Buffer.isBuffer(b)) headers['content-length'] = String(b?.length ?? 0);
  else delete headers['content-length'];
}

/**
 * The part of a body that is sent: all of it (`rest` null), or with bufferedPartial the first `limit`
 * bytes and the stream of the rest. A buffered body over the limit is refused (413 or 502).
 */
async function take(
  body: Exclude<Body, null>,
  headers: Headers,
  mode: BodyMode,
  limit: number,
  code: 'GW_ERR_REQUEST_TOO_LARGE' | 'GW_ERR_RESPONSE_TOO_LARGE',
): Promise<{ data: Buffer; rest: Readable | null }> {
  const tooLarge = () => new GwError(code, `body is larger than the buffer limit (${limit} bytes)`);
  if (Buffer.isBuffer(body)) {
    if (body.length <= limit) return { data: body, rest: null };
    if (mode === 'buffered') throw tooLarge();
    return { data: body.subarray(0, limit), rest: Readable.from([body.subarray(limit)]) };
  }
  if (mode === 'buffered') {
    const r = await bufferUpTo(body, limit, contentLength(headers));
    if (r.ok) return { data: r.data, rest: null };
    discard(r.stream);
    throw tooLarge();
  }
  return await head(body, limit);
}

/** The first `limit` bytes of a stream, and a stream of the rest (null when it ended before). */
function head(body: Readable, limit: number): Promise<{ data: Buffer; rest: Readable | null }> {
  const chunks: Buffer[] = [];
  let size = 0;
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      chunks.push(chunk);
      if (size > limit) {
        cleanup();
        body.pause();
        const all = Buffer.concat(chunks, size);
        resolve({ data: all.subarray(0, limit), rest: prepend([all.subarray(limit)], body) });
      }
    };
    const onEnd = () => {
      cleanup();
      resolve({ data: Buffer.concat(chunks, size), rest: null });
    };
    const onError = (err: Error) => {
      cleanup();
      reject(err);
    };
    const cleanup = () => {
      body.off('data', onData);
      body.off('end', onEnd);
      body.off('error', onError);
    };
    body.on('data', onData);
    body.on('end', onEnd);
    body.on('error', onError);
  });
}
