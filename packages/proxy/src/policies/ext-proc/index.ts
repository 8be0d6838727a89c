// extProc: sends the request and the response through an external processing service over Envoy's
// ext_proc v3 gRPC API, one bidirectional Process stream per request. Headers go as one message and
// get one answer: header mutations, a replaced or cleared body, or an immediate response that ends
// the request. Bodies: `none`; `buffered` (the whole body up to the buffer limit, 413/502 over it, as
// Envoy); `bufferedPartial` (up to the limit; the rest follows unprocessed); `fullDuplexStreamed`
// (agentgateway's default): the body goes to the service chunk by chunk as it arrives, without waiting
// for the headers' answer, and the chunks the service streams back (streamed_response) are the body
// sent on as they come, without a content-length; no answer is timed there (as Envoy: the service may
// hold the headers until it has the whole body). gw's pipeline carries no trailers, so the end of a
// streamed body is a last chunk with end_of_stream. With allowModeOverride, a headers answer's
// mode_override sets the body modes that follow (not of a body already streaming, as Envoy). The
// service failing, or not answering within the timeout (default 200ms, Envoy's message_timeout):
// failClosed (default) answers 500, failOpen carries on without it for the rest of the request,
// except when part of a streamed body already went to it (that body is gone: 500).

import { Readable } from 'node:stream';
import type { Client } from '@grpc/grpc-js';
import { parseGoDuration } from '@gw/api/runtime';
import { GwError } from '../../errors.ts';
import { Lazy } from '../../lazy.ts';
import { type AbortSource, bufferUpTo, contentLength, discard, prepend } from '../../pipeline/body.ts';
import type { Body, Headers, ProxyResponse, RequestContext } from '../../pipeline/context.ts';
import { withConditional } from '../conditional.ts';
import { serviceAuthOf, serviceHeadersOf } from '../service-call.ts';
import type { BuildEnv, PolicyConfig } from '../types.ts';
import { ExtProcExtras } from './extras.ts';
import type { Answer, BodyMode, BodyPhase, Phase, ProcessStream } from './stream.ts';

type ExtProc = Exclude<PolicyConfig<'extProc'>, { conditional: unknown }>;

// grpc-js and the generated ext_proc messages load with the first config that has an extProc.
const grpc = new Lazy(() => import('./stream.ts'));

const DEFAULT_TIMEOUT_MS = 200;

