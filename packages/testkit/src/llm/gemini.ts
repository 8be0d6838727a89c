// A fake Gemini on loopback, for the Gemini API and Vertex AI alike: generateContent (JSON),
// streamGenerateContent?alt=sse (SSE, CRLF-delimited as Google sends it), countTokens and batchEmbedContents at
// /v1beta/models/<model>:… (key in `x-goog-api-key`) and at
// /v1/projects/<project>/locations/<region>/publishers/google/models/<model>:… (a bearer access
// token), answers from ./fixtures/gemini, Google's error JSON. As Vertex AI, it also serves Claude
// at publishers/anthropic/models/<model>:rawPredict and :streamRawPredict (Anthropic's Messages
// format with `anthropic_version` in the body, answers from ./fixtures/anthropic). Records what it
// was sent.
import { readFileSync } from 'node:fs';
import http, { type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'gemini');
const fixture = (name: string) => readFileSync(join(FIXTURES, name), 'utf8');

type Json = Record<string, unknown>;

export interface FakeGeminiRequest {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  json: Json | undefined;
  /** `gemini` (/v1beta/models/…), `vertex` (publishers/google) or `vertex-anthropic`; the model in the path. */
  api?: 'gemini' | 'vertex' | 'vertex-anthropic';
  model?: string;
}

export type FakeGeminiAnswer =
  | { error: 400 | 429 }
  /** An edge proxy's HTML page with this status, as when the service is unreachable. */
  | { html: number }
  /** The fixture's answer with another of Gemini's finishReason values on its last candidate. */
  | { finishReason: string }
  /** A stream that ends cleanly after this many events, before the one with finishReason. */
  | { endAfter: number };

export interface FakeGeminiOptions {
  /** Required in `x-goog-api-key` on Gemini API paths. */
  apiKey?: string;
  /** Required as `Authorization: Bearer <token>` on Vertex paths. */
  accessToken?: string;
  chunkDelayMs?: number;
  /** Awaited before the last event of a stream is written (tests hold the stream open with it). */
  beforeLastEvent?: () => Promise<void>;
  answer?: (req: FakeGeminiRequest) => FakeGeminiAnswer | undefined;
}

export interface FakeGemini {
  port: number;
  origin: string;
  seen: FakeGeminiRequest[];
  /** When the last event of the latest stream was written (performance.now()). */
  lastEventAt: number | undefined;
  close(): Promise<void>;
}

export const FAKE_GEMINI_REPLY = 'Hello! How can I help you today?';
/** The fixtures' usageMetadata, for assertions. */
export const FAKE_GEMINI_USAGE = {
  generate: { promptTokenCount: 8, candidatesTokenCount: 9, thoughtsTokenCount: 18 },
  tools: {
    promptTokenCount: 1100,
    candidatesTokenCount: 17,
    thoughtsTokenCount: 70,
    cachedContentTokenCount: 1024,
  },
  stream: { promptTokenCount: 6, candidatesTokenCount: 9, thoughtsTokenCount: 12 },
  thoughts: { promptTokenCount: 8, candidatesTokenCount: 9, thoughtsTokenCount: 41 },
} as const;
/** The thought summary and signature of the thoughts fixtures (served when includeThoughts is set). */
export const FAKE_GEMINI_THOUGHT = {
  text: '**Responding to a greeting**\n\nThe user said hello. A short, friendly reply is enough.',
  signature: 'CiIBVKhc7oP2yJ3mXo1Fq0kEwTQ7vB9h0dZbQm5Yk3Xq',
} as const;

const PATH =
  /^(?:\/v1beta\/models\/([^/:]+)|\/v1\/projects\/[^/]+\/locations\/[^/]+\/publishers\/google\/models\/([^/:]+)):(generateContent|streamGenerateContent|batchEmbedContents|countTokens)$/;

export async function startFakeGemini(opts: FakeGeminiOptions = {}): Promise<FakeGemini> {
  const seen: FakeGeminiRequest[] = [];
  const state: StreamState = { lastEventAt: undefined };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let json: Json | undefined;
      try {
        json = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Json;
      } catch {}
      const r: FakeGeminiRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        json,
      };
      seen.push(r);
      serve(r, res, opts, state).catch(() => res.destroy());
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    origin: `http://127.0.0.1:${port}`,
    seen,
    get lastEventAt() {
      return state.lastEventAt;
    },
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}

