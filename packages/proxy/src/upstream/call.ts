// One upstream attempt: sends the (possibly rewritten) request through a pool and leaves the
// streaming response in ctx.response. Transport failures become GwErrors with the right status.

import type { Readable } from 'node:stream';
import { bracketHost, parseGoDuration } from '@gw/api/runtime';
import type { Dispatcher } from 'undici';
import { GwError } from '../errors.ts';
import { takeComplete } from '../pipeline/body.ts';
import { connectionNames, type Headers, HOP_BY_HOP, type RequestContext } from '../pipeline/context.ts';
import { Exchange } from './exchange.ts';
import { errors } from './undici.ts';

declare module '../pipeline/context.ts' {
  interface RequestExtensions {
    /**
     * frontendPolicies.http.http1HeaderCase preserve on an HTTP/1 request: the client's rawHeaders,
     * whose spelling of each name the upstream request keeps.
     */
    clientHeaderCase?: readonly string[];
    /**
     * With clientHeaderCase: the upstream response's head as received, whose spelling of each name
     * the answer to the client keeps (server/data-plane.ts #respond).
     */
    responseHeaderCase?: readonly (string | Buffer)[];
  }
}

/**
 * `headers` under the names a peer spelled (`raw`: its head, name and value in turn: a client's
 * rawHeaders, an upstream's response head); a name it did not send (one a policy added) stays
 * lowercase. `headers` itself when nothing differs.
 */
export function inClientCase(headers: Headers, raw: readonly (string | Buffer)[]): Headers {
  let spelled: Map<string, string> | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const at = raw[i] as string | Buffer;
    const name = typeof at === 'string' ? at : at.toString('latin1');
    const lower = name.toLowerCase();
    if (lower === name) continue;
    spelled ??= new Map();
    if (!spelled.has(lower)) spelled.set(lower, name);
  }
  if (!spelled) return headers;
  const out: Headers = {};
  for (const k of Object.keys(headers)) out[spelled.get(k) ?? k] = headers[k] as string | string[];
  return out;
}

export interface CallTarget {
  dispatcher: Dispatcher;
  /** host:port (or the socket path) used for `authority: auto` and logs. */
  endpoint: string;
  /** The Host a backend named by DNS name sends by default (host backends' `rewriteHost`). */
  hostHeader?: string | undefined;
}

/**
 * The Host the upstream call sends instead of the client's, if any: the backend's address under
 * `authority: auto` (or hostRewrite Auto), else its name when it is one that asks for it, unless a
 * route's urlRewrite named an authority or hostRewrite said None (`rewriteHostToBackend` false).
 */
export function upstreamHost(
  ctx: RequestContext,
  target: { endpoint: string; hostHeader?: string | undefined },
): string | undefined {
  const rewrite = ctx.ext.rewriteHostToBackend;
  if (rewrite === true) return target.endpoint;
  return rewrite === undefined ? target.hostHeader : undefined;
}

/** A Host header for `host` at `port`: the port is left out when it is the scheme's default. */
export function hostHeaderOf(host: string, port: number, tls: boolean): string {
  const name = bracketHost(host);
  return port === (tls ? 443 : 80) ? name : `${name}:${port}`;
}

const CONNECT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOENT',
  'UND_ERR_CONNECT_TIMEOUT',
  'ETIMEDOUT',
]);
/** The largest request body sent as one buffer when it has all arrived before the upstream call. */
const INLINE_BODY_MAX = 64 * 1024;
const RESET_CODES = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']);

export function backendTimeoutMs(requestTimeout: string | undefined, fromRoute: string | undefined): number {
  const t = fromRoute ?? requestTimeout;
  return t ? (parseGoDuration(t) ?? 0) : 0;
}

export async function callUpstream(
  ctx: RequestContext,
  target: CallTarget,
  attemptTimeoutMs: number,
): Promise<void> {
  const headers = ctx.headers;
  const host = upstreamHost(ctx, target);
  if (host !== undefined) headers.host = host;
  // a traced request carries its upstream span's context (traceparent)
  ctx.obs?.propagate(ctx, headers);
  ctx.endpoint = target.endpoint;

  // Aborted while earlier steps ran (the client left): nothing is sent.
  if (ctx.abortReason !== undefined) throw ctx.abortReason;
  let body = ctx.body;
  if (body !== null && !Buffer.isBuffer(body)) {
    // A small body that arrived in full while earlier steps waited goes out with the head in one
    // write, not piped as a stream.
    const whole = takeComplete(body, INLINE_BODY_MAX);
    if (whole) ctx.body = body = whole;
  }
  const exchange = new Exchange(target.dispatcher, {
    path: ctx.path + ctx.query,
    method: ctx.method as Dispatcher.HttpMethod,
    headers: ctx.ext.clientHeaderCase ? inClientCase(headers, ctx.ext.clientHeaderCase) : headers,
    body: body ?? null,
  });
  // The client going away (or a policy's deadline) ends the exchange, its body included. The hook
  // stays for the request's life: on a finished exchange it does nothing.
  ctx.addAbortHook(exchange);
  let timer: NodeJS.Timeout | undefined;
  if (attemptTimeoutMs > 0) {
    timer = setTimeout(() => exchange.abort(new GwError('GW_ERR_BACKEND_TIMEOUT')), attemptTimeoutMs);
  }
  try {
    const res = await exchange.response;
    ctx.response = { status: res.status, headers: res.headers, body: res.body };
    if (ctx.ext.clientHeaderCase) ctx.ext.responseHeaderCase = res.raw;
    const idle = ctx.ext.responseIdleMs;
    if (idle !== undefined && idle > 0 && res.status !== 101)
      watchIdle(res.body, idle, () =>
        exchange.abort(
          new GwError(
            'GW_ERR_BACKEND_TIMEOUT',
            `the backend sent no more of its response for ${idle} ms (timeout.responseIdleTimeout)`,
          ),
        ),
      );
    if (timer) {
      // The attempt deadline covers the body too: a stalled stream is cut at the same moment.
      const t = timer;
      res.body.once('close', () => clearTimeout(t));
    }
  } catch (err) {
    if (timer) clearTimeout(timer);
    throw toGwError(err);
  }
}

