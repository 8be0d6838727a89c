// Anthropic through the gateway as users see it: the official `@anthropic-ai/sdk` client to an
// Anthropic provider (native) and to an OpenAI-compatible one (translated), and the `openai` client to
// the Anthropic provider (translated), against fake providers speaking the real wire formats. Text,
// streams, tools, the token count, usage in the access log, metrics and a token budget, and errors in
// each client's own shape.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import {
  FAKE_ANTHROPIC_REPLY,
  FAKE_ANTHROPIC_STREAM_REPLY,
  FAKE_ANTHROPIC_TOOL,
  FAKE_ANTHROPIC_USAGE,
  FAKE_REPLY,
  FAKE_STREAM_REPLY,
  FAKE_USAGE,
  type FakeAnswer,
  type FakeAnthropic,
  type FakeAnthropicAnswer,
  type FakeLlmRequest,
  type FakeOpenAI,
  startFakeAnthropic,
  startFakeOpenAI,
} from '@gw/testkit';
import { ANTHROPIC_TEXT_EVENTS, readAnthropicStream } from '@gw/testkit/llm/anthropic-stream';
import { firstEventBeforeLast } from '@gw/testkit/llm/stream-timing';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import OpenAI from 'openai';
import { request } from 'undici';

const CLAUDE = 'claude-sonnet-4-5';
const GPT = 'gpt-4o-mini';
const weatherTool = {
  name: 'get_weather',
  description: 'Get the current weather in a given location',
  input_schema: {
    type: 'object' as const,
    properties: { location: { type: 'string' } },
    required: ['location'],
  },
};
const openaiTool = {
  type: 'function' as const,
  function: { name: 'get_weather', description: 'Get the weather', parameters: weatherTool.input_schema },
};

let anthropic: FakeAnthropic;
let openai: FakeOpenAI;
let proxy: TestProxy;
let claude: Anthropic;
let gpt: OpenAI;
let anthropicAnswer: ((r: FakeLlmRequest) => FakeAnthropicAnswer | undefined) | undefined;
let openaiAnswer: ((r: FakeLlmRequest) => FakeAnswer | undefined) | undefined;
let beforeLast: (() => Promise<void>) | undefined;
const waitBeforeLast = () => beforeLast?.() ?? Promise.resolve();

before(async () => {
  anthropic = await startFakeAnthropic({
    name: 'anthropic',
    apiKey: 'sk-ant-provider',
    // A model that is always overloaded, for failover.
    answer: (r) => (r.json?.model === 'claude-flaky' ? { error: 529 } : anthropicAnswer?.(r)),
    beforeLastEvent: waitBeforeLast,
  });
  openai = await startFakeOpenAI({
    name: 'openai',
    apiKey: 'sk-provider',
    answer: (r) => openaiAnswer?.(r),
    beforeLastEvent: waitBeforeLast,
  });
  proxy = await startProxy(`config:
  adminAddr: "off"
frontendPolicies:
  accessLog:
    add:
      tokens: 'llm.totalTokens'
      cached: 'llm.cachedInputTokens'
llm:
  port: 0
  models:
  - name: ${CLAUDE}
    provider: anthropic
    params: {apiKey: sk-ant-provider, baseUrl: "${anthropic.origin}/v1"}
  - name: ${GPT}
    provider: openai
    params: {apiKey: sk-provider, baseUrl: "${openai.origin}/v1"}
  - name: claude-flaky
    provider: anthropic
    visibility: internal
    params: {apiKey: sk-ant-provider, baseUrl: "${anthropic.origin}/v1"}
  virtualModels:
  - name: resilient
    routing:
      failover:
        targets: [{model: claude-flaky, priority: 0}, {model: ${GPT}, priority: 1}]
`);
  claude = new Anthropic({ apiKey: 'sk-ant-client', baseURL: proxy.url(''), maxRetries: 0 });
  gpt = new OpenAI({ apiKey: 'sk-client', baseURL: proxy.url('/v1'), maxRetries: 0 });
});

