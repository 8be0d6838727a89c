// An `openapi` target: an HTTP API that is not an MCP server, served as one by the gateway itself.
// `initialize` and the lists are answered here (tools from the document, no prompts or resources);
// a tools/call becomes one HTTP request — the path template filled in, the query and the declared
// headers from the arguments (over the client's own), `body` as JSON — and the API's answer becomes the tool's result: JSON
// as structuredContent and as text; a status of 400 or more a result with isError, 5xx a JSON-RPC
// error. Holds no session: any worker serves any call. A document given by URL is fetched on the
// first list or call (each worker fetches its own) and kept; a fetch that fails fails that request
// as a target failure and is tried again by the next.
import type { Dispatcher } from 'undici';
import type { OpenApiToolIR } from '../../config/ir.ts';
import { bufferUpTo } from '../../pipeline/body.ts';
import type { Headers } from '../../pipeline/context.ts';
import { serviceAgent } from '../../upstream/pools.ts';
import { request } from '../../upstream/undici.ts';
import { CODE, errorResponse, type Notification, type Request, type Response } from '../jsonrpc.ts';
import { type OpenApiTools, openApiTools } from '../openapi.ts';
import { deadline, type RequestOptions, type TargetConnection, TargetError } from './connection.ts';

/** The connections that fetch a document served at another origin than its API's. */
const documentAgent = serviceAgent('openapi document', undefined, undefined, { keepAliveTimeout: 30_000 });

export interface OpenApiTargetSpec {
  name: string;
  origin: string;
  /** Put before each operation's path (`/api/v1`), '' for none; unset: the fetched document's server path. */
  path: string | undefined;
  tools: OpenApiToolIR[];
  /** The document's URL when it is fetched on first use (then `tools` is empty until it is). */
  schemaUrl?: string | undefined;
  dispatcher: Dispatcher;
  /** The largest answer (and document) read. */
  maxAnswerBytes: number;
  /** How long fetching the document may take. */
  fetchTimeoutMs?: number;
}

interface Served {
  tools: Map<string, OpenApiToolIR>;
  list: Json[];
  path: string;
}

/** Headers a tool's arguments may not set: the request's own framing and address. */
const RESERVED = new Set(['host', 'content-length', 'content-type', 'transfer-encoding', 'connection']);

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A call's arguments that cannot make a request: the client's mistake, a JSON-RPC invalid-params error. */
class BadArguments extends Error {}

export class OpenApiConnection implements TargetConnection {
  readonly target: string;
  readonly sessionId = null;
  readonly #spec: OpenApiTargetSpec;
  /** The tools served; a fetched document's once it has come (a failed fetch is tried again). */
  #served: Served | Promise<Served> | undefined;

  constructor(spec: OpenApiTargetSpec) {
    this.target = spec.name;
    this.#spec = spec;
    if (spec.schemaUrl === undefined) this.#served = served(spec.tools, spec.path ?? '');
  }