/**
 * Calls `onIdle` when `body` has waited `ms` for data from the backend. The clock runs only while the
 * body wants data (its reader asked for more, and its buffer has room): a reader that is slow to
 * take what came (a slow client) pauses it. It watches the body's own push and read, so it changes
 * nothing of how the body flows.
 */
function watchIdle(body: Readable, ms: number, onIdle: () => void): void {
  let timer: NodeJS.Timeout | undefined = setTimeout(onIdle, ms);
  // a cleared timer does not start again on refresh(): a new one is made after a pause
  const arm = () => {
    if (timer) timer.refresh();
    else timer = setTimeout(onIdle, ms);
  };
  const disarm = () => {
    clearTimeout(timer);
    timer = undefined;
  };
  let done = false;
  const b = body as Readable & {
    push(chunk: unknown, encoding?: BufferEncoding): boolean;
    _read(size: number): void;
  };
  const push = b.push;
  b.push = function (this: Readable, chunk: unknown, encoding?: BufferEncoding): boolean {
    const more = push.call(this, chunk, encoding);
    if (chunk === null) {
      done = true;
      disarm();
    } else if (!more) disarm();
    else if (!done) arm();
    return more;
  };
  const read = b._read;
  b._read = function (this: Readable, size: number): void {
    if (!done && !this.destroyed) arm();
    read.call(this, size);
  };
  body.once('close', () => {
    done = true;
    disarm();
  });
}

export function responseHeaders(h: Record<string, string | string[] | undefined>): Headers {
  const out: Headers = {};
  const extra = connectionNames(h.connection);
  for (const k in h) {
    const v = h[k];
    if (v === undefined || HOP_BY_HOP.has(k) || extra?.has(k)) continue;
    out[k] = v;
  }
  return out;
}

/**
 * A TLS failure in the gateway's words: Node's advice to its own user ("try running Node.js with
 * --use-system-ca") cut off, an OpenSSL error string ("error:0A00010B:SSL routines::wrong version
 * number") down to its reason, and a certificate check's code named.
 */
export function tlsReason(message: string, code: string): string {
  let why = message.split('; if the root CA is installed locally')[0] ?? message;
  const ssl = /error:[0-9A-Fa-f]+:SSL routines:[^:]*:([^:\n]+)/.exec(why);
  if (ssl?.[1]) why = ssl[1].trim();
  if (why === 'wrong version number' || why === 'packet length too long')
    why += ' (does the backend speak TLS on that port?)';
  return code && !code.startsWith('ERR_') && !why.includes(code) ? `${why} (${code})` : why;
}

/** A transport failure as the GwError the client gets; an abort's own reason when `signal` says so. */
export function toGwError(err: unknown, signal?: AbortSignal): GwError {
  if (err instanceof GwError) return err;
  if (signal?.aborted && signal.reason instanceof GwError) return signal.reason;
  const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
  const code = e.code ?? e.cause?.code ?? '';
  const why = e.message || code;
  if (CONNECT_CODES.has(code))
    return new GwError('GW_ERR_UPSTREAM_CONNECT', `upstream connect error: ${why}`, { cause: err });
  if (RESET_CODES.has(code)) return new GwError('GW_ERR_UPSTREAM_RESET', undefined, { cause: err });
  if (
    code.startsWith('ERR_TLS') ||
    code.includes('CERT') ||
    code.includes('SSL') ||
    /certificate|TLS/i.test(why)
  ) {
    return new GwError('GW_ERR_UPSTREAM_TLS', `upstream TLS error: ${tlsReason(why, code)}`, { cause: err });
  }
  // A response that is not HTTP (a bad status line, a garbled header): undici's parser error often
  // carries no code.
  if (
    err instanceof errors.HTTPParserError ||
    code.startsWith('UND_ERR') ||
    code.startsWith('HPE_') ||
    code.startsWith('ERR_HTTP2')
  ) {
    return new GwError('GW_ERR_UPSTREAM_PROTOCOL', `upstream error: ${why}`, { cause: err });
  }
  return new GwError('GW_ERR_INTERNAL', undefined, { cause: err });
}