export const extProc = withConditional({
  name: 'extProc',
  build(config: ExtProc, env: BuildEnv) {
    const host = config.host as string;
    const tls = config.policies?.backendTLS;
    const serviceHeaders = serviceHeadersOf(config.policies);
    const auth = serviceAuthOf(config.policies);
    const timeoutMs = (config.timeout && parseGoDuration(config.timeout)) || DEFAULT_TIMEOUT_MS;
    const failOpen = config.failureMode === 'failOpen';
    const o = config.processingOptions ?? {};
    const reqHeaders = o.requestHeaderMode !== 'skip';
    const resHeadersMode = o.responseHeaderMode !== 'skip';
    const reqBodyMode = (o.requestBodyMode ?? 'fullDuplexStreamed') as BodyMode;
    const resBodyMode = (o.responseBodyMode ?? 'fullDuplexStreamed') as BodyMode;
    const allowModeOverride = o.allowModeOverride === true;
    const limit = env.global.maxBufferSize;
    const extras = new ExtProcExtras(config);
    // Start loading now, so the first request does not wait for it.
    grpc.ready.catch(() => {});

    let client: Client | undefined;
    return async (ctx, next) => {
      const m = grpc.value ?? (await grpc.ready);
      client ??= m.grpcClient(host, tls);
      const sent = extras.forRequest(ctx);
      // the service's own headers (requestHeaderModifier, its key, the credential obtained for this
      // request) over the request's metadata
      let metadata = serviceHeaders ? { ...sent.grpcMetadata, ...serviceHeaders } : sent.grpcMetadata;
      if (auth) {
        const start = ctx.obs ? performance.now() : null;
        try {
          metadata = { ...metadata, ...(await auth(ctx)) };
        } catch (err) {
          const reason = `backendAuth: ${(err as Error).message}`;
          ctx.obs?.event(ctx, 'extProc', { result: 'failure', reason, failOpen }, start, 'warn');
          // the reason goes to the access log (the error's cause), not to the client
          if (!failOpen)
            throw new GwError('GW_ERR_INTERNAL', 'external processing failed', { cause: new Error(reason) });
          return next(ctx);
        }
      }
      const stream = new m.ProcessStream(client, timeoutMs, ctx.signal, metadata);
      stream.side.request = { attributes: sent.requestAttributes, metadataContext: sent.metadataContext };
      let live = true;
      let failing: (() => void) | undefined;
      // This request's modes: a mode_override may change the ones not under way yet.
      let reqBody = reqBodyMode;
      let resBody = resBodyMode;
      let resHeaders = resHeadersMode;
      /**
       * One phase: its answer, or undefined when the service is out of the picture. `timed` false for
       * headers whose body streams in full duplex; `overrides` the phases a mode_override may change.
       */
      const exchange = async (
        phase: Phase,
        send: () => Parameters<ProcessStream['exchange']>[1],
        timed = true,
        overrides?: 'request' | 'response',
      ) => {
        if (!live) return undefined;
        const start = ctx.obs ? performance.now() : null;
        let a: Answer;
        try {
          a = await stream.exchange(phase, send(), timed);
        } catch (err) {
          const reason = (err as Error).message;
          ctx.obs?.event(ctx, 'extProc', { phase, result: 'failure', reason, failOpen }, start, 'warn');
          live = false;
          stream.close();
          // the request's own end (its deadline, a stalled body, the client gone) is what it gets
          if (ctx.abortReason !== undefined) throw ctx.abortReason;
          if (!failOpen)
            throw new GwError('GW_ERR_INTERNAL', 'external processing failed', {
              cause: new Error(`${phase}: ${reason}`),
            });
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
          if (a.modeOverride && allowModeOverride && overrides) {
            const x = m.overrideModes(a.modeOverride);
            if (overrides === 'request') {
              if (x.requestBody) reqBody = x.requestBody;
              resHeaders = x.responseHeaders;
            }
            if (x.responseBody) resBody = x.responseBody;
            fields.modeOverride = {
              requestBody: reqBody,
              responseHeaders: resHeaders,
              responseBody: resBody,
            };
          }
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
        mode: Exclude<BodyMode, 'fullDuplexStreamed'>,
        set: (b: Body) => void,
      ) => {
        const tooLarge = phase === 'requestBody' ? 'GW_ERR_REQUEST_TOO_LARGE' : 'GW_ERR_RESPONSE_TOO_LARGE';
        const body = await take(current, headers, mode, limit, tooLarge, ctx);
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
      /**
       * A headers phase, and in full duplex the body that streams beside it from the start. The
       * headers' answer applies; then the body is the service's streamed answer, or (the service out
       * of the picture with none of the body sent to it) the original.
       */
      const headersPhase = async (
        phase: 'requestHeaders' | 'responseHeaders',
        headers: Headers,
        pseudo: Record<string, string>,
        body: Body,
        mode: BodyMode,
        set: (b: Body) => void,
      ): Promise<{ answer: Answer | undefined; streamed: boolean }> => {
        const bodyPhase: BodyPhase = phase === 'requestHeaders' ? 'requestBody' : 'responseBody';
        const duplex = mode === 'fullDuplexStreamed' && body !== null;
        const pending = exchange(
          phase,
          () => ({
            case: phase,
            value: { headers: m.headerMap(headers, pseudo), endOfStream: body === null },
          }),
          !duplex,
          duplex ? undefined : phase === 'requestHeaders' ? 'request' : 'response',
        );
        const d = duplex && live ? stream.duplex(bodyPhase, body) : undefined;
        const a = await pending;
        if (a?.kind === 'immediate') return { answer: a, streamed: false };
        if (a?.kind === 'continue') m.applyMutation(headers, a.common?.headerMutation);
        if (d && a?.kind === 'continue') streamed(ctx, bodyPhase, headers, d, set);
        else if (d) {
          const original = stream.takeBack(bodyPhase);
          if (original === undefined)
            throw new GwError(
              'GW_ERR_INTERNAL',
              'external processing failed with part of the body sent to it',
            );
          set(original);
        } else if (a?.kind === 'continue') setBody(headers, m.bodyMutation(a.common), set);
        return { answer: a, streamed: d !== undefined };
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
        // Request headers (and a fullDuplexStreamed body, which streams from now on).
        let streamedRequest = false;
        if (reqHeaders) {
          const pseudo = {
            ':authority': ctx.authority,
            ':method': ctx.method,
            ':path': ctx.path + ctx.query,
            ':scheme': ctx.scheme,
          };
          const h = await headersPhase('requestHeaders', ctx.headers, pseudo, ctx.body, reqBody, (b) => {
            ctx.body = b;
          });
          if (h.answer?.kind === 'immediate') return respond(h.answer.response);
          streamedRequest = h.streamed;
        } else if (reqBody === 'fullDuplexStreamed' && ctx.body !== null && live) {
          streamed(ctx, 'requestBody', ctx.headers, stream.duplex('requestBody', ctx.body), (b) => {
            ctx.body = b;
          });
          streamedRequest = true;
        }
        // Request body, as one message.
        if (
          reqBody !== 'none' &&
          reqBody !== 'fullDuplexStreamed' &&
          !streamedRequest &&
          ctx.body !== null &&
          live
        ) {
          const a = await bodyPhase('requestBody', ctx.headers, ctx.body, reqBody, (x) => (ctx.body = x));
          if (a?.kind === 'immediate') return respond(a.response);
        }

        try {
          await next(ctx);
        } catch (err) {
          // An immediate response while the request body streamed cut it short: that is the answer.
          if (!stream.immediate) throw err;
        }
        if (stream.immediate) {
          discard(ctx.response?.body);
          return respond(stream.immediate);
        }

        const res = ctx.response;
        if (!res || !live) return;
        const back = extras.forResponse(ctx);
        stream.side.response = { attributes: back.responseAttributes, metadataContext: back.metadataContext };
        // Failing closed on the way back: the upstream's answer is dropped for the error's (as buffer).
        failing = () => {
          if (ctx.response !== res) return;
          discard(res.body);
          ctx.response = undefined;
        };
        // Response headers (and a fullDuplexStreamed body).
        let streamedResponse = false;
        if (resHeaders) {
          const h = await headersPhase(
            'responseHeaders',
            res.headers,
            { ':status': String(res.status) },
            res.body,
            resBody,
            (b) => {
              res.body = b;
            },
          );
          if (h.answer?.kind === 'immediate') {
            discard(res.body);
            ctx.response = h.answer.response;
            return;
          }
          streamedResponse = h.streamed;
        } else if (resBody === 'fullDuplexStreamed' && res.body !== null && live) {
          streamed(ctx, 'responseBody', res.headers, stream.duplex('responseBody', res.body), (b) => {
            res.body = b;
          });
          streamedResponse = true;
        }
        // Response body, as one message.
        if (
          resBody !== 'none' &&
          resBody !== 'fullDuplexStreamed' &&
          !streamedResponse &&
          res.body !== null &&
          live
        ) {
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
});

/**
 * A body the service streams back: it replaces the original, without a length (it is known only at
 * its end). The trace gets one event for the phase when it ends or fails.
 */
function streamed(
  ctx: RequestContext,
  phase: BodyPhase,
  headers: Headers,
  d: { readonly out: Readable; readonly sent: number; readonly received: number },
  set: (b: Body) => void,
): void {
  set(d.out);
  delete headers['content-length'];
  delete headers['transfer-encoding'];
  const start = ctx.obs ? performance.now() : null;
  const done = (err?: Error) =>
    ctx.obs?.event(
      ctx,
      'extProc',
      err
        ? { phase, result: 'failure', reason: err.message, chunksSent: d.sent, chunksReceived: d.received }
        : { phase, result: 'streamed', chunksSent: d.sent, chunksReceived: d.received },
      start,
      err ? 'warn' : undefined,
    );
  // Always listened to: a body nobody reads any more must not fail the process when it is cut.
  d.out.once('error', (err) => done(err));
  d.out.once('end', () => done());
}

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
  mode: Exclude<BodyMode, 'fullDuplexStreamed'>,
  limit: number,
  code: 'GW_ERR_REQUEST_TOO_LARGE' | 'GW_ERR_RESPONSE_TOO_LARGE',
  request: AbortSource,
): Promise<{ data: Buffer; rest: Readable | null }> {
  const tooLarge = () => new GwError(code, `body is larger than the buffer limit (${limit} bytes)`);
  if (Buffer.isBuffer(body)) {
    if (body.length <= limit) return { data: body, rest: null };
    if (mode === 'buffered') throw tooLarge();
    return { data: body.subarray(0, limit), rest: Readable.from([body.subarray(limit)]) };
  }
  if (mode === 'buffered') {
    const r = await bufferUpTo(body, limit, contentLength(headers), request);
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