after(async () => {
  await proxy.close();
  await Promise.all([anthropic.close(), openai.close()]);
});

const lastSeen = (f: { seen: FakeLlmRequest[] }) => f.seen[f.seen.length - 1] as FakeLlmRequest;
/** The access log line of the latest request (streams log once the body has gone). */
async function lastLog(): Promise<Record<string, unknown>> {
  await new Promise((r) => setTimeout(r, 20));
  return proxy.accessLog[proxy.accessLog.length - 1] ?? {};
}
const tokens = (log: Record<string, unknown>) => [log['llm.inputTokens'], log['llm.outputTokens']];

describe('Anthropic client → Anthropic provider (native)', () => {
  test('a message: the answer as sent, the provider key in x-api-key, anthropic-version kept', async () => {
    const m = await claude.messages.create({
      model: CLAUDE,
      max_tokens: 1024,
      messages: [{ role: 'user', content: 'Hello, Claude' }],
    });
    assert.equal(m.type, 'message');
    assert.deepEqual(m.content, [{ type: 'text', text: FAKE_ANTHROPIC_REPLY }]);
    assert.equal(m.model, CLAUDE);
    assert.equal(m.usage.input_tokens, FAKE_ANTHROPIC_USAGE.message.input_tokens);
    const seen = lastSeen(anthropic);
    assert.equal(seen.url, '/v1/messages');
    assert.equal(seen.headers['x-api-key'], 'sk-ant-provider');
    // The SDK's own anthropic-version, not the gateway's default.
    assert.match(String(seen.headers['anthropic-version']), /^\d{4}-\d{2}-\d{2}$/);
    assert.equal(seen.json?.max_tokens, 1024);
    assert.deepEqual(tokens(await lastLog()), [
      FAKE_ANTHROPIC_USAGE.message.input_tokens,
      FAKE_ANTHROPIC_USAGE.message.output_tokens,
    ]);
  });

  test('messages.stream(): the events pass as sent; usage from message_start and message_delta', async () => {
    const stream = claude.messages.stream(
      { model: CLAUDE, max_tokens: 1024, messages: [{ role: 'user', content: 'Hello' }] },
      { headers: { 'anthropic-beta': 'fine-grained-tool-streaming-2025-05-14' } },
    );
    let text = '';
    stream.on('text', (t) => {
      text += t;
    });
    const m = await stream.finalMessage();
    assert.equal(text, FAKE_ANTHROPIC_STREAM_REPLY);
    assert.equal(m.stop_reason, 'end_turn');
    assert.equal(m.usage.output_tokens, FAKE_ANTHROPIC_USAGE.stream.output_tokens);
    assert.equal(lastSeen(anthropic).headers['anthropic-beta'], 'fine-grained-tool-streaming-2025-05-14');
    const log = await lastLog();
    assert.equal(log['llm.streaming'], true);
    assert.deepEqual(tokens(log), [
      FAKE_ANTHROPIC_USAGE.stream.input_tokens,
      FAKE_ANTHROPIC_USAGE.stream.output_tokens,
    ]);
  });

  test('tools: tool_use blocks, streamed and not; cache reads and writes count as input', async () => {
    const params = {
      model: CLAUDE,
      max_tokens: 1024,
      tools: [weatherTool],
      messages: [{ role: 'user' as const, content: 'Weather in San Francisco?' }],
    };
    const m = await claude.messages.create(params);
    assert.equal(m.stop_reason, 'tool_use');
    const use = m.content.find((b) => b.type === 'tool_use');
    assert.deepEqual(use && { name: use.name, input: use.input }, FAKE_ANTHROPIC_TOOL);
    const u = FAKE_ANTHROPIC_USAGE.tools;
    const log = await lastLog();
    assert.deepEqual(tokens(log), [
      u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens,
      u.output_tokens,
    ]);
    assert.equal(log.cached, u.cache_read_input_tokens);

    const s = await claude.messages.stream(params).finalMessage();
    const streamed = s.content.find((b) => b.type === 'tool_use');
    assert.deepEqual(streamed && { name: streamed.name, input: streamed.input }, FAKE_ANTHROPIC_TOOL);
  });

  test('count_tokens: sent to /v1/messages/count_tokens, spends no tokens', async () => {
    const c = await claude.messages.countTokens({
      model: CLAUDE,
      messages: [{ role: 'user', content: 'Hello' }],
    });
    assert.equal(c.input_tokens, FAKE_ANTHROPIC_USAGE.countTokens.input_tokens);
    assert.equal(lastSeen(anthropic).url, '/v1/messages/count_tokens');
    assert.equal((await lastLog())['llm.inputTokens'], undefined);
  });
});

