// Amazon Bedrock behind the gateway: the official `openai` and `@anthropic-ai/sdk` clients → gw → a
// fake Bedrock runtime that verifies each request's SigV4 signature and answers in Converse's JSON and
// ConverseStream's binary event stream (@gw/testkit). The official `@aws-sdk/client-bedrock-runtime` is pointed at the same
// fake directly, which shows the fake's signature check, JSON and event-stream framing are what AWS's
// own client sends and expects.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import {
  BedrockRuntimeClient,
  ConverseCommand,
  ConverseStreamCommand,
} from '@aws-sdk/client-bedrock-runtime';
import { ConfigError } from '@gw/api';
import { ANTHROPIC_TEXT_EVENTS, readAnthropicStream } from '@gw/testkit/llm/anthropic-stream';
import {
  FAKE_BEDROCK_REASONING,
  FAKE_BEDROCK_REPLY,
  FAKE_BEDROCK_USAGE,
  type FakeBedrock,
  type FakeBedrockAnswer,
  type FakeBedrockRequest,
  startFakeBedrock,
} from '@gw/testkit/llm/bedrock';
import { firstEventBeforeLast } from '@gw/testkit/llm/stream-timing';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { tempDir } from '@gw/testkit/temp-dir';
import OpenAI from 'openai';
import { loadConfigText } from '../config/load.ts';
import { openaiChatToBedrockConverse } from './formats/openai-chat__bedrock-converse.ts';
import { bedrockProvider } from './providers/bedrock/index.ts';
import type { ProviderRequest } from './providers/types.ts';
import { LlmRequestState } from './state.ts';

const CREDS = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
const MODEL = 'anthropic.claude-3-5-haiku-20241022-v1:0';
const messages = [{ role: 'user' as const, content: 'Hello!' }];
const tools = [
  {
    type: 'function' as const,
    function: {
      name: 'get_current_weather',
      description: 'Get the current weather in a given location',
      parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] },
    },
  },
];

let fake: FakeBedrock;
let proxy: TestProxy;
let client: OpenAI;
let claude: Anthropic;
let beforeLast: (() => Promise<void>) | undefined;
let answer: ((r: FakeBedrockRequest) => FakeBedrockAnswer | undefined) | undefined;
const saved = { ...process.env };
const last = () => fake.seen[fake.seen.length - 1] as FakeBedrockRequest;

before(async () => {
  // The gateway's signer reads these (the SDK's default chain would too).
  process.env.AWS_ACCESS_KEY_ID = CREDS.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY = CREDS.secretAccessKey;
  delete process.env.AWS_SESSION_TOKEN;
  fake = await startFakeBedrock({
    ...CREDS,
    region: 'eu-west-3',
    answer: (r) => answer?.(r),
    beforeLastEvent: () => beforeLast?.() ?? Promise.resolve(),
  });
  proxy = await startProxy(`config:
  adminAddr: "off"
llm:
  port: 0
  models:
  - name: claude
    provider: bedrock
    params: {model: "${MODEL}", awsRegion: eu-west-3, hostOverride: "127.0.0.1:${fake.port}"}
`);
  client = new OpenAI({ apiKey: 'sk-client', baseURL: proxy.url('/v1'), maxRetries: 0 });
  claude = new Anthropic({ apiKey: 'sk-ant-client', baseURL: proxy.url(''), maxRetries: 0 });
});

after(async () => {
  await proxy.close();
  await fake.close();
  process.env = saved;
});

