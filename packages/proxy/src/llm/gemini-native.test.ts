// Google's own client, @google/genai unchanged, through the gateway: Gemini's native generateContent,
// streamGenerateContent (SSE) and countTokens at /v1beta/models/<model>:<method>, served by the
// model entries of the `llm:` block (a Gemini API model, a Vertex AI one) with the gateway's
// credentials, usage counted from usageMetadata; a model that is not Gemini, an unknown model and a
// bad body answer in Google's error shape, which the SDK reads.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ApiError, GoogleGenAI } from '@google/genai';
import { FAKE_GEMINI_USAGE, type FakeGemini, startFakeGemini } from '@gw/testkit/llm/gemini';
import { type FakeOpenAI, startFakeOpenAI } from '@gw/testkit/llm/openai';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';

let fake: FakeGemini;
let openai: FakeOpenAI;
let proxy: TestProxy;
let genai: GoogleGenAI;

before(async () => {
  fake = await startFakeGemini({ apiKey: 'gemini-key', accessToken: 'ya29.vertex-token' });
  openai = await startFakeOpenAI({ name: 'openai', apiKey: 'sk-provider' });
  proxy = await startProxy(`config:
  adminAddr: "off"
llm:
  port: 0
  models:
  - name: gemini-2.5-flash
    provider: gemini
    params: {apiKey: gemini-key, hostOverride: "127.0.0.1:${fake.port}"}
  - name: flash-on-vertex
    provider: vertex
    params:
      model: gemini-2.5-flash
      apiKey: ya29.vertex-token
      vertexProject: my-project
      vertexRegion: us-central1
      hostOverride: "127.0.0.1:${fake.port}"
  - name: gpt-4o-mini
    provider: openai
    params: {apiKey: sk-provider, baseUrl: "${openai.origin}/v1"}
`);
  // the client's own key: the gateway sends its configured one instead
  genai = new GoogleGenAI({ apiKey: 'client-key', httpOptions: { baseUrl: proxy.url('') } });
});

after(async () => {
  await proxy?.close();
  await fake?.close();
  await openai?.close();
});

const lastLog = async () => {
  await new Promise((r) => setTimeout(r, 30));
  return proxy.accessLog.filter((l) => 'http.path' in l).at(-1) ?? {};
};