describe('Anthropic client → OpenAI provider (translated)', () => {
  test('a message: system and max_tokens (as max_completion_tokens) sent OpenAI’s way, the answer as a message', async () => {
    const m = await claude.messages.create({
      model: GPT,
      max_tokens: 300,
      system: 'Be brief.',
      stop_sequences: ['END'],
      messages: [{ role: 'user', content: 'Hello!' }],
    });
    assert.equal(m.type, 'message');
    assert.deepEqual(m.content, [{ type: 'text', text: FAKE_REPLY }]);
    assert.equal(m.stop_reason, 'end_turn');
    assert.equal(m.usage.input_tokens, FAKE_USAGE.chat.prompt_tokens);
    assert.equal(m.usage.output_tokens, FAKE_USAGE.chat.completion_tokens);
    const seen = lastSeen(openai);
    assert.equal(seen.url, '/v1/chat/completions');
    assert.equal(seen.headers.authorization, 'Bearer sk-provider');
    assert.deepEqual(seen.json?.messages, [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hello!' },
    ]);
    // OpenAI's current name (its reasoning models refuse max_tokens), as agentgateway sends it
    assert.equal(seen.json?.max_completion_tokens, 300);
    assert.equal(seen.json?.max_tokens, undefined);
    assert.deepEqual(seen.json?.stop, ['END']);
    assert.deepEqual(tokens(await lastLog()), [
      FAKE_USAGE.chat.prompt_tokens,
      FAKE_USAGE.chat.completion_tokens,
    ]);
  });

  test('create({stream: true}): Anthropic’s event sequence, the usage in message_delta', async () => {
    const stream = await claude.messages.create({
      model: GPT,
      max_tokens: 300,
      messages: [{ role: 'user', content: 'Hello!' }],
      stream: true,
    });
    const { types, text, usage } = await readAnthropicStream(stream);
    assert.deepEqual(types, ANTHROPIC_TEXT_EVENTS);
    assert.equal(text, FAKE_STREAM_REPLY);
    assert.equal(usage?.output_tokens, FAKE_USAGE.stream.completion_tokens);
    assert.equal(usage?.input_tokens, FAKE_USAGE.stream.prompt_tokens);
    assert.deepEqual(lastSeen(openai).json?.stream_options, { include_usage: true });
    assert.deepEqual(tokens(await lastLog()), [
      FAKE_USAGE.stream.prompt_tokens,
      FAKE_USAGE.stream.completion_tokens,
    ]);
  });

  test('tools: OpenAI function tools out, tool_use blocks back, streamed and not; tool results sent back', async () => {
    const params = {
      model: GPT,
      max_tokens: 300,
      tools: [weatherTool],
      tool_choice: { type: 'any' as const },
      messages: [{ role: 'user' as const, content: 'Weather in Boston?' }],
    };
    const m = await claude.messages.create(params);
    assert.equal(m.stop_reason, 'tool_use');
    const use = m.content.find((b) => b.type === 'tool_use');
    assert.equal(use?.name, 'get_current_weather');
    assert.deepEqual(use?.input, { location: 'Boston, MA' });
    const sent = lastSeen(openai).json;
    assert.deepEqual(sent?.tools, [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          parameters: weatherTool.input_schema,
          description: weatherTool.description,
        },
      },
    ]);
    assert.equal(sent?.tool_choice, 'required');
    assert.equal((await lastLog()).cached, FAKE_USAGE.tools.cached_tokens);

    const s = await claude.messages.stream(params).finalMessage();
    const streamed = s.content.find((b) => b.type === 'tool_use');
    assert.equal(streamed?.name, 'get_current_weather');
    assert.deepEqual(streamed?.input, { location: 'Boston, MA' });
    assert.equal(s.stop_reason, 'tool_use');

    await claude.messages.create({
      model: GPT,
      max_tokens: 300,
      tools: [weatherTool],
      messages: [
        { role: 'user', content: 'Weather in Boston?' },
        {
          role: 'assistant',
          content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { location: 'Boston' } }],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '15 degrees' }] },
      ],
    });
    assert.deepEqual(lastSeen(openai).json?.messages, [
      { role: 'user', content: 'Weather in Boston?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'toolu_1',
            type: 'function',
            function: { name: 'get_weather', arguments: '{"location":"Boston"}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'toolu_1', content: '15 degrees' },
    ]);
  });
});