describe('openai client → gw → Bedrock Converse', () => {
  test('a chat completion: SigV4-signed Converse at /model/<id>/converse, usage counted', async () => {
    const r = await client.chat.completions.create({
      model: 'claude',
      messages: [{ role: 'system', content: 'Be brief.' }, ...messages],
      max_tokens: 100,
      temperature: 0.2,
      stop: ['END'],
    });
    assert.equal(r.object, 'chat.completion');
    assert.equal(r.choices[0]?.message.content, FAKE_BEDROCK_REPLY);
    assert.equal(r.choices[0]?.finish_reason, 'stop');
    assert.deepEqual(
      { prompt: r.usage?.prompt_tokens, completion: r.usage?.completion_tokens },
      {
        prompt: FAKE_BEDROCK_USAGE.converse.inputTokens,
        completion: FAKE_BEDROCK_USAGE.converse.outputTokens,
      },
    );
    const seen = last();
    assert.equal(seen.url, `/model/${encodeURIComponent(MODEL)}/converse`);
    assert.deepEqual(seen.sigv4 && { region: seen.sigv4.region, service: seen.sigv4.service }, {
      region: 'eu-west-3',
      service: 'bedrock',
    });
    assert.ok(seen.sigv4?.signedHeaders.includes('host'));
    assert.deepEqual(seen.json, {
      messages: [{ role: 'user', content: [{ text: 'Hello!' }] }],
      system: [{ text: 'Be brief.' }],
      inferenceConfig: { maxTokens: 100, temperature: 0.2, stopSequences: ['END'] },
    });
    assert.equal(seen.headers['x-api-key'], undefined);
    await new Promise((done) => setTimeout(done, 20));
    const log = proxy.accessLog[proxy.accessLog.length - 1];
    assert.equal(log?.['llm.provider'], 'bedrock');
    assert.equal(log?.['llm.inputTokens'], FAKE_BEDROCK_USAGE.converse.inputTokens);
    assert.equal(log?.['llm.outputTokens'], FAKE_BEDROCK_USAGE.converse.outputTokens);
  });

  test('tools: toolConfig out, toolUse back as tool_calls; cache reads count as cached input', async () => {
    const r = await client.chat.completions.create({
      model: 'claude',
      messages,
      tools,
      tool_choice: 'required',
    });
    const call = r.choices[0]?.message.tool_calls?.[0];
    assert.equal(r.choices[0]?.finish_reason, 'tool_calls');
    assert.equal(call?.type === 'function' && call.function.name, 'get_current_weather');
    assert.deepEqual(call?.type === 'function' && JSON.parse(call.function.arguments), {
      location: 'Boston, MA',
      unit: 'celsius',
    });
    const u = FAKE_BEDROCK_USAGE.tools;
    assert.equal(r.usage?.prompt_tokens, u.inputTokens + u.cacheReadInputTokens);
    assert.equal(r.usage?.prompt_tokens_details?.cached_tokens, u.cacheReadInputTokens);
    assert.deepEqual(last().json?.toolConfig, {
      tools: [
        {
          toolSpec: {
            name: 'get_current_weather',
            description: 'Get the current weather in a given location',
            inputSchema: { json: tools[0]?.function.parameters },
          },
        },
      ],
      toolChoice: { any: {} },
    });

    // The tool's result goes back as a toolResult block in a user turn.
    const r2 = await client.chat.completions.create({
      model: 'claude',
      tools,
      messages: [
        ...messages,
        { role: 'assistant', content: null, tool_calls: [call as OpenAI.ChatCompletionMessageToolCall] },
        { role: 'tool', tool_call_id: call?.id ?? '', content: '22°C, sunny' },
      ],
    });
    assert.equal(r2.choices[0]?.message.content, FAKE_BEDROCK_REPLY);
    assert.deepEqual(last().json?.messages, [
      { role: 'user', content: [{ text: 'Hello!' }] },
      {
        role: 'assistant',
        content: [
          {
            toolUse: {
              toolUseId: call?.id,
              name: 'get_current_weather',
              input: { location: 'Boston, MA', unit: 'celsius' },
            },
          },
        ],
      },
      {
        role: 'user',
        content: [{ toolResult: { toolUseId: call?.id, content: [{ text: '22°C, sunny' }] } }],
      },
    ]);
  });

  test('streamed: the binary event stream becomes chat.completion.chunk SSE, usage when asked', async () => {
    const stream = await client.chat.completions.create({
      model: 'claude',
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
    assert.equal(text, FAKE_BEDROCK_REPLY);
    assert.equal(finish, 'stop');
    assert.equal(usage?.prompt_tokens, FAKE_BEDROCK_USAGE.stream.inputTokens);
    assert.equal(usage?.completion_tokens, FAKE_BEDROCK_USAGE.stream.outputTokens);
    assert.equal(last().url, `/model/${encodeURIComponent(MODEL)}/converse-stream`);
    await new Promise((done) => setTimeout(done, 20));
    const log = proxy.accessLog[proxy.accessLog.length - 1];
    assert.equal(log?.['llm.outputTokens'], FAKE_BEDROCK_USAGE.stream.outputTokens);
  });

  test('streamed tool call: arguments arrive in pieces; no usage chunk unless asked, still counted', async () => {
    const res = await fetch(proxy.url('/v1/chat/completions'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude', messages, tools, stream: true }),
    });
    assert.equal(res.headers.get('content-type'), 'text/event-stream');
    const raw = await res.text();
    assert.ok(raw.endsWith('data: [DONE]\n\n'));
    assert.ok(!raw.includes('"usage"'));
    const chunks = raw
      .split('\n\n')
      .filter((e) => e.startsWith('data: {'))
      .map((e) => JSON.parse(e.slice(6)) as OpenAI.ChatCompletionChunk);
    const calls = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    assert.equal(calls[0]?.function?.name, 'get_current_weather');
    assert.equal(calls.map((c) => c.function?.arguments ?? '').join(''), '{"location": "Boston, MA"}');
    assert.equal(chunks[chunks.length - 1]?.choices[0]?.finish_reason, 'tool_calls');
    await new Promise((done) => setTimeout(done, 20));
    const log = proxy.accessLog[proxy.accessLog.length - 1];
    assert.equal(log?.['llm.inputTokens'], FAKE_BEDROCK_USAGE.toolsStream.inputTokens);
  });

  test("Bedrock's errors reach the client in OpenAI's shape, status kept", async () => {
    answer = () => ({ error: 429 });
    try {
      await assert.rejects(client.chat.completions.create({ model: 'claude', messages }), (err: unknown) => {
        assert.ok(err instanceof OpenAI.RateLimitError);
        assert.match(err.message, /Too many requests/);
        return true;
      });
    } finally {
      answer = undefined;
    }
  });

  test('an exception frame mid-stream is an error event for the client, and no [DONE]', async () => {
    answer = () => ({ streamExceptionAfter: 2 });
    try {
      const stream = await client.chat.completions.create({ model: 'claude', messages, stream: true });
      let text = '';
      await assert.rejects(
        (async () => {
          for await (const c of stream) text += c.choices[0]?.delta.content ?? '';
        })(),
        /Too many tokens/,
      );
      assert.equal(text, 'Hello!');
    } finally {
      answer = undefined;
    }
  });

  test("without AWS_* variables: the SDK's default chain (here a shared credentials file) signs", async () => {
    const dir = tempDir('gw-aws-');
    writeFileSync(
      join(dir, 'credentials'),
      `[default]\naws_access_key_id = ${CREDS.accessKeyId}\naws_secret_access_key = ${CREDS.secretAccessKey}\n`,
    );
    delete process.env.AWS_ACCESS_KEY_ID;
    delete process.env.AWS_SECRET_ACCESS_KEY;
    process.env.AWS_SHARED_CREDENTIALS_FILE = join(dir, 'credentials');
    process.env.AWS_CONFIG_FILE = join(dir, 'config');
    try {
      const r = await client.chat.completions.create({ model: 'claude', messages });
      assert.equal(r.choices[0]?.message.content, FAKE_BEDROCK_REPLY);
      assert.equal(last().sigv4?.accessKeyId, CREDS.accessKeyId);
    } finally {
      process.env.AWS_ACCESS_KEY_ID = CREDS.accessKeyId;
      process.env.AWS_SECRET_ACCESS_KEY = CREDS.secretAccessKey;
    }
  });

  test('wrong credentials: the fake refuses the signature, the client hears 403', async () => {
    process.env.AWS_SECRET_ACCESS_KEY = 'not-the-secret';
    try {
      await assert.rejects(client.chat.completions.create({ model: 'claude', messages }), (err: unknown) => {
        assert.ok(err instanceof OpenAI.PermissionDeniedError);
        assert.match(err.message, /signature we calculated does not match/);
        return true;
      });
    } finally {
      process.env.AWS_SECRET_ACCESS_KEY = CREDS.secretAccessKey;
    }
  });
});

describe('anthropic client → gw → Bedrock Converse', () => {
  const weather = {
    name: 'get_current_weather',
    description: 'Get the current weather in a given location',
    input_schema: {
      type: 'object' as const,
      properties: { location: { type: 'string' } },
      required: ['location'],
    },
  };
  const hello = [{ role: 'user' as const, content: 'Hello!' }];
  const logged = async () => {
    await new Promise((done) => setTimeout(done, 20));
    return proxy.accessLog[proxy.accessLog.length - 1] ?? {};
  };
  /** What the SDK raised for a refused call: its error class, the status and Anthropic's error body. */
  async function refusal(call: Promise<unknown>): Promise<[string, number, string, string]> {
    const err = await call.then(
      () => assert.fail('the call succeeded'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof Anthropic.APIError);
    const body = err.error as { type?: string; error?: { type?: string; message?: string } };
    assert.equal(body.type, 'error');
    return [err.constructor.name, err.status ?? 0, body.error?.type ?? '', body.error?.message ?? ''];
  }

  test('a message: system, max_tokens and stop sequences to Converse; the answer, usage logged and counted', async () => {
    const m = await claude.messages.create({
      model: 'claude',
      max_tokens: 100,
      system: 'Be brief.',
      stop_sequences: ['END'],
      messages: hello,
    });
    assert.equal(m.type, 'message');
    assert.equal(m.role, 'assistant');
    assert.match(m.id, /^msg_/);
    assert.equal(m.model, MODEL);
    assert.deepEqual(m.content, [{ type: 'text', text: FAKE_BEDROCK_REPLY }]);
    assert.equal(m.stop_reason, 'end_turn');
    assert.equal(m.usage.input_tokens, FAKE_BEDROCK_USAGE.converse.inputTokens);
    assert.equal(m.usage.output_tokens, FAKE_BEDROCK_USAGE.converse.outputTokens);
    const seen = last();
    assert.equal(seen.url, `/model/${encodeURIComponent(MODEL)}/converse`);
    assert.equal(seen.sigv4?.service, 'bedrock');
    assert.equal(seen.headers['x-api-key'], undefined);
    assert.deepEqual(seen.json, {
      messages: [{ role: 'user', content: [{ text: 'Hello!' }] }],
      system: [{ text: 'Be brief.' }],
      inferenceConfig: { maxTokens: 100, stopSequences: ['END'] },
    });
    const log = await logged();
    assert.equal(log['llm.provider'], 'bedrock');
    assert.deepEqual(
      [log['llm.inputTokens'], log['llm.outputTokens']],
      [FAKE_BEDROCK_USAGE.converse.inputTokens, FAKE_BEDROCK_USAGE.converse.outputTokens],
    );
    const metrics = await proxy.metrics.registry.metrics();
    const input = new RegExp(
      `^gw_llm_tokens_total\\{provider="bedrock",model="${MODEL}",kind="input"\\} (\\d+)`,
      'm',
    );
    assert.ok(Number(input.exec(metrics)?.[1] ?? 0) >= FAKE_BEDROCK_USAGE.converse.inputTokens);
  });

  test('streamed: Anthropic’s event sequence from the event stream, usage in message_delta', async () => {
    const stream = await claude.messages.create({
      model: 'claude',
      max_tokens: 100,
      messages: hello,
      stream: true,
    });
    const { types, text, stop, usage } = await readAnthropicStream(stream);
    assert.deepEqual(types, ANTHROPIC_TEXT_EVENTS);
    assert.equal(text, FAKE_BEDROCK_REPLY);
    assert.equal(stop, 'end_turn');
    assert.equal(usage?.input_tokens, FAKE_BEDROCK_USAGE.stream.inputTokens);
    assert.equal(usage?.output_tokens, FAKE_BEDROCK_USAGE.stream.outputTokens);
    assert.equal(last().url, `/model/${encodeURIComponent(MODEL)}/converse-stream`);
    const log = await logged();
    assert.equal(log['llm.streaming'], true);
    assert.equal(log['llm.outputTokens'], FAKE_BEDROCK_USAGE.stream.outputTokens);
  });

  test('the stream is not held back: the first event arrives before Bedrock sends its last', async () => {
    const { firstAt, lastAt } = await firstEventBeforeLast(
      fake,
      (gate) => (beforeLast = gate),
      () => claude.messages.create({ model: 'claude', max_tokens: 100, messages: hello, stream: true }),
    );
    assert.ok(firstAt !== undefined && lastAt !== undefined);
    assert.ok(firstAt < lastAt, "the first event came before the provider's last");
  });

  test('tools: toolConfig out, tool_use back (streamed and not), tool_result sent as toolResult', async () => {
    const params = {
      model: 'claude',
      max_tokens: 300,
      tools: [weather],
      tool_choice: { type: 'any' as const },
      messages: [{ role: 'user' as const, content: 'Weather in Boston?' }],
    };
    const m = await claude.messages.create(params);
    assert.equal(m.stop_reason, 'tool_use');
    assert.deepEqual(m.content, [
      { type: 'text', text: "I'll look up the weather in Boston." },
      {
        type: 'tool_use',
        id: 'tooluse_kZJMlvQmRJ6eAyJE5GIl7Q',
        name: 'get_current_weather',
        input: { location: 'Boston, MA', unit: 'celsius' },
      },
    ]);
    const u = FAKE_BEDROCK_USAGE.tools;
    assert.equal(m.usage.input_tokens, u.inputTokens);
    assert.equal(m.usage.cache_read_input_tokens, u.cacheReadInputTokens);
    assert.deepEqual(last().json?.toolConfig, {
      tools: [
        {
          toolSpec: {
            name: 'get_current_weather',
            inputSchema: { json: weather.input_schema },
            description: weather.description,
          },
        },
      ],
      toolChoice: { any: {} },
    });
    assert.equal((await logged())['llm.inputTokens'], u.inputTokens + u.cacheReadInputTokens);

    const s = await claude.messages.stream(params).finalMessage();
    assert.equal(s.stop_reason, 'tool_use');
    const streamed = s.content.find((b) => b.type === 'tool_use');
    assert.equal(streamed?.name, 'get_current_weather');
    assert.equal(streamed?.id, 'tooluse_Q1x9a8WvRcmBO5aQbXf2ww');
    assert.deepEqual(streamed?.input, { location: 'Boston, MA' });

    const back = await claude.messages.create({
      model: 'claude',
      max_tokens: 300,
      tools: [weather],
      messages: [
        { role: 'user', content: 'Weather in Boston?' },
        { role: 'assistant', content: m.content },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'tooluse_kZJMlvQmRJ6eAyJE5GIl7Q', content: '22°C, sunny' },
            { type: 'tool_result', tool_use_id: 'tooluse_x', content: 'no such city', is_error: true },
          ],
        },
      ],
    });
    assert.deepEqual(back.content, [{ type: 'text', text: FAKE_BEDROCK_REPLY }]);
    assert.deepEqual(last().json?.messages, [
      { role: 'user', content: [{ text: 'Weather in Boston?' }] },
      {
        role: 'assistant',
        content: [
          { text: "I'll look up the weather in Boston." },
          {
            toolUse: {
              toolUseId: 'tooluse_kZJMlvQmRJ6eAyJE5GIl7Q',
              name: 'get_current_weather',
              input: { location: 'Boston, MA', unit: 'celsius' },
            },
          },
        ],
      },
      {
        role: 'user',
        content: [
          { toolResult: { toolUseId: 'tooluse_kZJMlvQmRJ6eAyJE5GIl7Q', content: [{ text: '22°C, sunny' }] } },
          { toolResult: { toolUseId: 'tooluse_x', content: [{ text: 'no such city' }], status: 'error' } },
        ],
      },
    ]);
  });

  test('an image inline as bytes; an image by URL is a 400 in Anthropic’s shape', async () => {
    await claude.messages.create({
      model: 'claude',
      max_tokens: 50,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is this?' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
          ],
        },
      ],
    });
    assert.deepEqual(last().json?.messages, [
      {
        role: 'user',
        content: [{ text: 'What is this?' }, { image: { format: 'png', source: { bytes: 'iVBORw0KGgo=' } } }],
      },
    ]);
    const before = fake.seen.length;
    const [name, status, type, message] = await refusal(
      claude.messages.create({
        model: 'claude',
        max_tokens: 50,
        messages: [
          {
            role: 'user',
            content: [{ type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } }],
          },
        ],
      }),
    );
    assert.deepEqual([name, status, type], ['BadRequestError', 400, 'invalid_request_error']);
    assert.match(message, /Bedrock takes images inline only/);
    assert.equal(fake.seen.length, before, 'nothing reached Bedrock');
  });

  test('stop reasons: max_tokens and stop_sequence, whole and streamed', async () => {
    for (const stopReason of ['max_tokens', 'stop_sequence'] as const) {
      answer = () => ({ stopReason });
      try {
        const m = await claude.messages.create({ model: 'claude', max_tokens: 5, messages: hello });
        assert.equal(m.stop_reason, stopReason);
        const s = await claude.messages
          .stream({ model: 'claude', max_tokens: 5, messages: hello })
          .finalMessage();
        assert.equal(s.stop_reason, stopReason);
      } finally {
        answer = undefined;
      }
    }
  });

  test('thinking: asked in additionalModelRequestFields, reasoning back as thinking blocks and sent back', async () => {
    const thinking = { type: 'enabled' as const, budget_tokens: 1024 };
    const m = await claude.messages.create({ model: 'claude', max_tokens: 2048, thinking, messages: hello });
    assert.deepEqual(last().json?.additionalModelRequestFields, { thinking });
    assert.deepEqual(m.content, [
      {
        type: 'thinking',
        thinking: FAKE_BEDROCK_REASONING.text,
        signature: FAKE_BEDROCK_REASONING.signature,
      },
      { type: 'text', text: FAKE_BEDROCK_REPLY },
    ]);
    assert.equal(m.usage.output_tokens, FAKE_BEDROCK_USAGE.reasoning.outputTokens);

    const stream = claude.messages.stream({ model: 'claude', max_tokens: 2048, thinking, messages: hello });
    const deltas: string[] = [];
    stream.on('streamEvent', (e) => {
      if (e.type === 'content_block_delta') deltas.push(e.delta.type);
    });
    const s = await stream.finalMessage();
    assert.deepEqual(s.content, m.content);
    assert.deepEqual(deltas, [
      'thinking_delta',
      'thinking_delta',
      'signature_delta',
      'text_delta',
      'text_delta',
    ]);
    assert.equal(s.usage.output_tokens, FAKE_BEDROCK_USAGE.reasoningStream.outputTokens);

    await claude.messages.create({
      model: 'claude',
      max_tokens: 2048,
      thinking,
      messages: [...hello, { role: 'assistant', content: m.content }, { role: 'user', content: 'And?' }],
    });
    assert.deepEqual(last().json?.messages, [
      { role: 'user', content: [{ text: 'Hello!' }] },
      {
        role: 'assistant',
        content: [
          { reasoningContent: { reasoningText: FAKE_BEDROCK_REASONING } },
          { text: FAKE_BEDROCK_REPLY },
        ],
      },
      { role: 'user', content: [{ text: 'And?' }] },
    ]);
  });

  test('errors in Anthropic’s shape: malformed JSON, Bedrock’s 429, an HTML page, an exception mid-stream', async () => {
    // Refused before any pair runs, in the client's shape: nothing reaches Bedrock.
    const before = fake.seen.length;
    const r = await fetch(proxy.url('/v1/messages'), {
      method: 'POST',
      body: '{"model": "claude", "messages": [',
    });
    const refused = (await r.json()) as { type: string; error: { type: string } };
    assert.deepEqual([r.status, refused.type, refused.error.type], [400, 'error', 'invalid_request_error']);
    assert.equal(fake.seen.length, before);

    const create = () => claude.messages.create({ model: 'claude', max_tokens: 10, messages: hello });
    answer = () => ({ error: 429 });
    try {
      assert.deepEqual(await refusal(create()), [
        'RateLimitError',
        429,
        'rate_limit_error',
        'Too many requests, please wait before trying again.',
      ]);
      answer = () => ({ html: 502 });
      const [name, status, type, message] = await refusal(create());
      assert.deepEqual([name, status, type], ['InternalServerError', 502, 'api_error']);
      assert.match(message, /provider bedrock answered 502 with text\/html, not JSON/);
      answer = () => ({ streamExceptionAfter: 2 });
      const stream = await claude.messages.create({
        model: 'claude',
        max_tokens: 10,
        messages: hello,
        stream: true,
      });
      let text = '';
      await assert.rejects(async () => {
        for await (const e of stream)
          if (e.type === 'content_block_delta' && e.delta.type === 'text_delta') text += e.delta.text;
      }, /Too many tokens/);
      assert.equal(text, 'Hello!');
    } finally {
      answer = undefined;
    }
  });
});