describe('@google/genai through the gateway', () => {
  test('generateContent: the answer as Gemini sent it, the gateway’s key, usage counted', async () => {
    const r = await genai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'Hello!' });
    assert.equal(r.text, 'Hello! How can I help you today?');
    assert.equal(r.usageMetadata?.promptTokenCount, FAKE_GEMINI_USAGE.generate.promptTokenCount);
    const seen = fake.seen.at(-1);
    assert.equal(seen?.url, '/v1beta/models/gemini-2.5-flash:generateContent');
    assert.equal(seen?.headers['x-goog-api-key'], 'gemini-key');
    assert.deepEqual(seen?.json?.contents, [{ parts: [{ text: 'Hello!' }], role: 'user' }]);
    const log = await lastLog();
    assert.equal(log['llm.provider'], 'gemini');
    assert.equal(log['llm.requestModel'], 'gemini-2.5-flash');
    assert.equal(log['llm.inputTokens'], FAKE_GEMINI_USAGE.generate.promptTokenCount);
  });

  test('generateContentStream: SSE events as they come, usage from the last one', async () => {
    const stream = await genai.models.generateContentStream({ model: 'gemini-2.5-flash', contents: 'Hi' });
    let text = '';
    let events = 0;
    for await (const chunk of stream) {
      events++;
      text += chunk.text ?? '';
    }
    assert.ok(events > 1, String(events));
    assert.ok(text.length > 0);
    assert.equal(fake.seen.at(-1)?.url, '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
    const log = await lastLog();
    assert.equal(log['llm.streaming'], true);
    assert.equal(log['llm.inputTokens'], FAKE_GEMINI_USAGE.stream.promptTokenCount);
  });

  test('a model entry on Vertex AI: the served model’s Vertex path and its access token', async () => {
    const r = await genai.models.generateContent({ model: 'flash-on-vertex', contents: 'Hello!' });
    assert.equal(r.text, 'Hello! How can I help you today?');
    const seen = fake.seen.at(-1);
    assert.equal(
      seen?.url,
      '/v1/projects/my-project/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent',
    );
    assert.equal(seen?.headers.authorization, 'Bearer ya29.vertex-token');
  });

  test('countTokens: the provider’s count, unchanged', async () => {
    const r = await genai.models.countTokens({ model: 'gemini-2.5-flash', contents: 'Hello!' });
    assert.equal(r.totalTokens, 8);
    assert.equal(fake.seen.at(-1)?.url, '/v1beta/models/gemini-2.5-flash:countTokens');
  });

  test('a model served by another API: a 400 in Google’s error shape naming the formats', async () => {
    const before = openai.seen.length;
    const err = await genai.models.generateContent({ model: 'gpt-4o-mini', contents: 'Hi' }).catch((e) => e);
    assert.ok(err instanceof ApiError, String(err));
    assert.equal(err.status, 400);
    assert.match(err.message, /gemini-generate-content/);
    assert.equal(openai.seen.length, before, 'not sent');
  });

  test('an unknown model and a body that is not JSON: Google’s error shape', async () => {
    const err = await genai.models
      .generateContent({ model: 'no-such-model', contents: 'Hi' })
      .catch((e) => e);
    assert.ok(err instanceof ApiError, String(err));
    assert.equal(err.status, 404);
    const r = await fetch(proxy.url('/v1beta/models/gemini-2.5-flash:generateContent'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{not json',
    });
    assert.equal(r.status, 400);
    const body = (await r.json()) as { error: { code: number; status: string; message: string } };
    assert.equal(body.error.code, 400);
    assert.equal(body.error.status, 'INVALID_ARGUMENT');
    assert.match(body.error.message, /not valid JSON/);
    // a stream in Google's JSON-array form (no alt=sse)
    const arr = await fetch(proxy.url('/v1beta/models/gemini-2.5-flash:streamGenerateContent'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'Hi' }] }] }),
    });
    assert.equal(arr.status, 400);
    assert.match(((await arr.json()) as { error: { message: string } }).error.message, /add \?alt=sse/);
  });
});

describe("a route's ai backend", () => {
  let routed: TestProxy;
  before(async () => {
    routed = await startProxy(`config:
  adminAddr: "off"
binds:
- port: 0
  listeners:
  - routes:
    - matches: [{path: {pathPrefix: /google}}]
      backends:
      - ai:
          name: gemini
          provider: {gemini: {model: gemini-2.5-flash}}
          hostOverride: "127.0.0.1:${fake.port}"
          policies:
            backendAuth: {key: gemini-key}
            ai:
              routes:
                ":generateContent": generateContent
                ":streamGenerateContent": generateContent
                ":countTokens": geminiCountTokens
`);
  });
  after(() => routed?.close());

  test('routes name Gemini’s methods; the provider’s model is served whatever the path names', async () => {
    const client = new GoogleGenAI({ apiKey: 'client-key', httpOptions: { baseUrl: routed.url('/google') } });
    const r = await client.models.generateContent({ model: 'any-model', contents: 'Hello!' });
    assert.equal(r.text, 'Hello! How can I help you today?');
    assert.equal(fake.seen.at(-1)?.url, '/v1beta/models/gemini-2.5-flash:generateContent');
    assert.equal(fake.seen.at(-1)?.headers['x-goog-api-key'], 'gemini-key');
    const n = await client.models.countTokens({ model: 'any-model', contents: 'Hello!' });
    assert.equal(n.totalTokens, 8);
  });
});