describe('OpenAI client → Anthropic provider (translated)', () => {
  test('chat: system to `system`, max_tokens defaulted, the answer as a chat.completion', async () => {
    const r = await gpt.chat.completions.create({
      model: CLAUDE,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hello!' },
      ],
      stop: 'END',
    });
    assert.equal(r.object, 'chat.completion');
    assert.equal(r.choices[0]?.message.content, FAKE_ANTHROPIC_REPLY);
    assert.equal(r.choices[0]?.finish_reason, 'stop');
    assert.equal(r.usage?.prompt_tokens, FAKE_ANTHROPIC_USAGE.message.input_tokens);
    assert.equal(r.usage?.completion_tokens, FAKE_ANTHROPIC_USAGE.message.output_tokens);
    const seen = lastSeen(anthropic);
    assert.equal(seen.url, '/v1/messages');
    assert.equal(seen.headers['x-api-key'], 'sk-ant-provider');
    assert.equal(seen.headers.authorization, undefined);
    assert.equal(seen.headers['anthropic-version'], '2023-06-01');
    assert.deepEqual(seen.json, {
      model: CLAUDE,
      system: [{ type: 'text', text: 'Be brief.' }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hello!' }] }],
      max_tokens: 4096,
      stop_sequences: ['END'],
    });
    assert.deepEqual(tokens(await lastLog()), [
      FAKE_ANTHROPIC_USAGE.message.input_tokens,
      FAKE_ANTHROPIC_USAGE.message.output_tokens,
    ]);
  });

  test('streamed with include_usage: a role chunk, deltas, the finish reason, the usage chunk, [DONE]', async () => {
    const stream = await gpt.chat.completions.create({
      model: CLAUDE,
      messages: [{ role: 'user', content: 'Hello!' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const c of stream) chunks.push(c);
    assert.equal(chunks[0]?.choices[0]?.delta.role, 'assistant');
    assert.equal(chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''), FAKE_ANTHROPIC_STREAM_REPLY);
    assert.equal(chunks.at(-2)?.choices[0]?.finish_reason, 'stop');
    const last = chunks.at(-1);
    assert.deepEqual(last?.choices, []);
    assert.equal(last?.usage?.prompt_tokens, FAKE_ANTHROPIC_USAGE.stream.input_tokens);
    assert.equal(last?.usage?.completion_tokens, FAKE_ANTHROPIC_USAGE.stream.output_tokens);
    assert.equal(lastSeen(anthropic).json?.stream, true);
    assert.deepEqual(tokens(await lastLog()), [
      FAKE_ANTHROPIC_USAGE.stream.input_tokens,
      FAKE_ANTHROPIC_USAGE.stream.output_tokens,
    ]);

    const plain = await gpt.chat.completions.create({
      model: CLAUDE,
      messages: [{ role: 'user', content: 'Hello!' }],
      stream: true,
    });
    const noUsage: OpenAI.ChatCompletionChunk[] = [];
    for await (const c of plain) noUsage.push(c);
    assert.ok(
      noUsage.every((c) => c.choices.length === 1 && !c.usage),
      'no usage chunk unasked',
    );
  });

  test('tools: tool calls back, streamed and not; cached_tokens from cache reads; tool results sent', async () => {
    const r = await gpt.chat.completions.create({
      model: CLAUDE,
      messages: [{ role: 'user', content: 'Weather in San Francisco?' }],
      tools: [openaiTool],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
    });
    assert.equal(r.choices[0]?.finish_reason, 'tool_calls');
    assert.equal(r.choices[0]?.message.content, "I'll check the current weather in San Francisco for you.");
    const call = r.choices[0]?.message.tool_calls?.[0];
    assert.ok(call?.type === 'function');
    assert.deepEqual(
      { name: call.function.name, input: JSON.parse(call.function.arguments) },
      FAKE_ANTHROPIC_TOOL,
    );
    const u = FAKE_ANTHROPIC_USAGE.tools;
    assert.equal(
      r.usage?.prompt_tokens,
      u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens,
    );
    assert.equal(r.usage?.prompt_tokens_details?.cached_tokens, u.cache_read_input_tokens);
    const sent = lastSeen(anthropic).json;
    assert.deepEqual(sent?.tools, [
      { name: 'get_weather', input_schema: weatherTool.input_schema, description: 'Get the weather' },
    ]);
    assert.deepEqual(sent?.tool_choice, { type: 'tool', name: 'get_weather' });

    const stream = await gpt.chat.completions.create({
      model: CLAUDE,
      messages: [{ role: 'user', content: 'Weather in San Francisco?' }],
      tools: [openaiTool],
      stream: true,
    });
    let name: string | undefined;
    let id: string | undefined;
    let args = '';
    let finish: string | null | undefined;
    for await (const c of stream) {
      const d = c.choices[0]?.delta.tool_calls?.[0];
      if (d?.function?.name) name = d.function.name;
      if (d?.id) id = d.id;
      args += d?.function?.arguments ?? '';
      finish = c.choices[0]?.finish_reason ?? finish;
    }
    assert.deepEqual({ name, input: JSON.parse(args) }, FAKE_ANTHROPIC_TOOL);
    assert.equal(id, 'toolu_01T1x1fJ34qAmk2tNTrN7Up6');
    assert.equal(finish, 'tool_calls');

    await gpt.chat.completions.create({
      model: CLAUDE,
      messages: [
        { role: 'user', content: 'Weather?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: 'call_1',
              type: 'function',
              function: { name: 'get_weather', arguments: '{"location":"SF"}' },
            },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: '15 degrees' },
      ],
      tools: [openaiTool],
    });
    assert.deepEqual(lastSeen(anthropic).json?.messages, [
      { role: 'user', content: [{ type: 'text', text: 'Weather?' }] },
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'call_1', name: 'get_weather', input: { location: 'SF' } }],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: '15 degrees' }] },
    ]);
  });

  test('images: a data URL inline as base64, another URL by reference', async () => {
    await gpt.chat.completions.create({
      model: CLAUDE,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in these?' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
            { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
          ],
        },
      ],
    });
    assert.deepEqual(lastSeen(anthropic).json?.messages, [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is in these?' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
          { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
        ],
      },
    ]);
  });

  test('Prometheus: tokens by the anthropic provider', async () => {
    const text = await proxy.metrics.registry.metrics();
    const m = new RegExp(
      `^gw_llm_tokens_total\\{provider="anthropic",model="${CLAUDE}",kind="input"\\} (\\d+)`,
      'm',
    );
    assert.ok(Number(m.exec(text)?.[1] ?? 0) > 0);
  });
});

