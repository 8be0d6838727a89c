// Gemini and Vertex AI behind the gateway: the official `openai` client → gw → a fake that speaks
// Gemini's generateContent and streamGenerateContent (SSE) at the Gemini API's paths (key in
// x-goog-api-key) and at Vertex AI's (project and region in the path, a bearer access token).
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { FAKE_ANTHROPIC_REPLY, FAKE_ANTHROPIC_STREAM_REPLY } from '@gw/testkit/llm/anthropic';
import {
  FAKE_GEMINI_REPLY,
  FAKE_GEMINI_USAGE,
  type FakeGemini,
  type FakeGeminiAnswer,
  type FakeGeminiRequest,
  startFakeGemini,
} from '@gw/testkit/llm/gemini';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import OpenAI from 'openai';
import { vertexAiProvider } from './providers/vertex-ai/index.ts';

const messages = [{ role: 'user' as const, content: 'Hello!' }];
const tools = [
  {
    type: 'function' as const,
    function: {
      name: 'get_current_weather',
      description: 'Get the current weather in a given location',
      parameters: {
        type: 'object',
        properties: { location: { type: 'string' } },
        required: ['location'],
        additionalProperties: false,
      },
    },
  },
];

let fake: FakeGemini;
/** A GCE metadata server: where Application Default Credentials find a token on Google Cloud. */
let metadata: http.Server;
const metadataSeen: string[] = [];
const saved = { ...process.env };
let proxy: TestProxy;
let client: OpenAI;
let answer: ((r: FakeGeminiRequest) => FakeGeminiAnswer | undefined) | undefined;
const last = () => fake.seen[fake.seen.length - 1] as FakeGeminiRequest;
const settle = () => new Promise((done) => setTimeout(done, 20));

