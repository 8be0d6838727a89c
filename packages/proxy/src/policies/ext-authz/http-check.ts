// The HTTP form: the request's method and path (or a CEL path) sent to the authorization service with
// only the allowed headers (and the request body, with includeRequestBody); 2xx allows, 401/403 may
// become a redirect, 5xx or no answer is a failure, and any other answer goes back to the client as
// the denial. With backendTLS the service is called over https; a Service of `services` at its
// workloads in turn.
import type { Readable } from 'node:stream';
import { parseGoDuration } from '@gw/api/runtime';
import { type CelContext, type CelProgram, celToJson, compileCel } from '../../cel/cel.ts';
import type { BackendTlsIR, ExtAuthzIR } from '../../config/ir.ts';
import { GwError } from '../../errors.ts';
import { type Headers, HOP_BY_HOP, type RequestContext } from '../../pipeline/context.ts';
import { serviceAgent } from '../../upstream/pools.ts';
import { request } from '../../upstream/undici.ts';
import { type Check, DEFAULT_TIMEOUT_MS, type Decision, deadline, failureReason } from './decision.ts';
import { PARTIAL_BODY_HEADER } from './request-body.ts';

type HttpConfig = Extract<ExtAuthzIR, { http: unknown }>['http'];

/** An authorization answer is a decision, not a payload: bodies past this are refused. */
const MAX_BODY = 1024 * 1024;

// Headers that describe the connection or the body of one message; never copied between messages.
const NOT_COPIED = new Set([...HOP_BY_HOP, 'host', 'content-length']);

export function httpCheck(
  cfg: HttpConfig,
  tls?: BackendTlsIR,
  serviceHeaders: Record<string, string> = {},
  /** The credential each call obtains for its request (service-call.ts serviceAuthOf). */
  auth?: (ctx: RequestContext) => Promise<Record<string, string>>,
): Check {
  const timeoutMs = (cfg.timeout && parseGoDuration(cfg.timeout)) || DEFAULT_TIMEOUT_MS;
  const origin = `${tls ? 'https' : 'http'}://${cfg.host}`;
  // plain checks share one pool; each TLS setting and each Service has its own
  const dispatcher = serviceAgent('extAuthz', cfg.endpoints, tls, { keepAliveTimeout: 30_000 });
  const path = cfg.path ? compileCel(cfg.path) : undefined;
  const redirect = cfg.redirect ? compileCel(cfg.redirect) : undefined;
  const body = cfg.body ? compileCel(cfg.body) : undefined;
  const sendHeaders = (cfg.allowedRequestHeaders ?? ['authorization'])
    .map((h) => h.toLowerCase())
    .filter((h) => !NOT_COPIED.has(h));
  // `:method` among them (agentgateway's) is the check request's method, not a header
  const added = Object.entries(cfg.addRequestHeaders ?? {});
  const methodExpr = added.find(([k]) => k.toLowerCase() === ':method')?.[1];
  const setMethod = methodExpr === undefined ? undefined : compileCel(methodExpr);
  const addHeaders = added
    .filter(([k]) => k.toLowerCase() !== ':method')
    .map(([k, v]) => [k.toLowerCase(), compileCel(v)] as const);
  const keepHeaders = (cfg.allowedResponseHeaders ?? []).map((h) => h.toLowerCase());
  const metadata = Object.entries(cfg.responseMetadata ?? {}).map(([k, v]) => [k, compileCel(v)] as const);

  return async (ctx, requestBody) => {
    let cel: CelContext | undefined;
    const celCtx = () => {
      cel ??= ctx.celContext();
      return cel;
    };
    let target = ctx.path + ctx.query;
    if (path) {
      const v = path.eval(celCtx());
      if (typeof v !== 'string' || !v.startsWith('/'))
        return { kind: 'failure', reason: 'path expression did not give a path starting with /' };
      target = v;
    }
    const headers: Record<string, string | string[]> = {};
    for (const h of sendHeaders) {
      const v = ctx.headers[h];
      if (v !== undefined) headers[h] = v;
    }
    for (const [h, program] of addHeaders) {
      const v = headerValue(program.eval(celCtx()));
      if (v !== undefined) headers[h] = v;
    }
    // the service's own (requestHeaderModifier, its key) last: the client cannot override them
    Object.assign(headers, serviceHeaders);
    if (auth)
      try {
        Object.assign(headers, await auth(ctx));
      } catch (err) {
        return { kind: 'failure', reason: `backendAuth: ${(err as Error).message}` };
      }
    let payload: Buffer | undefined;
    if (body) {
      const v = body.eval(celCtx());
      if (v === undefined) return { kind: 'failure', reason: 'body expression failed' };
      payload = bytes(v);
      if (!(typeof v === 'string' || v instanceof Uint8Array)) headers['content-type'] ??= 'application/json';
    } else if (requestBody) {
      if (requestBody.data.length > 0) payload = requestBody.data;
      headers[PARTIAL_BODY_HEADER] = String(requestBody.partial);
    }
    // A GET or HEAD with a body is not portable; a check that sends a body is a POST.
    let method = payload && (ctx.method === 'GET' || ctx.method === 'HEAD') ? 'POST' : ctx.method;
    if (setMethod) {
      const m = setMethod.eval(celCtx());
      if (typeof m !== 'string' || !/^[A-Za-z]+$/.test(m))
        return { kind: 'failure', reason: ':method expression did not give a method' };
      method = m.toUpperCase();
    }
    const signal = deadline(ctx, timeoutMs);
    let res: Awaited<ReturnType<typeof request>>;
    try {
      res = await request(origin + target, {
        method,
        headers,
        body: payload ?? null,
        signal,
        dispatcher: dispatcher(),
      });
    } catch (err) {
      return { kind: 'failure', reason: failureReason(err, signal, timeoutMs) };
    }
    const code = res.statusCode;
    if (code >= 500) {
      res.body.dump().catch(() => {});
      return { kind: 'failure', reason: `authorization service answered ${code}` };
    }
    if (code >= 200 && code < 300) {
      let text = '';
      if (metadata.length > 0) {
        try {
          text = (await readUpTo(res.body, MAX_BODY)).toString();
        } catch (err) {
          return { kind: 'failure', reason: failureReason(err, signal, timeoutMs) };
        }
      } else res.body.dump().catch(() => {});
      return allow(res.headers, code, text, celCtx, keepHeaders, metadata);
    }
    if ((code === 401 || code === 403) && redirect) {
      const location = redirect.eval(celCtx());
      if (typeof location === 'string' && !/[\r\n]/.test(location)) {
        res.body.dump().catch(() => {});
        return {
          kind: 'deny',
          response: { status: 302, headers: { location, 'content-length': '0' }, body: null },
          metadata: undefined,
        };
      }
    }
    // Anything else is the service's denial, passed on as it was given.
    let data: Buffer;
    try {
      data = await readUpTo(res.body, MAX_BODY);
    } catch {
      // A denial stays a denial even when its body cannot be read.
      return {
        kind: 'deny',
        response: new GwError('GW_ERR_FORBIDDEN', 'denied by external authorization'),
        metadata: undefined,
      };
    }
    const out: Headers = {};
    for (const [k, v] of Object.entries(res.headers)) if (v !== undefined && !NOT_COPIED.has(k)) out[k] = v;
    out['content-length'] = String(data.length);
    return { kind: 'deny', response: { status: code, headers: out, body: data }, metadata: undefined };
  };
}