describe("a route's ai backend with a Bedrock guardrail", () => {
  let routed: TestProxy;
  before(async () => {
    routed = await startProxy(`config:
  adminAddr: "off"
binds:
- port: 0
  listeners:
  - routes:
    - backends:
      - ai:
          name: guarded
          provider: {bedrock: {model: "${MODEL}", region: eu-west-3, guardrailIdentifier: gr-abc123, guardrailVersion: "2"}}
          hostOverride: "127.0.0.1:${fake.port}"
`);
  });
  after(() => routed.close());

  test('guardrailConfig reaches Bedrock in the signed body, streamed or not', async () => {
    const c = new OpenAI({ apiKey: 'sk-client', baseURL: routed.url('/v1'), maxRetries: 0 });
    const r = await c.chat.completions.create({ model: 'any', messages });
    assert.equal(r.choices[0]?.message.content, FAKE_BEDROCK_REPLY);
    assert.deepEqual(last().json?.guardrailConfig, {
      guardrailIdentifier: 'gr-abc123',
      guardrailVersion: '2',
    });
    const stream = await c.chat.completions.create({ model: 'any', messages, stream: true });
    for await (const _ of stream);
    assert.deepEqual(last().json?.guardrailConfig, {
      guardrailIdentifier: 'gr-abc123',
      guardrailVersion: '2',
      streamProcessingMode: 'async',
    });
  });
});