function send(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, {
    'content-type': 'application/json; charset=UTF-8',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

function googleError(code: number, status: string, message: string): string {
  return JSON.stringify({ error: { code, message, status } });
}

const ANTHROPIC_PATH =
  /^\/v1\/projects\/[^/]+\/locations\/[^/]+\/publishers\/anthropic\/models\/([^/:]+):(rawPredict|streamRawPredict)$/;
const anthropicFixture = (name: string) => readFileSync(join(FIXTURES, '..', 'anthropic', name), 'utf8');

interface StreamState {
  lastEventAt: number | undefined;
}

async function serve(
  r: FakeGeminiRequest,
  res: ServerResponse,
  opts: FakeGeminiOptions,
  state: StreamState,
): Promise<void> {
  const [path, query = ''] = r.url.split('?', 2) as [string, string?];
  const claude = ANTHROPIC_PATH.exec(decodeURIComponent(path));
  if (claude && r.method === 'POST') {
    await serveClaude(r, res, opts, claude[1] as string, claude[2] === 'streamRawPredict');
    return;
  }
  const m = PATH.exec(decodeURIComponent(path));
  if (r.method !== 'POST' || !m) {
    send(res, 404, googleError(404, 'NOT_FOUND', `no method at ${path}`));
    return;
  }
  r.api = m[1] !== undefined ? 'gemini' : 'vertex';
  const model = m[1] ?? m[2];
  if (model !== undefined) r.model = model;
  if (r.api === 'gemini' && opts.apiKey !== undefined && r.headers['x-goog-api-key'] !== opts.apiKey) {
    send(res, 400, fixture('error-api-key.json'));
    return;
  }
  if (
    r.api === 'vertex' &&
    opts.accessToken !== undefined &&
    r.headers.authorization !== `Bearer ${opts.accessToken}`
  ) {
    send(
      res,
      401,
      googleError(
        401,
        'UNAUTHENTICATED',
        'Request had invalid authentication credentials. Expected OAuth 2 access token.',
      ),
    );
    return;
  }
  const special = opts.answer?.(r);
  if (special && 'html' in special) {
    const page = readFileSync(join(FIXTURES, '..', 'openai', 'html-502.html'));
    res.writeHead(special.html, { 'content-type': 'text/html', 'content-length': page.length });
    res.end(page);
    return;
  }
  if (special && 'error' in special) {
    send(
      res,
      special.error,
      fixture(special.error === 429 ? 'error-resource-exhausted.json' : 'error-invalid-argument.json'),
    );
    return;
  }
  if (m[3] === 'countTokens') {
    // contents, or a whole generateContentRequest (its contents then)
    const req = (r.json?.generateContentRequest as Json | undefined) ?? r.json;
    if (!req || !Array.isArray(req.contents) || req.contents.length === 0) {
      send(res, 400, fixture('error-invalid-argument.json'));
      return;
    }
    send(res, 200, fixture('count-tokens.json'));
    return;
  }
  if (m[3] === 'batchEmbedContents') {
    const requests = r.json?.requests;
    if (!Array.isArray(requests) || requests.length === 0) {
      send(res, 400, fixture('error-invalid-argument.json'));
      return;
    }
    send(res, 200, JSON.stringify({ embeddings: fakeGeminiEmbeddings(requests as Json[]) }));
    return;
  }
  if (!r.json || !Array.isArray(r.json.contents) || r.json.contents.length === 0) {
    send(res, 400, fixture('error-invalid-argument.json'));
    return;
  }
  const tools = wantsFunctionCall(r.json);
  const thoughts = !tools && wantsThoughts(r.json);
  const finish = special && 'finishReason' in special ? special.finishReason : undefined;
  const finished = (e: Json) => {
    const cand = (e.candidates as Json[] | undefined)?.[0];
    return finish === undefined || !cand?.finishReason
      ? e
      : { ...e, candidates: [{ ...cand, finishReason: finish }] };
  };
  if (m[3] === 'generateContent') {
    const name = tools
      ? 'generate-content-tools'
      : thoughts
        ? 'generate-content-thoughts'
        : 'generate-content';
    send(res, 200, JSON.stringify(finished(JSON.parse(fixture(`${name}.json`)) as Json)));
    return;
  }
  if (!new URLSearchParams(query).has('alt', 'sse')) {
    // Without alt=sse Google streams a JSON array; the gateway always asks for SSE.
    send(res, 400, googleError(400, 'INVALID_ARGUMENT', 'this fake streams SSE only (alt=sse)'));
    return;
  }
  const name = tools
    ? 'stream-generate-content-tools'
    : thoughts
      ? 'stream-generate-content-thoughts'
      : 'stream-generate-content';
  const events = JSON.parse(fixture(`${name}.json`)) as Json[];
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const stop = special && 'endAfter' in special ? special.endAfter : events.length;
  for (const [i, e] of events.slice(0, stop).entries()) {
    const lastOne = i === events.length - 1;
    if (lastOne && opts.beforeLastEvent) await opts.beforeLastEvent();
    if (lastOne) state.lastEventAt = performance.now();
    res.write(`data: ${JSON.stringify(finished(e))}\r\n\r\n`);
    await new Promise<void>((done) =>
      opts.chunkDelayMs ? setTimeout(done, opts.chunkDelayMs) : setImmediate(done),
    );
  }
  res.end();
}

/** Thought summaries asked for (generationConfig.thinkingConfig.includeThoughts). */
function wantsThoughts(body: Json): boolean {
  const gen = body.generationConfig as { thinkingConfig?: { includeThoughts?: boolean } } | undefined;
  return gen?.thinkingConfig?.includeThoughts === true;
}

/** Functions declared and no functionResponse yet: the fixtures' answer is a function call. */
function wantsFunctionCall(body: Json): boolean {
  if (!Array.isArray(body.tools)) return false;
  const contents = body.contents as { parts?: Json[] }[];
  return !contents.some((c) => c.parts?.some((p) => p.functionResponse !== undefined));
}

/** Claude on Vertex AI: the Messages API without `model` in the body, `anthropic_version` in it. */
async function serveClaude(
  r: FakeGeminiRequest,
  res: ServerResponse,
  opts: FakeGeminiOptions,
  model: string,
  stream: boolean,
): Promise<void> {
  r.api = 'vertex-anthropic';
  r.model = model;
  if (opts.accessToken !== undefined && r.headers.authorization !== `Bearer ${opts.accessToken}`) {
    send(res, 401, googleError(401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials.'));
    return;
  }
  const body = r.json;
  const bad = (message: string) =>
    send(res, 400, JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message } }));
  if (!body) return bad('invalid JSON');
  if (body.anthropic_version !== 'vertex-2023-10-16') return bad('anthropic_version: Field required');
  if (body.model !== undefined) return bad('model: Extra inputs are not permitted');
  if (body.stream === true && !stream) return bad('stream: use streamRawPredict');
  if (!stream) {
    const answer = JSON.parse(anthropicFixture('message.json')) as Json;
    answer.model = model;
    send(res, 200, JSON.stringify(answer));
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  for (const e of anthropicFixture('message-stream.sse').split('\n\n')) {
    if (e.trim() === '') continue;
    res.write(`${e.replace(/"model":"[^"]*"/, `"model":${JSON.stringify(model)}`)}\n\n`);
    await new Promise<void>((done) => setImmediate(done));
  }
  res.end();
}

/**
 * The embeddings the fake answers `requests` with: the fixture's vector shifted by the request's
 * index, cut to its outputDimensionality.
 */
export function fakeGeminiEmbeddings(requests: Json[]): { values: number[] }[] {
  const fixed = (JSON.parse(fixture('batch-embed-contents.json')) as { embeddings: { values: number[] }[] })
    .embeddings[0]?.values as number[];
  return requests.map((req, index) => {
    const dims = typeof req.outputDimensionality === 'number' ? req.outputDimensionality : fixed.length;
    return { values: fixed.slice(0, dims).map((v) => v + index / 100) };
  });
}