  #tools(): Served | Promise<Served> {
    if (this.#served) return this.#served;
    const p = this.#fetch().then(
      (s) => {
        this.#served = s;
        return s;
      },
      (err: unknown) => {
        this.#served = undefined;
        throw err;
      },
    );
    this.#served = p;
    return p;
  }

  /** The tools, waited for within the request's own deadline and cancellation (a fetch is shared). */
  async #ready(opts: RequestOptions): Promise<Served> {
    const t = this.#tools();
    if (!(t instanceof Promise)) return t;
    const d = deadline(opts.signal, opts.timeoutMs);
    if (!d.signal) return t;
    const s = d.signal;
    try {
      return await Promise.race([
        t,
        new Promise<never>((_, reject) => {
          const stop = () =>
            reject(
              new TargetError(
                this.target,
                d.timedOut() ? `no OpenAPI document within ${opts.timeoutMs} ms` : 'cancelled',
                { timeout: d.timedOut() },
              ),
            );
          if (s.aborted) stop();
          else s.addEventListener('abort', stop, { once: true });
        }),
      ]);
    } finally {
      d.done();
    }
  }

  /** Fetches and reads the document at schemaUrl (once; again after a failure). */
  async #fetch(): Promise<Served> {
    const url = this.#spec.schemaUrl as string;
    const fail = (why: string) => new TargetError(this.target, `the OpenAPI document at ${url} ${why}`);
    let text: string | undefined;
    const limitMs = this.#spec.fetchTimeoutMs ?? FETCH_TIMEOUT_MS;
    const u = new URL(url);
    const headers = { accept: 'application/json, application/yaml;q=0.9, */*;q=0.5', host: u.host };
    // the whole fetch, not each wait, has a deadline
    const signal = AbortSignal.timeout(limitMs);
    try {
      // at the API's own origin, over its pool: with the target's TLS settings and tunnel
      const res =
        u.origin === new URL(this.#spec.origin).origin
          ? await this.#spec.dispatcher.request({
              method: 'GET',
              path: u.pathname + u.search,
              headers,
              signal,
            })
          : await request(url, { headers, signal, dispatcher: documentAgent() });
      text = await readText(res.body, this.#spec.maxAnswerBytes);
      if (res.statusCode !== 200)
        throw fail(
          `answered ${res.statusCode}${res.statusCode >= 300 && res.statusCode < 400 ? ' (redirects are not followed)' : ''}`,
        );
    } catch (err) {
      if (err instanceof TargetError) throw err;
      if (signal.aborted) throw fail(`did not come within ${limitMs} ms`);
      throw fail(`cannot be fetched: ${(err as Error).message}`);
    }
    if (text === undefined) throw fail(`is larger than ${this.#spec.maxAnswerBytes} bytes`);
    const { parse } = await import('yaml');
    let doc: OpenApiTools;
    try {
      doc = openApiTools(parse(text, { maxAliasCount: 100 }), url);
    } catch (err) {
      throw fail(`cannot be served as tools: ${(err as Error).message}`);
    }
    return served(doc.tools, this.#spec.path ?? doc.serverPath);
  }

  async request(req: Request, opts: RequestOptions = {}): Promise<Response> {
    const ok = (result: Json): Response => ({ jsonrpc: '2.0', id: req.id, result });
    switch (req.method) {
      case 'initialize': {
        const asked = req.params?.protocolVersion;
        return ok({
          protocolVersion: typeof asked === 'string' ? asked : '2025-06-18',
          capabilities: { tools: {} },
          serverInfo: { name: this.target, version: 'openapi' },
        });
      }
      case 'ping':
        return ok({});
      case 'tools/list':
        return ok({ tools: (await this.#ready(opts)).list });
      case 'prompts/list':
        return ok({ prompts: [] });
      case 'resources/list':
        return ok({ resources: [] });
      case 'resources/templates/list':
        return ok({ resourceTemplates: [] });
      case 'tools/call':
        return this.#call(req, opts);
      default:
        return errorResponse(req.id, CODE.METHOD_NOT_FOUND, `an OpenAPI target does not serve ${req.method}`);
    }
  }

  async #call(req: Request, opts: RequestOptions): Promise<Response> {
    const p = req.params ?? {};
    const name = typeof p.name === 'string' ? p.name : '';
    const served = await this.#ready(opts);
    const tool = served.tools.get(name);
    if (!tool) return errorResponse(req.id, CODE.INVALID_PARAMS, `tool ${JSON.stringify(name)} not found`);
    const args = isObject(p.arguments) ? p.arguments : {};
    let http: { path: string; headers: Headers; body: Buffer | null };
    try {
      http = this.#request(tool, args, served.path, opts.headers);
    } catch (err) {
      if (err instanceof BadArguments) return errorResponse(req.id, CODE.INVALID_PARAMS, err.message);
      throw err;
    }
    const d = deadline(opts.signal, opts.timeoutMs);
    try {
      const res = await this.#spec.dispatcher.request({
        method: tool.method as Dispatcher.HttpMethod,
        path: http.path,
        headers: http.headers,
        body: http.body,
        signal: d.signal,
      });
      const text = await readText(res.body, this.#spec.maxAnswerBytes);
      if (text === undefined)
        throw new TargetError(
          this.target,
          `${tool.name}: the API's answer is larger than ${this.#spec.maxAnswerBytes} bytes`,
        );
      if (res.statusCode >= 500)
        return errorResponse(
          req.id,
          CODE.INTERNAL,
          `the API call of tool ${tool.name} failed with status ${res.statusCode}: ${text.slice(0, 500)}`,
        );
      return { jsonrpc: '2.0', id: req.id, result: toolResult(res.statusCode, text) };
    } catch (err) {
      if (d.timedOut())
        throw new TargetError(this.target, `${tool.name}: no answer within ${opts.timeoutMs} ms`, {
          timeout: true,
        });
      if (err instanceof TargetError) throw err;
      throw new TargetError(this.target, `cannot reach ${this.#spec.origin}: ${(err as Error).message}`, {
        cause: err,
      });
    } finally {
      d.done();
    }
  }

  /**
   * The HTTP request a call makes: path with its parameters filled in and query, headers, body. The
   * client's headers go too (never its Host), under the operation's declared ones.
   */
  #request(
    tool: OpenApiToolIR,
    args: Json,
    prefix: string,
    client: Readonly<Headers> | undefined,
  ): { path: string; headers: Headers; body: Buffer | null } {
    const group = (g: 'path' | 'query' | 'header'): Json => {
      const v = args[g];
      if (v === undefined || v === null) return {};
      if (!isObject(v)) throw new BadArguments(`arguments.${g} must be an object`);
      return v;
    };
    const pathArgs = group('path');
    let path = tool.path;
    for (const n of tool.params.path) {
      const v = pathArgs[n];
      if (v === undefined || v === null) throw new BadArguments(`path parameter ${n} is missing`);
      if (typeof v !== 'string' && typeof v !== 'number')
        throw new BadArguments(`path parameter ${n} must be a string or a number`);
      const s = String(v);
      if (s === '' || s === '.' || s === '..')
        throw new BadArguments(`path parameter ${n} must not be empty or a dot segment`);
      path = path.replaceAll(`{${n}}`, typeof v === 'number' ? s : encodeUnreserved(s));
    }
    const query: string[] = [];
    const queryArgs = group('query');
    for (const n of tool.params.query) {
      const v = queryArgs[n];
      if (v === undefined) continue;
      for (const item of Array.isArray(v) ? v : [v]) {
        if (item === null) query.push(encodeURIComponent(n));
        else if (typeof item === 'string' || typeof item === 'number' || typeof item === 'boolean')
          query.push(`${encodeURIComponent(n)}=${encodeURIComponent(String(item))}`);
        // an object has no single spelling in a query: left out
      }
    }
    const headers: Headers = {
      ...client,
      accept: 'application/json',
      host: new URL(this.#spec.origin).host,
    };
    const headerArgs = group('header');
    for (const n of tool.params.header) {
      const v = headerArgs[n];
      if (v === undefined || v === null || RESERVED.has(n.toLowerCase())) continue;
      if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean')
        throw new BadArguments(`header ${n} must be a string, a number or a boolean`);
      headers[n.toLowerCase()] = String(v);
    }
    let body: Buffer | null = null;
    if (tool.body && args.body !== undefined) {
      if (tool.body === 'binary') {
        if (typeof args.body !== 'string') throw new BadArguments('body must be base64 text');
        body = Buffer.from(args.body, 'base64');
        headers['content-type'] = 'application/octet-stream';
      } else {
        body = Buffer.from(JSON.stringify(args.body));
        headers['content-type'] = 'application/json';
      }
      headers['content-length'] = String(body.length);
    }
    const full = joinPath(prefix, path);
    return { path: query.length > 0 ? `${full}?${query.join('&')}` : full, headers, body };
  }

  async send(_m: Notification | Response): Promise<void> {
    // notifications (initialized, cancelled) need nothing of an API
  }

  listen(_relay: unknown, signal: AbortSignal): Promise<void> {
    // an API says nothing unasked
    return new Promise((resolve) => {
      if (signal.aborted) resolve();
      else signal.addEventListener('abort', () => resolve(), { once: true });
    });
  }

  async close(): Promise<void> {}
}