describe("a route's ai backend with Bedrock requestMetadata", () => {
  let routed: TestProxy;
  before(async () => {
    routed = await startProxy(`config:
  adminAddr: "off"
binds:
- port: 0
  listeners:
  - routes:
    - backends:
      - ai:
          name: attributed
          provider:
            bedrock:
              model: "${MODEL}"
              region: eu-west-3
              requestMetadata:
              - {key: user, expression: 'request.headers["x-user"]'}
              - {key: messages, expression: 'size(llmRequest.messages)'}
              - {key: team, expression: 'request.headers["x-team"]'}
              - {key: environment, value: prod}
          hostOverride: "127.0.0.1:${fake.port}"
`);
  });
  after(() => routed.close());

  test('each key with its value or its expression’s, in the signed Converse body; a missing one left out', async () => {
    const c = new OpenAI({ apiKey: 'sk-client', baseURL: routed.url('/v1'), maxRetries: 0 });
    await c.chat.completions.create({ model: 'any', messages }, { headers: { 'x-user': 'alice' } });
    assert.deepEqual(last().json?.requestMetadata, { user: 'alice', messages: '1', environment: 'prod' });
  });

  test('config errors name the entry', () => {
    const load = (entry: string) =>
      loadConfigText(
        'gw.yaml',
        `binds:\n- port: 8080\n  listeners:\n  - routes:\n    - backends:\n      - ai: {name: b, provider: {bedrock: {region: us-east-1, requestMetadata: [${entry}]}}}\n`,
        process.cwd(),
      );
    assert.throws(
      () => load('{key: k}'),
      (e: unknown) =>
        e instanceof ConfigError && /requestMetadata\[0\]: set value or expression/.test(e.message),
    );
    assert.throws(
      () => load('{key: "bad\\u0001", value: v}'),
      (e: unknown) =>
        e instanceof ConfigError && /requestMetadata\[0\]\.key: a Bedrock metadata key/.test(e.message),
    );
    assert.throws(
      () => load('{key: k, expression: "nope("}'),
      (e: unknown) =>
        e instanceof ConfigError && /requestMetadata\[0\]\.expression: invalid CEL/.test(e.message),
    );
  });
});

