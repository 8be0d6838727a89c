// A target on the legacy SSE transport (protocol 2024-11-05): a GET opens the stream, whose first
// `endpoint` event names where to POST messages; every answer comes back on the stream.
import type { Dispatcher } from 'undici';
import type { Message } from '../jsonrpc.ts';
import { SseParser } from '../sse.ts';
import { StreamConnection } from './stream.ts';
import { parseMessages } from './streamable-http.ts';

export interface LegacySseSpec {
  name: string;
  origin: string;
  path: string;
  dispatcher: Dispatcher;
}

export class LegacySseConnection extends StreamConnection {
  readonly #spec: LegacySseSpec;
  #endpoint: string | undefined;
  #abort: AbortController | undefined;

  constructor(spec: LegacySseSpec, initParams: Record<string, unknown>, initTimeoutMs: number) {
    super(spec.name, initParams, initTimeoutMs);
    this.#spec = spec;
  }

  protected describe(): string {
    return `${this.target} (sse: ${this.#spec.origin}${this.#spec.path})`;
  }

  protected async open(): Promise<void> {
    const spec = this.#spec;
    const ac = new AbortController();
    this.#abort = ac;
    this.#endpoint = undefined;
    const res = await spec.dispatcher.request({
      path: spec.path,
      method: 'GET',
      headers: { accept: 'text/event-stream', host: new URL(spec.origin).host },
      signal: ac.signal,
    });
    if (res.statusCode !== 200) {
      await res.body.text().catch(() => '');
      throw new Error(`GET ${spec.path} answered HTTP ${res.statusCode}`);
    }
    const parser = new SseParser();
    res.body.setEncoding('utf8');
    await new Promise<void>((resolve, reject) => {
      let gotEndpoint = false;
      res.body.on('data', (chunk: string) => {
        for (const e of parser.push(chunk)) {
          if (e.event === 'endpoint') {
            const u = new URL(e.data.trim(), `${spec.origin}${spec.path}`);
            this.#endpoint = u.pathname + u.search;
            if (!gotEndpoint) {
              gotEndpoint = true;
              resolve();
            }
          } else if (e.event === 'message') for (const m of parseMessages(e.data)) this.deliver(m);
        }
      });
      const ended = (why: string) => {
        if (!gotEndpoint) reject(new Error(why));
        else if (!ac.signal.aborted) this.lost(why);
      };
      res.body.on('end', () => ended('the SSE stream ended'));
      res.body.on('error', (err) => ended(`the SSE stream failed: ${err.message}`));
    });
  }

  protected async write(m: Message): Promise<void> {
    const path = this.#endpoint;
    if (!path) throw new Error('no message endpoint yet');
    const res: Dispatcher.ResponseData = await this.#spec.dispatcher.request({
      path,
      method: 'POST',
      headers: { 'content-type': 'application/json', host: new URL(this.#spec.origin).host },
      body: JSON.stringify(m),
    });
    const text = await res.body.text().catch(() => '');
    if (res.statusCode >= 400)
      throw new Error(`POST ${path} answered HTTP ${res.statusCode}: ${text.slice(0, 200)}`);
  }

  protected async shut(): Promise<void> {
    this.#abort?.abort();
    this.#abort = undefined;
  }
}