/** How long fetching a document may take, by default. */
const FETCH_TIMEOUT_MS = 10_000;

function served(tools: OpenApiToolIR[], path: string): Served {
  return {
    tools: new Map(tools.map((t) => [t.name, t])),
    list: tools.map((t) => ({
      name: t.name,
      ...(t.title ? { title: t.title } : {}),
      description: t.description,
      inputSchema: t.inputSchema,
    })),
    path,
  };
}

/** The tool's result: the API's JSON as structured content and text; a 4xx is a failed call. */
function toolResult(status: number, text: string): Json {
  let value: unknown;
  try {
    value = text === '' ? null : JSON.parse(text);
  } catch {
    value = { code: status, message: text };
  }
  const structured = value === null || isObject(value) ? value : { data: value };
  const result: Json = { content: [{ type: 'text', text: JSON.stringify(structured) }] };
  if (structured !== null) result.structuredContent = structured;
  if (status >= 400) result.isError = true;
  return result;
}

/** Percent-encodes all but RFC 3986's unreserved characters (a `/` in a value stays in its segment). */
function encodeUnreserved(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

function joinPath(prefix: string, path: string): string {
  const p = path.startsWith('/') ? path : `/${path}`;
  return `${prefix.replace(/\/+$/, '')}${p}`;
}

/** The body as text, or undefined when it is larger than `limit` (then it is not read further). */
async function readText(body: Dispatcher.ResponseData['body'], limit: number): Promise<string | undefined> {
  const r = await bufferUpTo(body, limit);
  if (r.ok) return r.data.toString('utf8');
  r.stream.destroy();
  return undefined;
}
