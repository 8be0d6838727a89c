// Gemini and Vertex AI behind the gateway: the official `openai` and `@anthropic-ai/sdk` clients →
// gw → a fake that speaks
// Gemini's generateContent and streamGenerateContent (SSE) at the Gemini API's paths (key in
// x-goog-api-key) and at Vertex AI's (project and region in the path, a bearer access token).
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { FAKE_ANTHROPIC_REPLY, FAKE_ANTHROPIC_STREAM_REPLY } from '@gw/testkit/llm/anthropic';
import { ANTHROPIC_TEXT_EVENTS, readAnthropicStream } from '@gw/testkit/llm/anthropic-stream';
import {
  FAKE_GEMINI_REPLY,
  FAKE_GEMINI_THOUGHT,
  FAKE_GEMINI_USAGE,
  type FakeGemini,
  type FakeGeminiAnswer,
  type FakeGeminiRequest,
  startFakeGemini,
} from '@gw/testkit/llm/gemini';
import { firstEventBeforeLast } from '@gw/testkit/llm/stream-timing';
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
let claude: Anthropic;
let beforeLast: (() => Promise<void>) | undefined;
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
    beforeLastEvent: () => beforeLast?.() ?? Promise.resolve(),
  });
  proxy = await startProxy(`config:
  adminAddr: "off"
frontendPolicies:
  accessLog:
    add:
      reasoning: 'llm.reasoningTokens'
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
  claude = new Anthropic({ apiKey: 'sk-ant-client', baseURL: proxy.url(''), maxRetries: 0 });
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

describe('anthropic client → gw → Gemini API and Vertex AI (Gemini models)', () => {
  const hello = [{ role: 'user' as const, content: 'Hello!' }];
  const weather = {
    name: 'get_current_weather',
    description: 'Get the current weather in a given location',
    input_schema: tools[0]?.function.parameters as Anthropic.Tool.InputSchema,
  };
  const logged = async () => {
    await settle();
    return proxy.accessLog[proxy.accessLog.length - 1] ?? {};
  };

  test('a message: systemInstruction and stop sequences; thinking tokens count as output, logged and counted', async () => {
    const m = await claude.messages.create({
      model: 'gemini-2.5-flash',
      max_tokens: 100,
      system: 'Be brief.',
      stop_sequences: ['END'],
      messages: hello,
    });
    assert.deepEqual(m.content, [{ type: 'text', text: FAKE_GEMINI_REPLY }]);
    assert.equal(m.stop_reason, 'end_turn');
    assert.equal(m.model, 'gemini-2.5-flash');
    assert.match(m.id, /^msg_/);
    const u = FAKE_GEMINI_USAGE.generate;
    assert.deepEqual(
      [m.usage.input_tokens, m.usage.output_tokens],
      [u.promptTokenCount, u.candidatesTokenCount + u.thoughtsTokenCount],
    );
    const seen = last();
    assert.equal(seen.url, '/v1beta/models/gemini-2.5-flash:generateContent');
    assert.equal(seen.headers['x-goog-api-key'], 'gemini-key');
    assert.deepEqual(seen.json, {
      contents: [{ role: 'user', parts: [{ text: 'Hello!' }] }],
      systemInstruction: { parts: [{ text: 'Be brief.' }] },
      generationConfig: { maxOutputTokens: 100, stopSequences: ['END'] },
    });
    const log = await logged();
    assert.deepEqual(
      [log['llm.provider'], log['llm.inputTokens'], log['llm.outputTokens'], log.reasoning],
      ['gemini', u.promptTokenCount, u.candidatesTokenCount + u.thoughtsTokenCount, u.thoughtsTokenCount],
    );
    const metrics = await proxy.metrics.registry.metrics();
    assert.match(
      metrics,
      /^gw_llm_tokens_total\{provider="gemini",model="gemini-2.5-flash",kind="output"\} \d+/m,
    );
  });

  test('streamed: Anthropic’s event sequence, not held back, usage in message_delta', async () => {
    const open = () =>
      claude.messages.create({ model: 'gemini-2.5-flash', max_tokens: 100, messages: hello, stream: true });
    const { types, text, stop, usage } = await readAnthropicStream(await open());
    assert.deepEqual(types, ANTHROPIC_TEXT_EVENTS);
    assert.equal(text, FAKE_GEMINI_REPLY);
    assert.equal(stop, 'end_turn');
    const u = FAKE_GEMINI_USAGE.stream;
    assert.deepEqual(
      [usage?.input_tokens, usage?.output_tokens],
      [u.promptTokenCount, u.candidatesTokenCount + u.thoughtsTokenCount],
    );
    assert.match(last().url, /:streamGenerateContent\?alt=sse$/);
    const { firstAt, lastAt } = await firstEventBeforeLast(fake, (gate) => (beforeLast = gate), open);
    assert.ok(firstAt !== undefined && lastAt !== undefined && firstAt < lastAt);
  });

  test('tools: functionDeclarations out, tool_use back with its thought signature, functionResponse by name', async () => {
    const params = {
      model: 'gemini-2.5-flash',
      max_tokens: 300,
      tools: [weather],
      tool_choice: { type: 'tool' as const, name: 'get_current_weather' },
      messages: [{ role: 'user' as const, content: 'Weather in Boston?' }],
    };
    const m = await claude.messages.create(params);
    assert.equal(m.stop_reason, 'tool_use');
    const [sig, use] = m.content;
    assert.deepEqual(sig, { type: 'thinking', thinking: '', signature: 'CiQB0e2Kb7VwX3bI4gQhdmOvP1ANlM2Z' });
    assert.ok(use?.type === 'tool_use');
    assert.match(use.id, /^toolu_/);
    assert.deepEqual([use.name, use.input], ['get_current_weather', { location: 'Boston, MA' }]);
    assert.equal(m.usage.cache_read_input_tokens, FAKE_GEMINI_USAGE.tools.cachedContentTokenCount);
    assert.deepEqual(last().json?.tools, [
      {
        functionDeclarations: [
          {
            name: 'get_current_weather',
            description: weather.description,
            parametersJsonSchema: weather.input_schema,
          },
        ],
      },
    ]);
    assert.deepEqual(last().json?.toolConfig, {
      functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_current_weather'] },
    });

    const s = await claude.messages.stream(params).finalMessage();
    assert.equal(s.stop_reason, 'tool_use');
    const streamed = s.content.find((b) => b.type === 'tool_use');
    assert.deepEqual(streamed?.input, { location: 'Boston, MA' });

    const back = await claude.messages.create({
      ...params,
      tool_choice: { type: 'auto' },
      messages: [
        ...params.messages,
        { role: 'assistant', content: m.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: '{"temp": 22}' }] },
      ],
    });
    assert.deepEqual(back.content, [{ type: 'text', text: FAKE_GEMINI_REPLY }]);
    assert.deepEqual(last().json?.contents, [
      { role: 'user', parts: [{ text: 'Weather in Boston?' }] },
      {
        role: 'model',
        parts: [
          {
            functionCall: { name: 'get_current_weather', args: { location: 'Boston, MA' } },
            thoughtSignature: 'CiQB0e2Kb7VwX3bI4gQhdmOvP1ANlM2Z',
          },
        ],
      },
      {
        role: 'user',
        parts: [{ functionResponse: { name: 'get_current_weather', response: { temp: 22 } } }],
      },
    ]);
  });

  test('an image inline; a finishReason of MAX_TOKENS is max_tokens, whole and streamed', async () => {
    await claude.messages.create({
      model: 'gemini-2.5-flash',
      max_tokens: 50,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image', source: { type: 'base64', media_type: 'image/webp', data: 'UklGRg==' } },
            { type: 'text', text: 'What is this?' },
          ],
        },
      ],
    });
    assert.deepEqual(last().json?.contents, [
      {
        role: 'user',
        parts: [{ inlineData: { mimeType: 'image/webp', data: 'UklGRg==' } }, { text: 'What is this?' }],
      },
    ]);
    answer = () => ({ finishReason: 'MAX_TOKENS' });
    try {
      const params = { model: 'gemini-2.5-flash', max_tokens: 5, messages: hello };
      assert.equal((await claude.messages.create(params)).stop_reason, 'max_tokens');
      assert.equal((await claude.messages.stream(params).finalMessage()).stop_reason, 'max_tokens');
    } finally {
      answer = undefined;
    }
  });

  test('thinking: a budget as thinkingConfig, thought summaries as thinking blocks with their signature', async () => {
    const thinking = { type: 'enabled' as const, budget_tokens: 2048 };
    const params = { model: 'gemini-2.5-flash', max_tokens: 4096, thinking, messages: hello };
    const m = await claude.messages.create(params);
    assert.deepEqual(last().json?.generationConfig, {
      maxOutputTokens: 4096,
      thinkingConfig: { thinkingBudget: 2048, includeThoughts: true },
    });
    assert.deepEqual(m.content, [
      { type: 'thinking', thinking: FAKE_GEMINI_THOUGHT.text, signature: FAKE_GEMINI_THOUGHT.signature },
      { type: 'text', text: FAKE_GEMINI_REPLY },
    ]);
    const stream = claude.messages.stream(params);
    const deltas: string[] = [];
    stream.on('streamEvent', (e) => {
      if (e.type === 'content_block_delta') deltas.push(e.delta.type);
    });
    const s = await stream.finalMessage();
    assert.deepEqual(deltas, ['thinking_delta', 'text_delta', 'signature_delta', 'text_delta']);
    // The signature came with the last text: the client sees it in a thinking block after the first text.
    assert.deepEqual(
      s.content.map((b) => b.type),
      ['thinking', 'text', 'thinking', 'text'],
    );
    assert.equal((await logged()).reasoning, FAKE_GEMINI_USAGE.thoughts.thoughtsTokenCount);
  });

  test('Vertex AI: the project path and bearer token, whole and streamed', async () => {
    const m = await claude.messages.create({ model: 'vertex-flash', max_tokens: 50, messages: hello });
    assert.deepEqual(m.content, [{ type: 'text', text: FAKE_GEMINI_REPLY }]);
    assert.equal(
      last().url,
      '/v1/projects/my-project/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent',
    );
    assert.equal(last().headers.authorization, 'Bearer ya29.vertex-token');
    const { text, types } = await readAnthropicStream(
      await claude.messages.create({ model: 'vertex-flash', max_tokens: 50, messages: hello, stream: true }),
    );
    assert.deepEqual([text, types], [FAKE_GEMINI_REPLY, [...ANTHROPIC_TEXT_EVENTS]]);
    assert.equal((await logged())['llm.provider'], 'vertexAI');
  });

  test('errors in Anthropic’s shape: Gemini’s 429, an HTML page, a stream cut before its finishReason', async () => {
    const create = () =>
      claude.messages.create({ model: 'gemini-2.5-flash', max_tokens: 10, messages: hello });
    const raised = (p: Promise<unknown>) =>
      p.then(
        () => assert.fail('the call succeeded'),
        (e: unknown) => e,
      );
    try {
      answer = () => ({ error: 429 });
      const limited = await raised(create());
      assert.ok(limited instanceof Anthropic.RateLimitError);
      assert.equal((limited.error as { error?: { type?: string } }).error?.type, 'rate_limit_error');
      answer = () => ({ html: 502 });
      const html = await raised(create());
      assert.ok(html instanceof Anthropic.InternalServerError && html.status === 502);
      assert.match(html.message, /provider gemini answered 502 with text\/html, not JSON/);
      answer = () => ({ endAfter: 1 });
      const stream = await claude.messages.create({
        model: 'gemini-2.5-flash',
        max_tokens: 10,
        messages: hello,
        stream: true,
      });
      await assert.rejects(readAnthropicStream(stream), /ended without a finish reason/);
    } finally {
      answer = undefined;
    }
  });
});