describe('the Bedrock provider', () => {
  test('a guardrail goes into the body before signing; an apiKey is a bearer instead of SigV4', async () => {
    const p = {
      kind: 'bedrock' as const,
      name: 'bedrock',
      settings: { region: 'us-east-1', guardrail: { identifier: 'gr-123', version: 'DRAFT' } },
    };
    assert.deepEqual(bedrockProvider.endpoint(p), {
      host: 'bedrock-runtime.us-east-1.amazonaws.com',
      port: 443,
      tls: true,
    });
    const req: ProviderRequest = {
      method: 'POST',
      path: '/model/m/converse-stream',
      headers: { host: 'bedrock-runtime.us-east-1.amazonaws.com', 'content-type': 'application/json' },
      body: Buffer.from('{"messages":[]}'),
    };
    await bedrockProvider.authorize(p, req, undefined);
    assert.deepEqual(JSON.parse(req.body.toString()).guardrailConfig, {
      guardrailIdentifier: 'gr-123',
      guardrailVersion: 'DRAFT',
      streamProcessingMode: 'async',
    });
    assert.match(
      String(req.headers.authorization),
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/us-east-1\/bedrock\/aws4_request, SignedHeaders=content-length;content-type;host;x-amz-content-sha256;x-amz-date, Signature=[0-9a-f]{64}$/,
    );
    // Temporary credentials: the session token is sent and signed.
    process.env.AWS_SESSION_TOKEN = 'FwoGZXIvYXdzEXAMPLETOKEN';
    try {
      const temp: ProviderRequest = { ...req, headers: { host: 'h', 'content-type': 'application/json' } };
      await bedrockProvider.authorize({ ...p, settings: { region: 'us-east-1' } }, temp, undefined);
      assert.equal(temp.headers['x-amz-security-token'], 'FwoGZXIvYXdzEXAMPLETOKEN');
      assert.match(String(temp.headers.authorization), /SignedHeaders=[a-z0-9;-]*x-amz-security-token/);
    } finally {
      delete process.env.AWS_SESSION_TOKEN;
    }
    const keyed: ProviderRequest = { ...req, headers: { host: 'h', authorization: 'Bearer client' } };
    await bedrockProvider.authorize({ ...p, settings: { region: 'us-east-1' } }, keyed, 'bedrock-api-key');
    assert.equal(keyed.headers.authorization, 'Bearer bedrock-api-key');
  });

  test('images inline; a remote image URL is a 400', () => {
    const state = new LlmRequestState('openai-chat', {}, 'm', false);
    const body = openaiChatToBedrockConverse.request(
      {
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'What is this?' },
              { type: 'image_url', image_url: { url: 'data:image/jpeg;base64,AAAA' } },
            ],
          },
        ],
      },
      { model: 'm', stream: false, bodyHasModel: false },
      state,
    );
    assert.deepEqual(body.messages, [
      {
        role: 'user',
        content: [{ text: 'What is this?' }, { image: { format: 'jpeg', source: { bytes: 'AAAA' } } }],
      },
    ]);
    assert.throws(
      () =>
        openaiChatToBedrockConverse.request(
          {
            messages: [
              { role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x/y.png' } }] },
            ],
          },
          { model: 'm', stream: false, bodyHasModel: false },
          state,
        ),
      /inline only/,
    );
  });
});