before(async () => {
  metadata = http.createServer((req, res) => {
    metadataSeen.push(req.url ?? '');
    if (req.headers['metadata-flavor'] !== 'Google') {
      res.writeHead(403).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', 'metadata-flavor': 'Google' });
    res.end(JSON.stringify({ access_token: 'ya29.vertex-token', expires_in: 3599, token_type: 'Bearer' }));
  });
  await new Promise<void>((done) => metadata.listen(0, '127.0.0.1', done));
  delete process.env.GOOGLE_APPLICATION_CREDENTIALS;
  process.env.GCE_METADATA_HOST = `127.0.0.1:${(metadata.address() as AddressInfo).port}`;
  process.env.METADATA_SERVER_DETECTION = 'assume-present';
  fake = await startFakeGemini({
    apiKey: 'gemini-key',
    accessToken: 'ya29.vertex-token',
    answer: (r) => answer?.(r),
  });
  proxy = await startProxy(`config:
  adminAddr: "off"
llm:
  port: 0
  models:
  - name: gemini-2.5-flash
    provider: gemini
    params: {apiKey: gemini-key, hostOverride: "127.0.0.1:${fake.port}"}
  - name: gemini-keyless
    provider: gemini
    params: {model: gemini-2.5-flash, hostOverride: "127.0.0.1:${fake.port}"}
  - name: vertex-flash
    provider: vertex
    params:
      model: gemini-2.5-flash
      apiKey: ya29.vertex-token
      vertexProject: my-project
      vertexRegion: us-central1
      hostOverride: "127.0.0.1:${fake.port}"
  - name: vertex-claude
    provider: vertex
    params:
      model: claude-sonnet-4-5@20250929
      apiKey: ya29.vertex-token
      vertexProject: my-project
      vertexRegion: us-east5
      hostOverride: "127.0.0.1:${fake.port}"
  - name: vertex-adc
    provider: vertex
    params:
      model: gemini-2.5-flash
      vertexProject: my-project
      hostOverride: "127.0.0.1:${fake.port}"
`);
  client = new OpenAI({ apiKey: 'sk-client', baseURL: proxy.url('/v1'), maxRetries: 0 });
});

after(async () => {
  await proxy.close();
  await fake.close();
  await new Promise((done) => metadata.close(done));
  process.env = saved;
});

describe('openai client → gw → Gemini API', () => {
  test('a chat completion: generateContent with the key header; thinking tokens count as output', async () => {
    const r = await client.chat.completions.create({
      model: 'gemini-2.5-flash',
      messages: [{ role: 'system', content: 'Be brief.' }, ...messages],
      max_completion_tokens: 200,
      temperature: 0.5,
      top_p: 0.9,
      stop: 'END',
    });
    assert.equal(r.choices[0]?.message.content, FAKE_GEMINI_REPLY);
    assert.equal(r.choices[0]?.finish_reason, 'stop');
    assert.equal(r.model, 'gemini-2.5-flash');
    const u = FAKE_GEMINI_USAGE.generate;
    assert.equal(r.usage?.prompt_tokens, u.promptTokenCount);
    assert.equal(r.usage?.completion_tokens, u.candidatesTokenCount + u.thoughtsTokenCount);
    assert.equal(r.usage?.completion_tokens_details?.reasoning_tokens, u.thoughtsTokenCount);
    const seen = last();
    assert.equal(seen.url, '/v1beta/models/gemini-2.5-flash:generateContent');
    assert.equal(seen.headers['x-goog-api-key'], 'gemini-key');
    assert.equal(seen.headers.authorization, undefined);
    assert.deepEqual(seen.json, {
      contents: [{ role: 'user', parts: [{ text: 'Hello!' }] }],
      systemInstruction: { parts: [{ text: 'Be brief.' }] },
      generationConfig: { maxOutputTokens: 200, temperature: 0.5, topP: 0.9, stopSequences: ['END'] },
    });
    await settle();
    const log = proxy.accessLog[proxy.accessLog.length - 1];
    assert.equal(log?.['llm.provider'], 'gemini');
    assert.equal(log?.['llm.inputTokens'], u.promptTokenCount);
    assert.equal(log?.['llm.outputTokens'], u.candidatesTokenCount + u.thoughtsTokenCount);
  });

  test('tools: functionDeclarations out, functionCall back as tool_calls, functionResponse by name', async () => {
    const r = await client.chat.completions.create({
      model: 'gemini-2.5-flash',
      messages,
      tools,
      tool_choice: 'auto',
    });
    const call = r.choices[0]?.message.tool_calls?.[0];
    assert.equal(r.choices[0]?.finish_reason, 'tool_calls');
    assert.equal(call?.type === 'function' && call.function.name, 'get_current_weather');
    assert.deepEqual(call?.type === 'function' && JSON.parse(call.function.arguments), {
      location: 'Boston, MA',
    });
    assert.deepEqual((call as unknown as { extra_content?: unknown }).extra_content, {
      google: { thought_signature: 'CiQB0e2Kb7VwX3bI4gQhdmOvP1ANlM2Z' },
    });
    const u = FAKE_GEMINI_USAGE.tools;
    assert.equal(r.usage?.prompt_tokens_details?.cached_tokens, u.cachedContentTokenCount);
    assert.deepEqual(last().json?.tools, [
      {
        functionDeclarations: [
          {
            name: 'get_current_weather',
            description: 'Get the current weather in a given location',
            parametersJsonSchema: tools[0]?.function.parameters,
          },
        ],
      },
    ]);
    assert.deepEqual(last().json?.toolConfig, { functionCallingConfig: { mode: 'AUTO' } });

    const r2 = await client.chat.completions.create({
      model: 'gemini-2.5-flash',
      tools,
      messages: [
        ...messages,
        { role: 'assistant', content: null, tool_calls: [call as OpenAI.ChatCompletionMessageToolCall] },
        { role: 'tool', tool_call_id: call?.id ?? '', content: '{"temperature": 22}' },
      ],
    });
    assert.equal(r2.choices[0]?.message.content, FAKE_GEMINI_REPLY);
    assert.deepEqual(last().json?.contents, [
      { role: 'user', parts: [{ text: 'Hello!' }] },
      {
        role: 'model',
        parts: [
          {
            functionCall: { name: 'get_current_weather', args: { location: 'Boston, MA' } },
            // Sent back by the client with the call (extra_content), as thinking models need it.
            thoughtSignature: 'CiQB0e2Kb7VwX3bI4gQhdmOvP1ANlM2Z',
          },
        ],
      },
      {
        role: 'user',
        parts: [{ functionResponse: { name: 'get_current_weather', response: { temperature: 22 } } }],
      },
    ]);
  });

  test('streamed: streamGenerateContent?alt=sse becomes chunk SSE, usage when asked, then [DONE]', async () => {
    const stream = await client.chat.completions.create({
      model: 'gemini-2.5-flash',
      messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let finish: string | null | undefined;
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const c of stream) {
      text += c.choices[0]?.delta.content ?? '';
      finish = c.choices[0]?.finish_reason ?? finish;
      if (c.usage) usage = c.usage;
    }
    assert.equal(text, FAKE_GEMINI_REPLY);
    assert.equal(finish, 'stop');
    const u = FAKE_GEMINI_USAGE.stream;
    assert.equal(usage?.prompt_tokens, u.promptTokenCount);
    assert.equal(usage?.completion_tokens, u.candidatesTokenCount + u.thoughtsTokenCount);
    assert.equal(last().url, '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
    await settle();
    assert.equal(
      proxy.accessLog[proxy.accessLog.length - 1]?.['llm.outputTokens'],
      u.candidatesTokenCount + u.thoughtsTokenCount,
    );
  });

  test('a streamed function call arrives whole, finish_reason tool_calls; no usage chunk unless asked', async () => {
    const res = await fetch(proxy.url('/v1/chat/completions'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gemini-2.5-flash', messages, tools, stream: true }),
    });
    const raw = await res.text();
    assert.ok(raw.endsWith('data: [DONE]\n\n'));
    assert.ok(!raw.includes('"usage"'));
    const chunks = raw
      .split('\n\n')
      .filter((e) => e.startsWith('data: {'))
      .map((e) => JSON.parse(e.slice(6)) as OpenAI.ChatCompletionChunk);
    const calls = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    assert.equal(calls[0]?.function?.name, 'get_current_weather');
    assert.deepEqual(JSON.parse(calls[0]?.function?.arguments ?? ''), { location: 'Boston, MA' });
    assert.equal(chunks[chunks.length - 1]?.choices[0]?.finish_reason, 'tool_calls');
  });

  test('a stream that ends without a finishReason was cut: the client gets no [DONE]', async () => {
    answer = () => ({ endAfter: 1 });
    try {
      const res = await fetch(proxy.url('/v1/chat/completions'), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gemini-2.5-flash', messages, stream: true }),
      });
      const raw = await res.text();
      assert.match(raw, /"content":"Hello!"/);
      assert.ok(!raw.includes('[DONE]'));
      assert.ok(!raw.includes('finish_reason":"stop'));
    } finally {
      answer = undefined;
    }
  });

  test("without a configured key, an OpenAI client's Google API key goes in x-goog-api-key", async () => {
    const own = new OpenAI({ apiKey: 'AIzaSyClientOwnKey', baseURL: proxy.url('/v1'), maxRetries: 0 });
    await assert.rejects(
      own.chat.completions.create({ model: 'gemini-keyless', messages }),
      /API key not valid/,
    );
    assert.equal(last().headers['x-goog-api-key'], 'AIzaSyClientOwnKey');
    assert.equal(last().headers.authorization, undefined);
  });

  test("Gemini's errors reach the client in OpenAI's shape, status kept", async () => {
    answer = () => ({ error: 429 });
    try {
      await assert.rejects(
        client.chat.completions.create({ model: 'gemini-2.5-flash', messages }),
        (err: unknown) => {
          assert.ok(err instanceof OpenAI.RateLimitError);
          assert.match(err.message, /exceeded your current quota/);
          return true;
        },
      );
    } finally {
      answer = undefined;
    }
  });
});

describe('openai client → gw → Vertex AI (Gemini and Claude models)', () => {
  test('the project and region path, a bearer token, the same conversion; streamed too', async () => {
    const r = await client.chat.completions.create({ model: 'vertex-flash', messages });
    assert.equal(r.choices[0]?.message.content, FAKE_GEMINI_REPLY);
    const seen = last();
    assert.equal(
      seen.url,
      '/v1/projects/my-project/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent',
    );
    assert.equal(seen.headers.authorization, 'Bearer ya29.vertex-token');
    assert.equal(seen.headers['x-goog-api-key'], undefined);

    const stream = await client.chat.completions.create({ model: 'vertex-flash', messages, stream: true });
    let text = '';
    for await (const c of stream) text += c.choices[0]?.delta.content ?? '';
    assert.equal(text, FAKE_GEMINI_REPLY);
    assert.match(last().url, /:streamGenerateContent\?alt=sse$/);
    await settle();
    assert.equal(proxy.accessLog[proxy.accessLog.length - 1]?.['llm.provider'], 'vertexAI');
  });

  test('without a key: an access token from Application Default Credentials (the metadata server)', async () => {
    const r = await client.chat.completions.create({ model: 'vertex-adc', messages });
    assert.equal(r.choices[0]?.message.content, FAKE_GEMINI_REPLY);
    assert.equal(last().headers.authorization, 'Bearer ya29.vertex-token');
    // The default location is global.
    assert.match(last().url, /^\/v1\/projects\/my-project\/locations\/global\/publishers\/google\//);
    assert.ok(
      metadataSeen.some((u) => u.startsWith('/computeMetadata/v1/instance/service-accounts/default/token')),
    );
    // The token is cached: a second request does not fetch another.
    const fetched = metadataSeen.length;
    await client.chat.completions.create({ model: 'vertex-adc', messages });
    assert.equal(metadataSeen.length, fetched);
  });

  test('Claude on Vertex: publishers/anthropic rawPredict, anthropic_version in the body', async () => {
    const r = await client.chat.completions.create({ model: 'vertex-claude', messages, max_tokens: 100 });
    assert.equal(r.choices[0]?.message.content, FAKE_ANTHROPIC_REPLY);
    const seen = last();
    assert.equal(
      seen.url,
      '/v1/projects/my-project/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict',
    );
    assert.equal(seen.json?.anthropic_version, 'vertex-2023-10-16');
    assert.equal(seen.json?.model, undefined);
    assert.equal(seen.headers.authorization, 'Bearer ya29.vertex-token');

    const stream = await client.chat.completions.create({
      model: 'vertex-claude',
      messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const c of stream) {
      text += c.choices[0]?.delta.content ?? '';
      if (c.usage) usage = c.usage;
    }
    assert.equal(text, FAKE_ANTHROPIC_STREAM_REPLY);
    assert.ok((usage?.completion_tokens ?? 0) > 0);
    assert.match(last().url, /:streamRawPredict$/);
  });

  test('the endpoint: <region>-aiplatform.googleapis.com, or aiplatform.googleapis.com for global', () => {
    const p = (region: string) => ({
      kind: 'vertexAI' as const,
      name: 'vertexAI',
      settings: { project: 'p', region },
    });
    assert.equal(vertexAiProvider.endpoint(p('europe-west4')).host, 'europe-west4-aiplatform.googleapis.com');
    assert.equal(vertexAiProvider.endpoint(p('global')).host, 'aiplatform.googleapis.com');
  });
});
