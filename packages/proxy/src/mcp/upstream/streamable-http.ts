// A streamable-HTTP target: each message is one POST; an answer comes as JSON or as an SSE stream
// carrying the messages about the request before the answer. Holds nothing but the session id, so
// any worker can make the next call of a session.
import type { Dispatcher } from 'undici';
import type { Headers } from '../../pipeline/context.ts';
import {
  asMessage,
  isResponse,
  type Message,
  type Notification,
  type Request,
  type Response,
} from '../jsonrpc.ts';
import { SseParser } from '../sse.ts';
import {
  deadline,
  type Relay,
  type RequestOptions,
  type TargetConnection,
  TargetError,
} from './connection.ts';

/** Why a stream is closed once its answer has arrived: one instance, no stack trace per answer. */
const ANSWERED = new Error('the answer has arrived');

export interface HttpTargetSpec {
  name: string;
  origin: string;
  path: string;
  dispatcher: Dispatcher;
  /** For requests the gateway makes on its own (initialize, lists); 0: none. */
  timeoutMs: number;
  /**
   * The headers of the client request this connection serves, sent with each of its calls (gw's own
   * below win); shared by every target of that request, never changed here.
   */
  headers?: Readonly<Headers>;
  /** The client's validated JWT for backendAuth passthrough, over the client's headers. */
  auth?: Record<string, string>;
}

export class StreamableHttpConnection implements TargetConnection {
  readonly target: string;
  sessionId: string | null;
  readonly #spec: HttpTargetSpec;
  #version: string | undefined;

  constructor(spec: HttpTargetSpec, sessionId: string | null, version: string | undefined) {
    this.target = spec.name;
    this.#spec = spec;
    this.sessionId = sessionId;
    this.#version = version;
  }

  setVersion(v: string): void {
    this.#version = v;
  }

