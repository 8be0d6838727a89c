// A fake Anthropic Messages API on loopback: messages (JSON, and SSE streams of `event:`/`data:`
// pairs from message_start to message_stop), tool use, the token count and Anthropic's error JSON,
// all built from the wire shapes in ./fixtures/anthropic (see the README there). Like the real API it
// wants `anthropic-version` and `max_tokens`, and it records what it was sent for tests to assert.
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startFakeServer } from './fake-server.ts';
import type { FakeLlmRequest } from './openai.ts';

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'anthropic');
const fixture = (name: string) => readFileSync(join(FIXTURES, name), 'utf8');

type Json = Record<string, unknown>;

/** An answer other than the normal one, for a test to choose per request. */
export type FakeAnthropicAnswer =
  /** Anthropic's error JSON with this status (the fixture's type and message). */
  | { error: number; fixture?: 'authentication' | 'not-found' | 'rate-limit' | 'overloaded' }
  /** An HTML page, as an edge proxy in front of a provider sends. */
  | { html: number }
  /** A stream that stops after `events` events: the connection is destroyed mid-answer. */
  | { cutAfter: number };

export interface FakeAnthropicOptions {
  /** Names the server in `x-fake-provider`. */
  name?: string;
  /** Port on 127.0.0.1 (default 0: any free one). */
  port?: number;
  /** Pause between stream events (default 0). */
  chunkDelayMs?: number;
  /** When set, a request must carry `x-api-key: <key>` (else 401). */
  apiKey?: string;
  /** Per-request choice of an answer other than the normal one. */
  answer?: (req: FakeLlmRequest) => FakeAnthropicAnswer | undefined;
  /** A stream waits for this before it sends its last event (to show the gateway does not wait). */
  beforeLastEvent?: () => Promise<void>;
}

export interface FakeAnthropic {
  port: number;
  origin: string;
  name: string;
  /** Requests received, oldest first. */
  seen: FakeLlmRequest[];
  /** performance.now() when the last event of the latest stream was written. */
  lastEventAt: number | undefined;
  close(): Promise<void>;
}

/** The usage of the fixtures' answers, as Anthropic reports it (input_tokens without the cache). */
export const FAKE_ANTHROPIC_USAGE = {
  message: { input_tokens: 10, output_tokens: 16 },
  stream: { input_tokens: 25, output_tokens: 15 },
  tools: {
    input_tokens: 384,
    cache_creation_input_tokens: 20,
    cache_read_input_tokens: 1000,
    output_tokens: 58,
  },
  toolsStream: { input_tokens: 472, cache_read_input_tokens: 128, output_tokens: 89 },
  countTokens: { input_tokens: 14 },
} as const;

/** The text of the fixtures' answers (streamed: the deltas joined). */
export const FAKE_ANTHROPIC_REPLY = 'Hi! My name is Claude. How can I help you today?';
export const FAKE_ANTHROPIC_STREAM_REPLY = 'Hello! How can I help you today?';
/** The tool call the tools fixtures make. */
export const FAKE_ANTHROPIC_TOOL = { name: 'get_weather', input: { location: 'San Francisco, CA' } } as const;

export async function startFakeAnthropic(opts: FakeAnthropicOptions = {}): Promise<FakeAnthropic> {
  const name = opts.name ?? 'fake-anthropic';
  const state: { lastEventAt: number | undefined } = { lastEventAt: undefined };
  const fake = await startFakeServer(opts.port, (r, req, res) => serve(r, req, res, opts, name, state));
  const { port, seen } = fake;
  return {
    port,
    origin: `http://127.0.0.1:${port}`,
    name,
    seen,
    get lastEventAt() {
      return state.lastEventAt;
    },
    close: () => fake.close(),
  };
}

function send(res: ServerResponse, status: number, type: string, body: string, name: string): void {
  res.writeHead(status, {
    'content-type': type,
    'content-length': Buffer.byteLength(body),
    'x-fake-provider': name,
    'request-id': `req_${Math.random().toString(16).slice(2, 14)}`,
  });
  res.end(body);
}

function error(res: ServerResponse, status: number, type: string, message: string, name: string): void {
  send(res, status, 'application/json', JSON.stringify({ type: 'error', error: { type, message } }), name);
}

const ERROR_FIXTURES = {
  authentication: 'error-authentication.json',
  'not-found': 'error-not-found.json',
  'rate-limit': 'error-rate-limit.json',
  overloaded: 'error-overloaded.json',
} as const;

async function serve(
  r: FakeLlmRequest,
  req: IncomingMessage,
  res: ServerResponse,
  opts: FakeAnthropicOptions,
  name: string,
  state: { lastEventAt: number | undefined },
): Promise<void> {
  const path = r.url.split('?', 1)[0] ?? '';
  if (opts.apiKey !== undefined && req.headers['x-api-key'] !== opts.apiKey) {
    send(res, 401, 'application/json', fixture(ERROR_FIXTURES.authentication), name);
    return;
  }
  const special = opts.answer?.(r);
  if (special && 'error' in special) {
    const f =
      special.fixture ??
      (special.error === 429 ? 'rate-limit' : special.error >= 500 ? 'overloaded' : 'not-found');
    send(res, special.error, 'application/json', fixture(ERROR_FIXTURES[f]), name);
    return;
  }
  if (special && 'html' in special) {
    send(res, special.html, 'text/html', fixture('html-502.html'), name);
    return;
  }
  const count = path.endsWith('/messages/count_tokens');
  if (req.method !== 'POST' || !(count || path.endsWith('/messages'))) {
    error(res, 404, 'not_found_error', 'Not Found', name);
    return;
  }
  if (req.headers['anthropic-version'] === undefined) {
    error(res, 400, 'invalid_request_error', 'anthropic-version: header is required', name);
    return;
  }
  const body = r.json;
  if (!body) {
    error(res, 400, 'invalid_request_error', 'There was an issue with your request body: invalid JSON', name);
    return;
  }
  if (typeof body.model !== 'string') {
    error(res, 400, 'invalid_request_error', 'model: Field required', name);
    return;
  }
  if (count) {
    send(res, 200, 'application/json', fixture('count-tokens.json'), name);
    return;
  }
  if (typeof body.max_tokens !== 'number') {
    error(res, 400, 'invalid_request_error', 'max_tokens: Field required', name);
    return;
  }
  const model = body.model;
  const tools = Array.isArray(body.tools) && body.tools.length > 0;
  if (body.stream !== true) {
    const answer = JSON.parse(fixture(tools ? 'message-tools.json' : 'message.json')) as Json;
    answer.model = model;
    send(res, 200, 'application/json', JSON.stringify(answer), name);
    return;
  }
  const events = fixture(tools ? 'message-tools-stream.sse' : 'message-stream.sse')
    .split('\n\n')
    .filter((e) => e.trim() !== '')
    .map((e) => `${e.replace(/"model":"[^"]*"/, `"model":${JSON.stringify(model)}`)}\n\n`);
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'x-fake-provider': name,
  });
  res.flushHeaders();
  const cut = special && 'cutAfter' in special ? special.cutAfter : undefined;
  for (let i = 0; i < events.length; i++) {
    if (cut !== undefined && i === cut) {
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