function allow(
  resHeaders: Record<string, string | string[] | undefined>,
  code: number,
  text: string,
  celCtx: () => CelContext,
  keepHeaders: readonly string[],
  metadata: readonly (readonly [string, CelProgram])[],
): Decision {
  const copied: [string, string | string[]][] = [];
  for (const h of keepHeaders) {
    const v = resHeaders[h];
    if (v !== undefined) copied.push([h, v]);
  }
  let values: Record<string, unknown> | undefined;
  if (metadata.length > 0) {
    // `response` is the authorization service's answer here, not the backend's.
    const response = { code, headers: joinHeaders(resHeaders), body: text };
    const cel = { ...celCtx(), response };
    values = {};
    for (const [k, program] of metadata) {
      const v = program.eval(cel);
      if (v !== undefined) values[k] = celToJson(v);
    }
  }
  return {
    kind: 'allow',
    apply(ctx) {
      for (const [k, v] of copied) ctx.headers[k] = v;
      if (values && Object.keys(values).length > 0) ctx.ext.extauthz = values;
    },
    onResponse: undefined,
  };
}

function joinHeaders(h: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) if (v !== undefined) out[k] = Array.isArray(v) ? v.join(',') : v;
  return out;
}

function headerValue(v: unknown): string | undefined {
  const s =
    typeof v === 'string'
      ? v
      : typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean'
        ? String(v)
        : undefined;
  return s === undefined || /[\r\n\0]/.test(s) ? undefined : s;
}

/** Strings and bytes are sent as they are; anything else as JSON. */
function bytes(v: unknown): Buffer {
  if (typeof v === 'string') return Buffer.from(v);
  if (v instanceof Uint8Array) return Buffer.from(v);
  return Buffer.from(JSON.stringify(celToJson(v)));
}

async function readUpTo(body: Readable, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of body) {
    size += (c as Buffer).length;
    if (size > limit) {
      body.destroy();
      throw new Error(`answer is larger than ${limit} bytes`);
    }
    chunks.push(c as Buffer);
  }
  return Buffer.concat(chunks, size);
}