describe('the fake Bedrock against the official AWS SDK', () => {
  const sdk = () =>
    new BedrockRuntimeClient({
      region: 'eu-west-3',
      endpoint: fake.origin,
      credentials: CREDS,
      maxAttempts: 1,
    });

  test('ConverseCommand: the SDK signs, the fake verifies, the SDK parses the answer', async () => {
    const out = await sdk().send(
      new ConverseCommand({ modelId: MODEL, messages: [{ role: 'user', content: [{ text: 'Hello!' }] }] }),
    );
    assert.equal(out.output?.message?.content?.[0]?.text, FAKE_BEDROCK_REPLY);
    assert.equal(out.stopReason, 'end_turn');
    assert.equal(out.usage?.inputTokens, FAKE_BEDROCK_USAGE.converse.inputTokens);
    assert.equal(last().url, `/model/${encodeURIComponent(MODEL)}/converse`);
    assert.equal(last().sigv4?.service, 'bedrock');
  });

  test('ConverseStreamCommand: the SDK decodes the fake event stream, frame for frame', async () => {
    const out = await sdk().send(
      new ConverseStreamCommand({
        modelId: MODEL,
        messages: [{ role: 'user', content: [{ text: 'Hello!' }] }],
        toolConfig: { tools: [{ toolSpec: { name: 'get_current_weather', inputSchema: { json: {} } } }] },
      }),
    );
    const kinds: string[] = [];
    let args = '';
    let usage: { inputTokens?: number | undefined } | undefined;
    for await (const e of out.stream ?? []) {
      kinds.push(
        Object.keys(e).find((k) => (e as unknown as Record<string, unknown>)[k] !== undefined) ?? '?',
      );
      args += e.contentBlockDelta?.delta?.toolUse?.input ?? '';
      if (e.metadata) usage = e.metadata.usage;
    }
    assert.deepEqual(kinds, [
      'messageStart',
      'contentBlockStart',
      'contentBlockDelta',
      'contentBlockDelta',
      'contentBlockStop',
      'messageStop',
      'metadata',
    ]);
    assert.equal(args, '{"location": "Boston, MA"}');
    assert.equal(usage?.inputTokens, FAKE_BEDROCK_USAGE.toolsStream.inputTokens);
  });

  test('a bad signature from the SDK is refused as AWS would (InvalidSignatureException)', async () => {
    const bad = new BedrockRuntimeClient({
      region: 'eu-west-3',
      endpoint: fake.origin,
      credentials: { ...CREDS, secretAccessKey: 'wrong' },
      maxAttempts: 1,
    });
    await assert.rejects(
      bad.send(
        new ConverseCommand({ modelId: MODEL, messages: [{ role: 'user', content: [{ text: 'x' }] }] }),
      ),
      (err: Error) => err.name === 'InvalidSignatureException',
    );
  });
});