  #headers(accept: string, json: boolean): Headers {
    const h: Headers = {
      ...this.#spec.headers,
      ...this.#spec.auth,
      accept,
      host: new URL(this.#spec.origin).host,
    };
    if (json) h['content-type'] = 'application/json';
    if (this.sessionId) h['mcp-session-id'] = this.sessionId;
    if (this.#version) h['mcp-protocol-version'] = this.#version;
    return h;
  }

  async #call(
    method: 'POST' | 'GET' | 'DELETE',
    body: string | null,
    accept: string,
    signal: AbortSignal | undefined,
  ) {
    try {
      return await this.#spec.dispatcher.request({
        path: this.#spec.path,
        method,
        headers: this.#headers(accept, body !== null),
        body,
        signal,
      });
    } catch (err) {
      throw new TargetError(
        this.target,
        `cannot reach ${this.#spec.origin}${this.#spec.path}: ${(err as Error).message}`,
        {
          cause: err,
        },
      );
    }
  }

  async request(req: Request, opts: RequestOptions = {}): Promise<Response> {
    const d = deadline(opts.signal, opts.timeoutMs);
    try {
      const res = await this.#call(
        'POST',
        JSON.stringify(req),
        'application/json, text/event-stream',
        d.signal,
      );
      if (req.method === 'initialize') {
        const sid = res.headers['mcp-session-id'];
        if (typeof sid === 'string') this.sessionId = sid;
      }
      if (res.statusCode >= 400) return await this.#failed(res, req);
      const type = String(res.headers['content-type'] ?? '');
      if (type.startsWith('text/event-stream')) return await this.#fromStream(res.body, req, opts.relay);
      const text = await res.body.text();
      const parsed = parseMessages(text);
      const answer = parsed.find((m) => isResponse(m) && m.id === req.id) as Response | undefined;
      if (!answer)
        throw new TargetError(this.target, `answered ${res.statusCode} without a JSON-RPC response`);
      return answer;
    } catch (err) {
      if (d.timedOut())
        throw new TargetError(this.target, `no answer within ${opts.timeoutMs} ms`, { timeout: true });
      throw err instanceof TargetError
        ? err
        : new TargetError(this.target, (err as Error).message, { cause: err });
    } finally {
      d.done();
    }
  }

  async #failed(res: Dispatcher.ResponseData, req: Request): Promise<Response> {
    const text = await res.body.text().catch(() => '');
    if (res.statusCode === 404 && this.sessionId)
      throw new TargetError(this.target, 'the upstream session is gone (HTTP 404)', { sessionGone: true });
    // A JSON-RPC error in the body is the target's answer to the request.
    const m = parseMessages(text).find(isResponse);
    if (m?.error) return { jsonrpc: '2.0', id: req.id, error: m.error };
    throw new TargetError(this.target, `HTTP ${res.statusCode}${text ? `: ${text.slice(0, 200)}` : ''}`);
  }

  async #fromStream(
    body: Dispatcher.ResponseData['body'],
    req: Request,
    relay: Relay | undefined,
  ): Promise<Response> {
    const parser = new SseParser();
    body.setEncoding('utf8');
    for await (const chunk of body) {
      for (const e of parser.push(chunk as string)) {
        for (const m of parseMessages(e.data)) {
          if (isResponse(m) && m.id === req.id) {
            // The rest of the stream is only its end. Destroyed without a reason, undici would make
            // an error with a stack trace (about 45 µs) for every answer.
            body.destroy(ANSWERED);
            return m;
          }
          relay?.(m);
        }
      }
    }
    throw new TargetError(this.target, 'the answer stream ended before the response');
  }

  async send(m: Notification | Response): Promise<void> {
    const d = deadline(undefined, this.#spec.timeoutMs);
    try {
      const res = await this.#call(
        'POST',
        JSON.stringify(m),
        'application/json, text/event-stream',
        d.signal,
      );
      const text = await res.body.text().catch(() => '');
      if (res.statusCode === 404 && this.sessionId)
        throw new TargetError(this.target, 'the upstream session is gone (HTTP 404)', { sessionGone: true });
      if (res.statusCode >= 400)
        throw new TargetError(this.target, `HTTP ${res.statusCode}: ${text.slice(0, 200)}`);
    } finally {
      d.done();
    }
  }

  async listen(relay: Relay, signal: AbortSignal): Promise<void> {
    let res: Dispatcher.ResponseData;
    try {
      res = await this.#call('GET', null, 'text/event-stream', signal);
    } catch (err) {
      if (signal.aborted) return;
      throw err;
    }
    // 405: the target offers no stream of its own; nothing to relay.
    if (
      res.statusCode !== 200 ||
      !String(res.headers['content-type'] ?? '').startsWith('text/event-stream')
    ) {
      await res.body.text().catch(() => '');
      if (res.statusCode === 405) return;
      throw new TargetError(this.target, `GET stream refused with HTTP ${res.statusCode}`);
    }
    const parser = new SseParser();
    res.body.setEncoding('utf8');
    try {
      for await (const chunk of res.body)
        for (const e of parser.push(chunk as string)) for (const m of parseMessages(e.data)) relay(m);
    } catch (err) {
      if (!signal.aborted) throw new TargetError(this.target, `GET stream failed: ${(err as Error).message}`);
    }
  }

  async close(): Promise<void> {
    if (!this.sessionId) return;
    const d = deadline(undefined, this.#spec.timeoutMs || 5000);
    try {
      const res = await this.#call('DELETE', null, 'application/json', d.signal);
      await res.body.text().catch(() => '');
    } catch {
      // the session ends either way
    } finally {
      d.done();
    }
  }
}

/** The messages of a body: one message or a batch; what is not JSON-RPC is dropped. */
export function parseMessages(text: string): Message[] {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return [];
  }
  const list = Array.isArray(v) ? v : [v];
  return list.map(asMessage).filter((m): m is Message => m !== undefined);
}
