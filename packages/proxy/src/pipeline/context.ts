// The state of one request as it flows through the policy layers to a backend and back.
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import type { Readable } from 'node:stream';
import { celHeaderMap } from '@gw/api/runtime';
import type { CelContext } from '../cel/cel.ts';
import type { ErrorFormat, GwError } from '../errors.ts';
import type { RequestExtensions } from './extensions.ts';
import { Observation, type ObservedRequest, type RequestObserver } from './observer.ts';

export type Headers = Record<string, string | string[]>;
export type Body = Readable | Buffer | null;
/** What `RequestContext.addAbortHook` tells when the request is aborted. */
export interface AbortHook {
  abort(reason: GwError): void;
}

export interface ProxyResponse {
  status: number;
  headers: Headers;
  body: Body;
}

export interface RouteInfo {
  key: string;
  name: string;
  gateway: string;
  listener: string;
  /** How this route's clients expect errors worded (see errors.ts). */
  errorFormat: ErrorFormat;
  /** When it depends on the API called (an LLM route serving OpenAI and Anthropic clients): by the URL the client sent. */
  errorFormatOf?: ((url: string) => ErrorFormat) | undefined;
}

/** Hop-by-hop headers (RFC 9110 §7.6.1) are never forwarded in either direction. */
export const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'te',
  'trailer',
  'proxy-authenticate',
  'http2-settings',
]);

// Per-feature state (ctx.ext): declared in its own module so observers can read it; features still
// add their slot by augmenting this module (`declare module '…/pipeline/context.ts'`).
export type { RequestExtensions } from './extensions.ts';

export class RequestContext implements ObservedRequest {
  readonly req: IncomingMessage | Http2ServerRequest;
  readonly res: ServerResponse | Http2ServerResponse;
  readonly startTime: number;
  /** The wall clock at the start, in ms since the epoch; its Date is made when someone asks. */
  readonly #startMs: number;
  #startDate: Date | undefined = undefined;
  readonly scheme: 'http' | 'https';
  readonly httpVersion: string;
  readonly source: { address: string; port: number };
  method: string;
  /** Authority as sent by the client (Host or :authority), port included. */
  authority: string;
  /** Lower-case host without port, for matching. */
  host: string;
  path: string;
  /** Path and query as the client sent them, before any rewrite. */
  readonly originalUrl: string;
  /** Query string including its leading `?`, or empty. */
  query: string;
  /** Request headers to send upstream: lower-case names, no hop-by-hop or pseudo headers. */
  headers: Headers;
  body: Body;
  route: RouteInfo | undefined;
  /** Matched PathPrefix of the selected route rule, for prefix rewrites. */
  matchedPrefix: string | undefined;
  backendName: string | undefined;
  endpoint: string | undefined;
  response: ProxyResponse | undefined;
  error: GwError | undefined;
  /** Feature state (see RequestExtensions). */
  readonly ext: RequestExtensions = {};
  /** The observers of this request; undefined (the common case) when nobody watches it in detail. */
  obs: Observation | undefined = undefined;
  /** Made when someone asks for `signal`: most requests only need the hooks below. */
  #controller: AbortController | undefined = undefined;
  #abortReason: GwError | undefined = undefined;
  /** Told once on abort; the upstream call in flight registers here (no event listener). */
  #abortHooks: AbortHook[] | undefined = undefined;

  constructor(
    req: IncomingMessage | Http2ServerRequest,
    res: ServerResponse | Http2ServerResponse,
    scheme: 'http' | 'https',
    /** The connection's peer; over HTTP/2 `req.socket` may not know it (h2c), so the server says. */
    peer?: { address: string; port: number },
  ) {
    this.req = req;
    this.res = res;
    this.startTime = performance.now();
    this.#startMs = Date.now();
    this.scheme = scheme;
    this.httpVersion = req.httpVersion;
    const sock = peer ?? { address: req.socket.remoteAddress ?? '', port: req.socket.remotePort ?? 0 };
    this.source = { address: normalizeAddress(sock.address), port: sock.port };
    this.method = req.method ?? 'GET';
    const h = req.headers;
    this.authority = (h[':authority'] as string | undefined) ?? h.host ?? '';
    this.host = hostOf(this.authority);
    const url = (h[':path'] as string | undefined) ?? req.url ?? '/';
    this.originalUrl = url;
    const q = url.indexOf('?');
    this.path = q === -1 ? url : url.slice(0, q);
    this.query = q === -1 ? '' : url.slice(q);
    this.headers = forwardableHeaders(h);
    this.body = hasBody(req) ? (req as Readable) : null;
    this.route = undefined;
    this.matchedPrefix = undefined;
    this.backendName = undefined;
    this.endpoint = undefined;
    this.response = undefined;
    this.error = undefined;
  }

