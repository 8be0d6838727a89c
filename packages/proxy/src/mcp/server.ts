// The MCP endpoint clients talk to, on the proxy's own request context: streamable HTTP (POST answered
// with JSON, or with an SSE stream once the targets have something to say before the answer; GET for
// the server's stream; DELETE ends the session) and the legacy SSE transport (GET …/sse, then POST
// …/sse?sessionId=, or the older …/message?sessionId=). Every refusal is a JSON-RPC error, never an
// HTTP error page.
import { PassThrough, type Readable } from 'node:stream';
import { caseless } from '@gw/api/runtime';
import type { CelContext } from '../cel/cel.ts';
import { GwError } from '../errors.ts';
import { readRequestBody } from '../pipeline/body.ts';
import type { RequestContext } from '../pipeline/context.ts';
import { MAX_JSON_DEPTH, nestedDeeperThan } from '../pipeline/json-depth.ts';
import { endSession, sessionEnded } from './ended-sessions.ts';
import {
  type Call,
  type Federation,
  LATEST_VERSION,
  type McpRequest,
  type McpRequestInfo,
  PROTOCOL_VERSIONS,
  traceRequest,
} from './federation.ts';
import {
  asMessage,
  CODE,
  errorResponse,
  type Id,
  isNotification,
  isRequest,
  isResponse,
  McpError,
  type Message,
  type Response,
} from './jsonrpc.ts';
import type { ClientStream, RemoteMessage } from './runtime.ts';
import {
  homeExited,
  newSessionNonce,
  type SessionSealer,
  type SessionState,
  sessionSealer,
} from './session.ts';
import { sseFrame } from './sse.ts';

const SESSION_HEADER = 'mcp-session-id';
const VERSION_HEADER = 'mcp-protocol-version';
/** Expired session ids whose upstream sessions this worker already ended (oldest dropped first). */
const ENDED_KEPT = 1024;

export class McpServer {
  readonly #fed: Federation;
  readonly #limit: number;
  readonly #localhostOnly: boolean;
  /** config.mcp.sessionTtl in ms; 0: sessions do not expire. */
  readonly #ttlMs: number;
  readonly #ended = new Set<string>();
  #sealer: SessionSealer | undefined;

  constructor(fed: Federation, bodyLimit: number, sessionTtlMs = 0) {
    this.#fed = fed;
    this.#limit = bodyLimit;
    this.#ttlMs = sessionTtlMs;
    this.#localhostOnly = fed.ir.localhostOnly;
    fed.runtime.onRemote = (m) => this.#remote(m);
  }

