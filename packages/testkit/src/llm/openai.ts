// A fake OpenAI-compatible provider on loopback: chat completions (JSON, and SSE streams ending in
// `data: [DONE]`), tool calls, Responses (JSON, and SSE with typed `event:` lines), embeddings
// (floats or base64), the model list and OpenAI's error JSON, all built from the recorded wire
// shapes in ./fixtures/openai (see the README there). A request with OpenAI's inline `moderation`
// parameter gets moderation results in its answer (a stream: one moderation chunk before [DONE]), each
// result the recorded moderation example's, unflagged. It answers at any path ending in
// /chat/completions, /responses, /embeddings or /models, so it stands in for Azure OpenAI and
// Mistral too, and records what it was sent (path, headers, body) for tests to assert.
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type FakeLlmRequest, startFakeServer } from './fake-server.ts';

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'openai');
const fixture = (name: string) => readFileSync(join(FIXTURES, name), 'utf8');

type Json = Record<string, unknown>;

export type { FakeLlmRequest } from './fake-server.ts';

/** An answer other than the normal one, for a test to choose per request. */
export type FakeAnswer =
  /** OpenAI's error JSON with this status (the fixture's message). */
  | { error: number; fixture?: 'invalid-api-key' | 'rate-limit' | 'model-not-found' }
  /** An HTML page, as an edge proxy in front of a provider sends. */
  | { html: number }
  /** A stream that stops after `events` events: the connection is destroyed mid-answer. */
  | { cutAfter: number }
  /** A chat stream whose text is these deltas, one event each (the fixture's other events kept). */
  | { deltas: string[] };

export interface FakeOpenAIOptions {
  /** Names the server in `x-fake-provider`, for tests with several. */
  name?: string;
  /** Port on `host` (default 0: any free one). */
  port?: number;
  /** The loopback address to listen on (default 127.0.0.1; any of 127.0.0.0/8 on Linux). */
  host?: string;
  /** Pause between stream events (default 0). */
  chunkDelayMs?: number;
  /** When set, a request must carry `Authorization: Bearer <key>` or `api-key: <key>` (else 401). */
  apiKey?: string;
  /** Per-request choice of an answer other than the normal one. */
  answer?: (req: FakeLlmRequest) => FakeAnswer | undefined;
  /** A stream waits for this before it sends its last event (to show the gateway does not wait). */
  beforeLastEvent?: () => Promise<void>;
  /**
   * When set, `GET /health` answers this status with an empty body, as the health endpoint of a
   * self-hosted OpenAI-compatible server (vLLM's) does; it needs no key.
   */
  health?: () => number;
}

export interface FakeOpenAI {
  port: number;
  origin: string;
  name: string;
  /** Requests received, oldest first. */
  seen: FakeLlmRequest[];
  /** performance.now() when the last event of the latest stream was written. */
  lastEventAt: number | undefined;
  /** Answers whose connection closed before they were complete (a client that went away). */
  readonly closedEarly: number;
  close(): Promise<void>;
}

/** The usage of the fixtures' answers, for assertions. */
export const FAKE_USAGE = {
  chat: { prompt_tokens: 19, completion_tokens: 10 },
  stream: { prompt_tokens: 9, completion_tokens: 12, reasoning_tokens: 4 },
  tools: { prompt_tokens: 82, completion_tokens: 17, cached_tokens: 64 },
  embeddings: { prompt_tokens: 8, total_tokens: 8 },
  response: { input_tokens: 36, output_tokens: 10, cached_tokens: 32 },
  responseStream: { input_tokens: 37, output_tokens: 11, reasoning_tokens: 2 },
} as const;

/** The text the fixtures' chat answers carry (streamed: the deltas joined). */
export const FAKE_REPLY = 'Hello! How can I assist you today?';
export const FAKE_STREAM_REPLY = 'Hello! How can I help you today?';

interface FakeState {
  lastEventAt: number | undefined;
  closedEarly: number;
}

export async function startFakeOpenAI(opts: FakeOpenAIOptions = {}): Promise<FakeOpenAI> {
  const name = opts.name ?? 'fake-openai';
  const state: FakeState = { lastEventAt: undefined, closedEarly: 0 };
  const host = opts.host ?? '127.0.0.1';
  const fake = await startFakeServer(opts.port, (r, req, res) => serve(r, req, res, opts, name, state), host);
  const { port, seen } = fake;
  return {
    port,
    origin: `http://${host}:${port}`,
    name,
    seen,
    get lastEventAt() {
      return state.lastEventAt;
    },
    get closedEarly() {
      return state.closedEarly;
    },
    close: () => fake.close(),
  };
}