  /** When the request started, by the wall clock (trace records, ext_authz, CEL's request.startTime). */
  get startDate(): Date {
    if (this.#startDate === undefined) this.#startDate = new Date(this.#startMs);
    return this.#startDate;
  }

  /** Aborted with the reason `abort` was given. */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#abortReason !== undefined) this.#controller.abort(this.#abortReason);
    }
    return this.#controller.signal;
  }

  /** Set once `abort` has been called: why the request's upstream work ended early. */
  get abortReason(): GwError | undefined {
    return this.#abortReason;
  }

  /**
   * Calls `hook.abort` when the request is aborted (at once when it already is) until
   * `removeAbortHook`. Cheaper than a listener on `signal`, which costs an AbortController and an
   * EventTarget listener; an object with an `abort` method (the upstream exchange) needs no closure.
   */
  addAbortHook(hook: AbortHook): void {
    if (this.#abortReason !== undefined) {
      hook.abort(this.#abortReason);
      return;
    }
    if (this.#abortHooks === undefined) this.#abortHooks = [hook];
    else this.#abortHooks.push(hook);
  }

  removeAbortHook(hook: AbortHook): void {
    const hooks = this.#abortHooks;
    const i = hooks ? hooks.indexOf(hook) : -1;
    if (i !== -1) hooks?.splice(i, 1);
  }

  /** Adds an observer for the rest of this request. */
  observe(o: RequestObserver): Observation {
    if (this.obs === undefined) this.obs = new Observation();
    this.obs.add(o);
    return this.obs;
  }

  /** Ends the request's upstream work; the reason (a GwError) decides what the client gets. */
  abort(reason: GwError): void {
    if (this.#abortReason !== undefined) return;
    this.#abortReason = reason;
    const hooks = this.#abortHooks;
    this.#abortHooks = undefined;
    if (hooks) for (const h of hooks) h.abort(reason);
    this.#controller?.abort(reason);
  }

  /** The CEL view of this request (`request.*`, `source.*`, `response.*` once there is one). */
  celContext(): CelContext {
    const ctx: CelContext = {
      request: {
        method: this.method,
        path: this.path,
        pathAndQuery: this.path + this.query,
        uri: `${this.scheme}://${this.authority}${this.path}${this.query}`,
        host: this.host,
        scheme: this.scheme,
        version: `HTTP/${this.httpVersion}`,
        headers: celHeaderMap(
          this.headers,
          this.authority,
          this.req as { headersDistinct?: Record<string, string[]> },
        ),
        query: this.query,
        startTime: this.startDate,
      },
      source: { address: this.source.address, port: this.source.port },
    };
    if (this.route)
      ctx.route = { name: this.route.name, gateway: this.route.gateway, listener: this.route.listener };
    if (this.backendName) ctx.backend = { name: this.backendName };
    // The body, once a policy read it into memory (a transformation that names it, buffer, …).
    if (this.body === null || Buffer.isBuffer(this.body))
      (ctx.request as Record<string, unknown>).body = this.body ?? EMPTY;
    const { jwt, apiKey, extauthz, llm, a2a, metadata } = this.ext;
    if (llm) {
      ctx.llm = llm.cel();
      ctx.llmRequest = llm.request;
    }
    // Without a credential they are empty, not absent: `has(jwt.sub)` is then false, as in
    // agentgateway, where an unknown variable made it an error, and a deny rule that errs lets the
    // request through (`deny: '!has(jwt.sub)'` let anonymous requests in).
    ctx.jwt = jwt ?? NO_CLAIMS;
    ctx.apiKey = apiKey ?? NO_CLAIMS;
    const user = this.ext.basicUser;
    ctx.basicAuth = user === undefined ? NO_CLAIMS : { username: user };
    if (extauthz) ctx.extauthz = extauthz;
    if (a2a) ctx.a2a = a2a;
    if (metadata) ctx.metadata = metadata;
    const res = this.response;
    if (res) {
      const response: Record<string, unknown> = { code: res.status, headers: celHeaderMap(res.headers) };
      if (res.body === null || Buffer.isBuffer(res.body)) response.body = res.body ?? EMPTY;
      ctx.response = response;
    }
    return ctx;
  }
}

const EMPTY = Buffer.alloc(0);
const NO_CLAIMS: Readonly<Record<string, never>> = Object.freeze({});

export function hostOf(authority: string): string {
  if (authority.startsWith('[')) {
    const end = authority.indexOf(']');
    return authority.slice(1, end === -1 ? undefined : end).toLowerCase();
  }
  const i = authority.lastIndexOf(':');
  return (i === -1 ? authority : authority.slice(0, i)).toLowerCase();
}

/** An address as gw reports it: an IPv4-mapped IPv6 address as plain IPv4. */
export function normalizeAddress(a: string): string {
  return a.startsWith('::ffff:') ? a.slice(7) : a;
}

function hasBody(req: IncomingMessage | Http2ServerRequest): boolean {
  const h = req.headers;
  if ('stream' in req) return !(req.stream as { endAfterHeaders?: boolean }).endAfterHeaders;
  if (h['transfer-encoding']) return true;
  const len = h['content-length'];
  return len !== undefined && len !== '0';
}

/**
 * The further hop-by-hop headers a Connection header names, lower-case; undefined when it names
 * none beyond the usual bare `keep-alive` or `close` (the common case, which allocates nothing).
 */
export function connectionNames(value: string | string[] | undefined): Set<string> | undefined {
  if (value === undefined) return undefined;
  const v = typeof value === 'string' ? value : value.join(',');
  if (v.length <= 10) {
    const l = v.toLowerCase();
    if (l === 'keep-alive' || l === 'close' || l === '') return undefined;
  }
  const names = new Set<string>();
  for (const n of v.split(',')) {
    const k = n.trim().toLowerCase();
    if (k !== '' && k !== 'close' && !HOP_BY_HOP.has(k)) names.add(k);
  }
  return names.size > 0 ? names : undefined;
}

function forwardableHeaders(h: IncomingHttpHeaders): Headers {
  const out: Headers = {};
  const extra = connectionNames(h.connection);
  for (const k in h) {
    if (k.charCodeAt(0) === 58 /* : */ || HOP_BY_HOP.has(k) || extra?.has(k)) continue;
    const v = h[k];
    if (v !== undefined) out[k] = v;
  }
  // HTTP/2 clients send :authority instead of Host; upstream HTTP/1 needs Host.
  if (out.host === undefined && h[':authority']) out.host = h[':authority'] as string;
  if (h.te === 'trailers') out.te = 'trailers';
  return out;
}