describe('errors, in each client’s shape', () => {
  test('Anthropic client, unknown model: 404 NotFoundError with Anthropic’s error body', async () => {
    await assert.rejects(
      claude.messages.create({
        model: 'claude-nope',
        max_tokens: 10,
        messages: [{ role: 'user', content: 'x' }],
      }),
      (err) => {
        assert.ok(err instanceof Anthropic.NotFoundError);
        assert.deepEqual(err.error, {
          type: 'error',
          error: {
            type: 'not_found_error',
            message: 'the model "claude-nope" does not exist on this gateway',
          },
        });
        return true;
      },
    );
  });

  test('Anthropic client, malformed JSON: 400 invalid_request_error', async () => {
    const r = await request(proxy.url('/v1/messages'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"model": "claude-sonnet-4-5", "messages": [',
    });
    assert.equal(r.statusCode, 400);
    const body = (await r.body.json()) as { type: string; error: { type: string; message: string } };
    assert.equal(body.type, 'error');
    assert.equal(body.error.type, 'invalid_request_error');
    assert.match(body.error.message, /^the request body is not valid JSON/);
  });

  test('Anthropic client, the OpenAI provider answers 429: RateLimitError with Anthropic’s body', async () => {
    openaiAnswer = () => ({ error: 429 });
    try {
      await assert.rejects(
        claude.messages.create({ model: GPT, max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }),
        (err) => {
          assert.ok(err instanceof Anthropic.RateLimitError);
          const body = err.error as { type: string; error: { type: string; message: string } };
          assert.equal(body.type, 'error');
          assert.equal(body.error.type, 'rate_limit_error');
          assert.match(body.error.message, /Rate limit reached/);
          return true;
        },
      );
    } finally {
      openaiAnswer = undefined;
    }
  });

  test('Anthropic client, a provider answering HTML or 5xx: Anthropic-shaped 502 / the provider’s error', async () => {
    anthropicAnswer = () => ({ html: 502 });
    try {
      await assert.rejects(
        claude.messages.create({ model: CLAUDE, max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }),
        (err) => {
          assert.ok(err instanceof Anthropic.InternalServerError);
          assert.equal(err.status, 502);
          const body = err.error as { type: string; error: { type: string; message: string } };
          assert.equal(body.error.type, 'api_error');
          assert.match(body.error.message, /provider anthropic answered 502 with text\/html, not JSON/);
          return true;
        },
      );
      anthropicAnswer = () => ({ error: 529, fixture: 'overloaded' });
      await assert.rejects(
        claude.messages.create({ model: CLAUDE, max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }),
        (err) =>
          err instanceof Anthropic.InternalServerError &&
          err.status === 529 &&
          /Overloaded/.test(err.message),
      );
      openaiAnswer = () => ({ html: 502 });
      await assert.rejects(
        claude.messages.create({ model: GPT, max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }),
        (err) =>
          err instanceof Anthropic.InternalServerError && (err.error as { type?: string }).type === 'error',
      );
    } finally {
      anthropicAnswer = undefined;
      openaiAnswer = undefined;
    }
  });

  test('OpenAI client, the Anthropic provider refuses the key: AuthenticationError in OpenAI’s shape', async () => {
    anthropicAnswer = () => ({ error: 401, fixture: 'authentication' });
    try {
      await assert.rejects(
        gpt.chat.completions.create({ model: CLAUDE, messages: [{ role: 'user', content: 'x' }] }),
        (err) => {
          assert.ok(err instanceof OpenAI.AuthenticationError);
          assert.equal(err.message, '401 invalid x-api-key');
          assert.equal((err.error as { code?: string }).code, 'authentication_error');
          return true;
        },
      );
    } finally {
      anthropicAnswer = undefined;
    }
  });

  test('an unsupported pair (count_tokens to an OpenAI model): 400 naming both formats', async () => {
    await assert.rejects(
      claude.messages.countTokens({ model: GPT, messages: [{ role: 'user', content: 'x' }] }),
      (err) => {
        assert.ok(err instanceof Anthropic.BadRequestError);
        assert.match(
          err.message,
          /cannot convert anthropic-count-tokens requests to what provider openai speaks/,
        );
        assert.equal((err.error as { type?: string }).type, 'error');
        return true;
      },
    );
  });
});

test('a token budget is spent by a translated stream; the next Anthropic request gets 429 in its shape', async (t) => {
  const p = await startProxy(`config:
  adminAddr: "off"
llm:
  port: 0
  policies:
    localRateLimit: [{tokens: 30, unit: Minutes}]
  models:
  - name: "*"
    provider: anthropic
    params: {apiKey: sk-ant-provider, baseUrl: "${anthropic.origin}/v1"}
`);
  t.after(() => p.close());
  const c = new OpenAI({ apiKey: 'x', baseURL: p.url('/v1'), maxRetries: 0 });
  // 25 + 15 = 40 tokens against a budget of 30: this one still succeeds, streamed to the end.
  const stream = await c.chat.completions.create({
    model: CLAUDE,
    messages: [{ role: 'user', content: 'Hi' }],
    stream: true,
  });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
  assert.equal(text, FAKE_ANTHROPIC_STREAM_REPLY);
  await new Promise((r) => setTimeout(r, 20));
  const a = new Anthropic({ apiKey: 'x', baseURL: p.url(''), maxRetries: 0 });
  await assert.rejects(
    a.messages.create({ model: CLAUDE, max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }),
    (err) => {
      assert.ok(err instanceof Anthropic.RateLimitError);
      assert.equal((err.error as { error?: { type?: string } }).error?.type, 'rate_limit_error');
      return true;
    },
  );
});

test('failover across formats: the Anthropic provider is overloaded, the OpenAI one answers the Anthropic client', async () => {
  const before = { anthropic: anthropic.seen.length, openai: openai.seen.length };
  const m = await claude.messages.create({
    model: 'resilient',
    max_tokens: 50,
    messages: [{ role: 'user', content: 'Hello!' }],
  });
  assert.deepEqual(m.content, [{ type: 'text', text: FAKE_REPLY }]);
  assert.equal(anthropic.seen.length, before.anthropic + 1);
  assert.equal(openai.seen.length, before.openai + 1);
  assert.equal(lastSeen(anthropic).url, '/v1/messages');
  assert.equal(lastSeen(openai).url, '/v1/chat/completions');
  assert.equal(lastSeen(openai).json?.model, GPT);
  const log = await lastLog();
  assert.equal(log['llm.provider'], 'openai');
  assert.equal(log['llm.inputTokens'], FAKE_USAGE.chat.prompt_tokens);
});

test('a stream cut mid-way: the Anthropic client sees an error, native or translated', async () => {
  anthropicAnswer = (r) => (r.json?.stream ? { cutAfter: 3 } : undefined);
  openaiAnswer = (r) => (r.json?.stream ? { cutAfter: 2 } : undefined);
  try {
    for (const model of [CLAUDE, GPT]) {
      const stream = await claude.messages.create({
        model,
        max_tokens: 50,
        messages: [{ role: 'user', content: 'Hello!' }],
        stream: true,
      });
      let n = 0;
      await assert.rejects(async () => {
        for await (const _ of stream) n++;
      }, `${model}: the stream fails`);
      assert.ok(n >= 1, `${model}: the events before the cut arrived`);
    }
  } finally {
    anthropicAnswer = undefined;
    openaiAnswer = undefined;
  }
});

test('translated streams are not held back: the first event reaches the client before the provider sends its last', async () => {
  const cases: [string, { lastEventAt: number | undefined }, () => Promise<AsyncIterable<unknown>>][] = [
    [
      'openai client → anthropic',
      anthropic,
      () =>
        gpt.chat.completions.create({
          model: CLAUDE,
          messages: [{ role: 'user', content: 'Hi' }],
          stream: true,
        }),
    ],
    [
      'anthropic client → openai',
      openai,
      () =>
        claude.messages.create({
          model: GPT,
          max_tokens: 50,
          messages: [{ role: 'user', content: 'Hi' }],
          stream: true,
        }),
    ],
  ];
  for (const [name, fake, start] of cases) {
    const { firstAt, lastAt } = await firstEventBeforeLast(fake, (gate) => (beforeLast = gate), start);
    assert.ok(firstAt !== undefined && lastAt !== undefined);
    assert.ok(firstAt < lastAt, `${name}: the first event came before the provider's last`);
  }
});