  /** A comment on `stream` every sseKeepAlive while it is open (none when it is 0). */
  #keepAlive(stream: PassThrough): NodeJS.Timeout | undefined {
    const every = this.#fed.ir.keepAliveMs;
    if (every <= 0) return undefined;
    const t = setInterval(() => write(stream, ': keep-alive\n\n'), every);
    t.unref();
    return t;
  }

  get #seal(): SessionSealer {
    this.#sealer ??= sessionSealer();
    return this.#sealer;
  }

  get #stateful(): boolean {
    return this.#fed.ir.sessionRouting === 'Stateful';
  }

  async handle(ctx: RequestContext): Promise<void> {
    if (this.#localhostOnly && !localOnly(ctx)) {
      return answer(ctx, 403, errorResponse(null, CODE.INVALID_REQUEST, 'Host and Origin must be localhost'));
    }
    const legacy = legacyStep(ctx);
    if (legacy === 'open') return this.#legacyOpen(ctx);
    if (legacy === 'message') return this.#legacyMessage(ctx);
    switch (ctx.method) {
      case 'POST':
        return this.#post(ctx);
      case 'GET':
        return this.#get(ctx);
      case 'DELETE':
        return this.#delete(ctx);
      default:
        return answer(
          ctx,
          405,
          errorResponse(
            null,
            CODE.INVALID_REQUEST,
            `an MCP endpoint takes POST, GET and DELETE, not ${ctx.method}`,
          ),
          { allow: 'GET, POST, DELETE' },
        );
    }
  }

  // ---------- streamable HTTP ----------

  async #post(ctx: RequestContext): Promise<void> {
    const accept = header(ctx, 'accept') ?? '';
    const parsed = await this.#readMessage(ctx);
    if ('error' in parsed) return answer(ctx, parsed.status, parsed.error);
    const m = parsed.message;
    if (isRequest(m) && m.method === 'initialize') return this.#initialize(ctx, m);
    const session = this.#session(ctx);
    if (session instanceof McpError) {
      ctx.ext.mcp = { method: 'method' in m ? m.method : 'response', outcome: 'invalid' };
      return answer(
        ctx,
        session.httpStatus,
        errorResponse(isRequest(m) ? m.id : null, session.code, session.message),
      );
    }
    const version = header(ctx, VERSION_HEADER);
    if (version !== undefined && !PROTOCOL_VERSIONS.includes(version)) {
      return answer(
        ctx,
        400,
        errorResponse(
          isRequest(m) ? m.id : null,
          CODE.INVALID_REQUEST,
          `unsupported MCP-Protocol-Version ${version}`,
        ),
      );
    }
    if (!isRequest(m)) {
      ctx.ext.mcp = { method: 'method' in m ? m.method : 'response', outcome: 'ok' };
      const call = this.#call(ctx, session, () => {});
      await this.#fed.fromClient(call, m as never);
      ctx.response = { status: 202, headers: { 'content-length': '0' }, body: null };
      return;
    }
    await this.#respond(ctx, session, m, accept.includes('text/event-stream'));
  }

  /**
   * Answers one request: as JSON when the answer is all there is, or as an SSE stream as soon as
   * a target sends something about the request first (progress, a sampling request).
   */
  async #respond(
    ctx: RequestContext,
    session: SessionState | null,
    req: Message & { id: Id; method: string },
    sse: boolean,
  ): Promise<void> {
    let stream: PassThrough | undefined;
    let headersSent: (() => void) | undefined;
    const headersReady = new Promise<void>((r) => {
      headersSent = r;
    });
    const relay = (msg: Message) => {
      if (!sse || ctx.signal.aborted) return;
      if (!stream) {
        stream = sseStream();
        // quota headers of a rate limit checked before the target was asked
        ctx.response = { status: 200, headers: { ...call.headers, ...sseHeaders() }, body: stream };
        headersSent?.();
      }
      write(stream, sseFrame(JSON.stringify(msg)));
    };
    const call = this.#call(ctx, session, relay);
    const work = this.#fed.request(call, req as never);
    // Whichever comes first: the answer (JSON) or the first message before it (a stream).
    await Promise.race([work, headersReady]);
    if (stream) {
      const s = stream;
      work.then(
        (res) => write(s, sseFrame(JSON.stringify(res)), true),
        (err) =>
          write(
            s,
            sseFrame(JSON.stringify(errorResponse(req.id, CODE.INTERNAL, (err as Error).message))),
            true,
          ),
      );
      return;
    }
    const res = await work;
    answer(ctx, call.status ?? 200, res, call.headers);
  }

  async #initialize(ctx: RequestContext, req: Message & { id: Id; method: string }): Promise<void> {
    const info: McpRequestInfo = { method: 'initialize' };
    ctx.ext.mcp = info;
    const call = this.#call(ctx, null, () => {});
    const start = ctx.obs ? performance.now() : null;
    try {
      const { response, state } = await this.#fed.guardedInitialize(call, req as never, info);
      info.outcome ??= 'ok';
      const headers: Record<string, string> = {};
      if (state) headers[SESSION_HEADER] = this.#seal.seal(state);
      answer(ctx, 200, response, headers);
    } catch (err) {
      info.outcome = 'failed';
      answer(ctx, 200, errorResponse(req.id, CODE.UPSTREAM, (err as Error).message));
    }
    traceRequest(ctx, start);
  }

  async #get(ctx: RequestContext): Promise<void> {
    if (!(header(ctx, 'accept') ?? '').includes('text/event-stream')) {
      return answer(
        ctx,
        406,
        errorResponse(null, CODE.INVALID_REQUEST, 'GET needs Accept: text/event-stream'),
      );
    }
    if (!this.#stateful) {
      return answer(
        ctx,
        405,
        errorResponse(null, CODE.INVALID_REQUEST, 'a stateless MCP endpoint has no server stream'),
        {
          allow: 'POST',
        },
      );
    }
    const session = this.#session(ctx);
    if (session instanceof McpError)
      return answer(ctx, session.httpStatus, errorResponse(null, session.code, session.message));
    ctx.ext.mcp = { method: 'GET stream', outcome: 'ok' };
    const stream = sseStream();
    ctx.response = { status: 200, headers: sseHeaders(), body: stream };
    const ac = new AbortController();
    const stop = () => ac.abort();
    ctx.signal.addEventListener('abort', stop, { once: true });
    stream.on('close', stop);
    const keepalive = this.#keepAlive(stream);
    // the stream ends with its session (config.mcp.sessionTtl)
    const left = session ? this.#leftMs(session) : Number.POSITIVE_INFINITY;
    const expiry = Number.isFinite(left) ? setTimeout(stop, left) : undefined;
    expiry?.unref();
    const call: Call = {
      ctx,
      session,
      signal: ac.signal,
      relay: (m) => write(stream, sseFrame(JSON.stringify(m))),
    };
    void this.#fed.listen(call).finally(() => {
      clearInterval(keepalive);
      clearTimeout(expiry);
      write(stream, '', true);
    });
  }

  async #delete(ctx: RequestContext): Promise<void> {
    if (!this.#stateful) {
      return answer(
        ctx,
        405,
        errorResponse(null, CODE.INVALID_REQUEST, 'a stateless MCP endpoint has no session'),
        {
          allow: 'POST',
        },
      );
    }
    const session = this.#session(ctx);
    if (session instanceof McpError)
      return answer(ctx, session.httpStatus, errorResponse(null, session.code, session.message));
    ctx.ext.mcp = { method: 'DELETE session', outcome: 'ok' };
    if (session) {
      endSession(session.n);
      await this.#fed.end(session, { ctx });
    }
    ctx.response = { status: 200, headers: { 'content-length': '0' }, body: null };
  }

  // ---------- legacy SSE ----------

  /** GET …/sse: a session whose answers all come on this stream; messages are POSTed to `endpoint`. */
  async #legacyOpen(ctx: RequestContext): Promise<void> {
    const stream = sseStream();
    ctx.response = { status: 200, headers: sseHeaders(), body: stream };
    // The session begins unopened: its initialize (POSTed) sets it up. The id names the stream.
    const id = this.#seal.seal({
      v: 1,
      s: {},
      p: LATEST_VERSION,
      c: {},
      t: Math.floor(Date.now() / 1000),
      n: `legacy-${newSessionNonce()}`,
    });
    const nonce = (this.#seal.open(id) as SessionState).n;
    // The GET's own path, as agentgateway advertises: a route matching exactly `/sse` takes the POSTs too.
    stream.write(sseFrame(`${ctx.path}?sessionId=${id}`, 'endpoint'));
    const keepalive = this.#keepAlive(stream);
    const ac = new AbortController();
    const entry: ClientStream = {
      send: (m: Message) => {
        write(stream, sseFrame(JSON.stringify(m), 'message'));
      },
      close: () => ac.abort(),
      signal: ac.signal,
    };
    this.#fed.runtime.clientStreams.set(nonce, entry);
    this.#fed.runtime.listenRemote();
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      ac.abort();
      clearInterval(keepalive);
      write(stream, '', true);
      this.#fed.runtime.clientStreams.delete(nonce);
      const st = entry.state;
      if (st) void this.#fed.end(st);
      else void this.#fed.runtime.endSession(nonce);
    };
    ctx.signal.addEventListener('abort', end, { once: true });
    stream.on('close', end);
    ac.signal.addEventListener('abort', end, { once: true });
  }

  /** POST …/sse?sessionId= (or …/message?sessionId=): answered 202; the answer comes on the stream. */
  async #legacyMessage(ctx: RequestContext): Promise<void> {
    const id = new URLSearchParams(ctx.query.slice(1)).get('sessionId') ?? '';
    const opened = this.#seal.open(id);
    if (!opened?.n.startsWith('legacy-')) {
      return answer(ctx, 404, errorResponse(null, CODE.SESSION_NOT_FOUND, 'Session not found'));
    }
    const parsed = await this.#readMessage(ctx);
    if ('error' in parsed) return answer(ctx, parsed.status, parsed.error);
    ctx.response = {
      status: 202,
      headers: { 'content-length': '8', 'content-type': 'text/plain' },
      body: Buffer.from('Accepted'),
    };
    const entry = this.#fed.runtime.clientStreams.get(opened.n);
    if (!entry) {
      // The stream is held by another worker of this proxy: it takes the message from here.
      this.#fed.runtime.forward({
        nonce: opened.n,
        message: parsed.message,
        cel: portableCel(ctx.celContext()),
        route: ctx.route?.key,
      });
      return;
    }
    void this.#legacyHandle(ctx, entry, opened.n, parsed.message);
  }

  #remote(m: RemoteMessage): void {
    const entry = this.#fed.runtime.clientStreams.get(m.nonce);
    const msg = asMessage(m.message);
    if (!entry || !msg) return;
    const cel = receivedCel(m.cel);
    const view: McpRequest = {
      ext: {},
      celContext: () => cel,
      route: m.route === undefined ? undefined : { key: m.route },
      signal: entry.signal,
    };
    void this.#legacyHandle(view, entry, m.nonce, msg);
  }

  /** One message of a legacy SSE session: every answer goes on the session's stream. */
  async #legacyHandle(req: McpRequest, entry: ClientStream, nonce: string, m: Message): Promise<void> {
    const relay = (msg: Message) => entry.send(msg);
    if (isRequest(m) && m.method === 'initialize') {
      const info: McpRequestInfo = { method: 'initialize' };
      req.ext.mcp = info;
      const call: Call = { ctx: req, session: null, relay, signal: entry.signal };
      try {
        // The legacy session keeps the stream's nonce, so its stdio processes are found again.
        const { response, state } = await this.#fed.guardedInitialize(call, m, info, nonce);
        if (state) {
          entry.state = state;
          // What the targets say unasked goes on the same stream.
          void this.#fed.listen({ ctx: req, session: state, relay, signal: entry.signal });
        }
        info.outcome ??= 'ok';
        entry.send(response);
      } catch (err) {
        info.outcome = 'failed';
        entry.send(errorResponse(m.id, CODE.UPSTREAM, (err as Error).message));
      }
      return;
    }
    const session = entry.state ?? null;
    if (!session && this.#stateful) {
      entry.send(
        errorResponse(isRequest(m) ? m.id : null, CODE.INVALID_REQUEST, 'the session is not initialized'),
      );
      return;
    }
    const call: Call = { ctx: req, session, relay, signal: entry.signal };
    if (!isRequest(m)) {
      req.ext.mcp = { method: 'method' in m ? m.method : 'response', outcome: 'ok' };
      await this.#fed.fromClient(call, m as never).catch(() => {});
      return;
    }
    try {
      relay(await this.#fed.request(call, m));
    } catch (err) {
      relay(errorResponse(m.id, CODE.INTERNAL, (err as Error).message));
    }
  }

  // ---------- shared ----------

  #call(ctx: RequestContext, session: SessionState | null, relay: (m: Message) => void): Call {
    return { ctx, session, relay, signal: ctx.signal };
  }

  /** The request's session: null in Stateless mode; an McpError for a missing or unknown id. */
  #session(ctx: RequestContext): SessionState | null | McpError {
    if (!this.#stateful) return null;
    const id = header(ctx, SESSION_HEADER);
    if (!id)
      return new McpError(
        CODE.INVALID_REQUEST,
        'Bad Request: Mcp-Session-Id header is required',
        undefined,
        400,
      );
    const s = this.#seal.open(id);
    if (!s || s.n.startsWith('legacy-'))
      return new McpError(CODE.SESSION_NOT_FOUND, 'Session not found', undefined, 404);
    if (sessionEnded(s.n))
      return new McpError(CODE.SESSION_NOT_FOUND, 'Session ended (DELETE)', undefined, 404);
    // its stdio processes and SSE streams died with the worker that held them: the client starts anew
    if (this.#fed.homeBound && homeExited(s))
      return new McpError(
        CODE.SESSION_NOT_FOUND,
        'Session ended: the gateway worker holding its stdio and SSE targets exited',
        undefined,
        404,
      );
    if (this.#leftMs(s) <= 0) {
      this.#expire(id, s);
      // 404: the client starts a new session (the MCP transport's rule for a session that ended)
      return new McpError(CODE.SESSION_NOT_FOUND, 'Session expired (config.mcp.sessionTtl)', undefined, 404);
    }
    return s;
  }

  /** How long `s` has left (config.mcp.sessionTtl); Infinity without a limit. */
  #leftMs(s: SessionState): number {
    return this.#ttlMs > 0 ? s.t * 1000 + this.#ttlMs - Date.now() : Number.POSITIVE_INFINITY;
  }

  /** Ends an expired session's upstream sessions, once per worker, in the background. */
  #expire(id: string, s: SessionState): void {
    if (this.#ended.has(id)) return;
    if (this.#ended.size >= ENDED_KEPT) this.#ended.delete(this.#ended.values().next().value as string);
    this.#ended.add(id);
    void this.#fed.end(s).catch(() => {});
  }

  async #readMessage(
    ctx: RequestContext,
  ): Promise<{ message: Message } | { error: Response; status: number }> {
    const type = header(ctx, 'content-type') ?? '';
    if (!type.includes('application/json')) {
      return {
        status: 415,
        error: errorResponse(null, CODE.INVALID_REQUEST, 'Content-Type must be application/json'),
      };
    }
    let raw: Buffer;
    try {
      raw = await readRequestBody(ctx, this.#limit);
    } catch (err) {
      if (!(err instanceof GwError) || err.code !== 'GW_ERR_REQUEST_TOO_LARGE') throw err;
      // drained, so the connection stays usable for the answer
      (ctx.body as Readable).resume();
      ctx.body = null;
      return { status: 413, error: errorResponse(null, CODE.INVALID_REQUEST, err.detail) };
    }
    ctx.body = null;
    let v: unknown;
    try {
      v = JSON.parse(raw.toString('utf8'));
    } catch (err) {
      return {
        status: 400,
        error: errorResponse(null, CODE.PARSE_ERROR, `Parse error: ${(err as Error).message}`),
      };
    }
    if (nestedDeeperThan(v)) {
      const id = (v as { id?: unknown }).id;
      return {
        status: 400,
        error: errorResponse(
          typeof id === 'string' || typeof id === 'number' ? id : null,
          CODE.INVALID_REQUEST,
          `the message nests objects and arrays more than ${MAX_JSON_DEPTH} levels deep`,
        ),
      };
    }
    if (Array.isArray(v)) {
      return {
        status: 400,
        error: errorResponse(null, CODE.INVALID_REQUEST, 'JSON-RPC batches are not supported'),
      };
    }
    const m = asMessage(v);
    if (!m)
      return { status: 400, error: errorResponse(null, CODE.INVALID_REQUEST, 'not a JSON-RPC 2.0 message') };
    if (!isRequest(m) && !isNotification(m) && !isResponse(m)) {
      return { status: 400, error: errorResponse(null, CODE.INVALID_REQUEST, 'not a JSON-RPC 2.0 message') };
    }
    return { message: m };
  }
}