function send(res: ServerResponse, status: number, type: string, body: string, name: string): void {
  res.writeHead(status, {
    'content-type': type,
    'content-length': Buffer.byteLength(body),
    'x-fake-provider': name,
    'x-request-id': `req_${Math.random().toString(16).slice(2, 14)}`,
  });
  res.end(body);
}

const ERROR_FIXTURES = {
  'invalid-api-key': 'error-invalid-api-key.json',
  'rate-limit': 'error-rate-limit.json',
  'model-not-found': 'error-model-not-found.json',
} as const;

function authorized(req: IncomingMessage, key: string | undefined): boolean {
  if (key === undefined) return true;
  return req.headers.authorization === `Bearer ${key}` || req.headers['api-key'] === key;
}

async function serve(
  r: FakeLlmRequest,
  req: IncomingMessage,
  res: ServerResponse,
  opts: FakeOpenAIOptions,
  name: string,
  state: FakeState,
): Promise<void> {
  const path = r.url.split('?', 1)[0] ?? '';
  if (opts.health && req.method === 'GET' && path === '/health') {
    send(res, opts.health(), 'text/plain', '', name);
    return;
  }
  if (!authorized(req, opts.apiKey)) {
    send(res, 401, 'application/json', fixture(ERROR_FIXTURES['invalid-api-key']), name);
    return;
  }
  const special = opts.answer?.(r);
  if (special && 'error' in special) {
    const f = ERROR_FIXTURES[special.fixture ?? (special.error === 429 ? 'rate-limit' : 'model-not-found')];
    send(res, special.error, 'application/json', fixture(f), name);
    return;
  }
  if (special && 'html' in special) {
    send(res, special.html, 'text/html', fixture('html-502.html'), name);
    return;
  }
  if (req.method === 'GET' && path.endsWith('/models')) {
    send(res, 200, 'application/json', fixture('models.json'), name);
    return;
  }
  const operation = ['/chat/completions', '/responses', '/embeddings'].find((op) => path.endsWith(op));
  if (req.method !== 'POST' || operation === undefined) {
    send(
      res,
      404,
      'application/json',
      JSON.stringify({
        error: {
          message: `Invalid URL (${req.method} ${path})`,
          type: 'invalid_request_error',
          param: null,
          code: null,
        },
      }),
      name,
    );
    return;
  }
  const body = r.json;
  if (!body) {
    send(
      res,
      400,
      'application/json',
      JSON.stringify({
        error: {
          message: 'We could not parse the JSON body of your request.',
          type: 'invalid_request_error',
          param: null,
          code: null,
        },
      }),
      name,
    );
    return;
  }
  // Azure's deployment path names the model; elsewhere the body does.
  const deployment = /\/deployments\/([^/]+)\//.exec(path)?.[1];
  const model =
    typeof body.model === 'string' ? body.model : deployment ? decodeURIComponent(deployment) : 'unknown';
  if (operation === '/embeddings') {
    send(res, 200, 'application/json', JSON.stringify(embeddings(body, model)), name);
    return;
  }
  const moderation = moderationResults(body.moderation);
  if (operation === '/responses') {
    if (body.stream !== true) {
      const answer = JSON.parse(fixture('response.json')) as Json;
      answer.model = model;
      if (moderation) answer.moderation = moderation('moderation_result');
      send(res, 200, 'application/json', JSON.stringify(answer), name);
      return;
    }
    const events = fixture('response-stream.sse')
      .split('\n\n')
      .filter((e) => e !== '')
      .map((e) => {
        const [event, data] = e.split('\n', 2) as [string, string];
        const ev = JSON.parse(data.slice(6)) as Json;
        const response = ev.response as Json | undefined;
        if (response) response.model = model;
        return `${event}\ndata: ${JSON.stringify(ev)}\n\n`;
      });
    await stream(res, events, special, opts, name, state);
    return;
  }
  const tools = Array.isArray(body.tools) && body.tools.length > 0;
  if (body.stream !== true) {
    const answer = JSON.parse(fixture(tools ? 'chat-completion-tools.json' : 'chat-completion.json')) as Json;
    answer.model = model;
    if (moderation) answer.moderation = moderation('moderation_results');
    send(res, 200, 'application/json', JSON.stringify(answer), name);
    return;
  }
  const includeUsage = (body.stream_options as Json | undefined)?.include_usage === true;
  let raw = fixture(tools ? 'chat-completion-tools-stream.sse' : 'chat-completion-stream.sse')
    .split('\n\n')
    .filter((e) => e !== '');
  if (special && 'deltas' in special) {
    // The fixture's text events give way to one event per delta, in the first one's shape.
    const text = raw.filter((e) => /"delta":\{"content":/.test(e));
    const first = raw.indexOf(text[0] as string);
    const shape = JSON.parse((text[0] as string).slice(6)) as { choices: [{ delta: { content: string } }] };
    const events = special.deltas.map((d) => {
      shape.choices[0].delta.content = d;
      return `data: ${JSON.stringify(shape)}`;
    });
    raw = [...raw.slice(0, first), ...events, ...raw.filter((e) => !text.includes(e)).slice(first)];
  }
  const events = raw
    .filter((e) => includeUsage || !e.includes('"choices":[]'))
    .map((e) => {
      if (e === 'data: [DONE]') return `${e}\n\n`;
      const chunk = JSON.parse(e.slice(6)) as Json;
      chunk.model = model;
      // Without include_usage the API sends no usage field at all.
      if (!includeUsage) delete chunk.usage;
      return `data: ${JSON.stringify(chunk)}\n\n`;
    });
  if (moderation) {
    const first = JSON.parse(raw[0]?.slice(6) ?? '{}') as Json;
    const chunk = {
      id: first.id,
      object: 'chat.completion.chunk',
      created: first.created,
      model,
      choices: [],
      moderation: moderation('moderation_results'),
    };
    events.splice(events.length - 1, 0, `data: ${JSON.stringify(chunk)}\n\n`);
  }
  await stream(res, events, special, opts, name, state);
}

/**
 * The answer's `moderation` for a request's inline moderation parameter (the official SDK's
 * ChatCompletion.Moderation and Response.Moderation): the input and the output each judged once, a
 * result of the recorded moderation example's categories and scores, unflagged. Chat completions
 * wrap results in a `moderation_results` list; the Responses API gives one `moderation_result`.
 */
function moderationResults(
  param: unknown,
): ((shape: 'moderation_results' | 'moderation_result') => Json) | undefined {
  if (typeof param !== 'object' || param === null) return undefined;
  const model =
    typeof (param as Json).model === 'string' ? ((param as Json).model as string) : 'omni-moderation-latest';
  const recorded = (JSON.parse(fixture('moderation.json')) as { results: Json[] }).results[0] as Json;
  const categories = Object.fromEntries(Object.keys(recorded.categories as Json).map((c) => [c, false]));
  const result = { ...recorded, flagged: false, categories, model, type: 'moderation_result' };
  return (shape) => {
    const one =
      shape === 'moderation_result' ? result : { type: 'moderation_results', model, results: [result] };
    return { input: one, output: one };
  };
}

/** Writes SSE events as the real API does, honouring the test's delays, gate and cut. */
async function stream(
  res: ServerResponse,
  events: string[],
  special: FakeAnswer | undefined,
  opts: FakeOpenAIOptions,
  name: string,
  state: FakeState,
): Promise<void> {
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'x-fake-provider': name,
  });
  res.flushHeaders();
  res.on('close', () => {
    if (!res.writableFinished) state.closedEarly++;
  });
  const cut = special && 'cutAfter' in special ? special.cutAfter : undefined;
  for (let i = 0; i < events.length; i++) {
    if (cut !== undefined && i === cut) {
      // A provider that dies mid-answer, a moment after its last event.
      await new Promise((d) => setTimeout(d, 50));
      res.socket?.destroy();
      return;
    }
    if (i === events.length - 1 && opts.beforeLastEvent) await opts.beforeLastEvent();
    else if (i > 0 && opts.chunkDelayMs) await new Promise((d) => setTimeout(d, opts.chunkDelayMs));
    if (res.destroyed) return;
    res.write(events[i]);
    if (i === events.length - 1) state.lastEventAt = performance.now();
  }
  res.end();
}

/**
 * An embedding list of the fixture's shape: one vector per input (the fixture's, shifted by the
 * index so they differ), floats or, with `encoding_format: base64`, little-endian float32 bytes in
 * base64 as the API sends them.
 */
function embeddings(body: Json, model: string): Json {
  const answer = JSON.parse(fixture('embeddings.json')) as Json;
  const vector = ((answer.data as Json[])[0] as Json).embedding as number[];
  const inputs = Array.isArray(body.input) ? body.input : [body.input];
  const base64 = body.encoding_format === 'base64';
  answer.data = inputs.map((_, index) => {
    const values = vector.map((v) => v + index / 100);
    return {
      object: 'embedding',
      index,
      embedding: base64 ? Buffer.from(new Float32Array(values).buffer).toString('base64') : values,
    };
  });
  answer.model = model;
  return answer;
}

/** The vectors the fake's embeddings carry for `n` inputs, as floats. */
export function fakeEmbeddings(n: number): number[][] {
  const vector = (((JSON.parse(fixture('embeddings.json')) as Json).data as Json[])[0] as Json)
    .embedding as number[];
  return Array.from({ length: n }, (_, index) => vector.map((v) => v + index / 100));
}