function header(ctx: RequestContext, name: string): string | undefined {
  const v = ctx.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** A stream to a client; once the client is gone, writes are dropped instead of raising. */
function sseStream(): PassThrough {
  const s = new PassThrough();
  s.on('error', () => {});
  return s;
}

function write(s: PassThrough, text: string, end = false): void {
  if (s.destroyed || s.writableEnded) return;
  if (end) s.end(text);
  else s.write(text);
}

function sseHeaders(): Record<string, string> {
  return { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' };
}

function answer(
  ctx: RequestContext,
  status: number,
  body: Response,
  extra: Record<string, string> = {},
): void {
  const data = Buffer.from(JSON.stringify(body));
  ctx.response = {
    status,
    // the answer's own framing wins over headers from elsewhere (a rate limit service's)
    headers: { ...extra, 'content-type': 'application/json', 'content-length': String(data.length) },
    body: data,
  };
}

/**
 * The legacy SSE step a request is, if any: GET …/sse opens a stream; a message is POSTed to the path
 * the stream advertised (…/sse?sessionId=) or to …/message, which gw advertised before and clients may
 * have kept. A POST to …/sse without a sessionId is a streamable-HTTP client's whose URL ends in /sse.
 */
function legacyStep(ctx: RequestContext): 'open' | 'message' | undefined {
  const sse = ctx.path.endsWith('/sse');
  if (ctx.method === 'GET') return sse ? 'open' : undefined;
  if (ctx.method !== 'POST') return undefined;
  if (ctx.path.endsWith('/message')) return 'message';
  if (sse && new URLSearchParams(ctx.query.slice(1)).has('sessionId')) return 'message';
  return undefined;
}

function localOnly(ctx: RequestContext): boolean {
  const local = (h: string) => /^(localhost|127\.0\.0\.1|\[::1\])(:\d+)?$/i.test(h);
  const origin = header(ctx, 'origin');
  let originOk = true;
  if (origin) {
    try {
      originOk = local(new URL(origin).host);
    } catch {
      originOk = false;
    }
  }
  return local(ctx.authority) && originOk;
}

/**
 * A request's CEL view as another worker can receive it: its header maps plain objects (each is a
 * Proxy that finds names in any case, and a Proxy does not cross to another thread).
 */
function portableCel(cel: CelContext): Record<string, unknown> {
  const out: Record<string, unknown> = { ...cel };
  for (const k of ['request', 'response'] as const) {
    const part = cel[k] as Record<string, unknown> | undefined;
    if (part?.headers) out[k] = { ...part, headers: { ...(part.headers as Record<string, string>) } };
  }
  return out;
}

/** The CEL view another worker sent (portableCel), its header maps finding names in any case again. */
function receivedCel(cel: Record<string, unknown>): CelContext {
  for (const k of ['request', 'response']) {
    const part = cel[k] as Record<string, unknown> | undefined;
    if (part?.headers) part.headers = caseless(part.headers as Record<string, string>);
  }
  return cel as CelContext;
}
