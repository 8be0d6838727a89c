// The Anthropic pieces on their own: the provider's endpoint, paths and headers, and the Anthropic
// format pairs' conversions (requests, answers, streams fed a byte at a time, errors).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { eventFrame } from '@gw/testkit/llm/bedrock';
import type { LlmProviderIR } from '../config/ir.ts';
import { GwError } from '../errors.ts';
import { anthropicMessagesToAnthropicMessages } from './formats/anthropic-messages__anthropic-messages.ts';
import { anthropicMessagesToBedrockConverse } from './formats/anthropic-messages__bedrock-converse.ts';
import { anthropicMessagesToGeminiGenerateContent } from './formats/anthropic-messages__gemini-generate-content.ts';
import { anthropicMessagesToOpenaiChat } from './formats/anthropic-messages__openai-chat.ts';
import {
  DEFAULT_MAX_TOKENS,
  openaiChatToAnthropicMessages,
  THINKING_BUDGETS,
} from './formats/openai-chat__anthropic-messages.ts';
import { openaiChatToBedrockConverse } from './formats/openai-chat__bedrock-converse.ts';
import { openaiChatToGeminiGenerateContent } from './formats/openai-chat__gemini-generate-content.ts';
import { FORMAT_PAIRS } from './formats/registry.ts';
import type { FormatPair, StreamConverter } from './formats/types.ts';
import { loadConverseCodec } from './providers/bedrock/event-stream.ts';
import { PROVIDERS } from './providers/registry.ts';
import type { ProviderRequest } from './providers/types.ts';
import { SseSplitter } from './sse.ts';
import { LlmRequestState } from './state.ts';

// The Bedrock stream decoder loads with the first ConverseStream request; these tests decode directly.
await loadConverseCodec();

const anthropic: LlmProviderIR<'anthropic'> = { kind: 'anthropic', name: 'anthropic', settings: {} };
const req = (stream = false, bodyHasModel = true) => ({ model: 'm', stream, bodyHasModel });
const state = (format: 'openai-chat' | 'anthropic-messages', request: Record<string, unknown> = {}) =>
  new LlmRequestState(format, request, 'm', request.stream === true);

/** Feeds `input` one byte at a time (the worst split) and returns everything the converter sent. */
function feed(conv: StreamConverter, input: string): string {
  let out = '';
  for (const b of Buffer.from(input)) out += String(conv.write(Buffer.from([b])) ?? '');
  return out + String(conv.end() ?? '');
}
const events = (sse: string) =>
  new SseSplitter().push(Buffer.from(sse)).map((e) => [e.event, e.data === undefined ? undefined : e.data]);
const sse = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

describe('anthropic provider', () => {
  const p = PROVIDERS.anthropic;

  test('api.anthropic.com, /v1/messages and /v1/messages/count_tokens', () => {
    assert.deepEqual(p.endpoint(anthropic), { host: 'api.anthropic.com', port: 443, tls: true });
    assert.deepEqual(p.formats(anthropic), ['anthropic-messages', 'anthropic-count-tokens']);
    assert.equal(p.path(anthropic, 'anthropic-messages', req()).path, '/messages');
    assert.equal(p.path(anthropic, 'anthropic-count-tokens', req()).path, '/messages/count_tokens');
    assert.equal(p.path(anthropic, 'anthropic-messages', req()).prefix, '/v1');
  });

  test('x-api-key and the default anthropic-version; a client’s own version and beta kept', async () => {
    const r: ProviderRequest = {
      method: 'POST',
      path: '/',
      headers: { authorization: 'Bearer x' },
      body: Buffer.alloc(0),
    };
    await p.authorize(anthropic, r, 'sk-ant');
    assert.deepEqual(r.headers, { 'x-api-key': 'sk-ant', 'anthropic-version': '2023-06-01' });
    const own: ProviderRequest = {
      method: 'POST',
      path: '/',
      headers: { 'anthropic-version': '2024-01-01', 'anthropic-beta': 'b', 'x-api-key': 'client' },
      body: Buffer.alloc(0),
    };
    await p.authorize(anthropic, own, undefined);
    assert.deepEqual(own.headers, {
      'anthropic-version': '2024-01-01',
      'anthropic-beta': 'b',
      'x-api-key': 'client',
    });
  });
});

test('the Anthropic pairs are registered under their file names', () => {
  for (const key of [
    'anthropic-messages__anthropic-messages',
    'openai-chat__anthropic-messages',
    'anthropic-messages__openai-chat',
    'anthropic-messages__bedrock-converse',
    'anthropic-messages__gemini-generate-content',
    'anthropic-count-tokens__anthropic-count-tokens',
  ] as const) {
    const pair = FORMAT_PAIRS[key] as FormatPair;
    assert.equal(`${pair.client}__${pair.provider}`, key);
  }
});

describe('anthropic-messages__anthropic-messages', () => {
  test('a stream passes byte for byte; usage from message_start (input) and message_delta (output)', () => {
    const s = state('anthropic-messages', { stream: true });
    const input =
      sse('message_start', {
        message: {
          model: 'claude-x',
          usage: { input_tokens: 5, cache_read_input_tokens: 3, output_tokens: 1 },
        },
      }) +
      sse('ping', {}) +
      sse('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 9 } }) +
      sse('message_stop', {});
    assert.equal(feed(anthropicMessagesToAnthropicMessages.stream(s), input), input);
    assert.deepEqual(s.usage, { input: 8, output: 9, cachedInput: 3, reasoning: 0 });
    assert.equal(s.responseModel, 'claude-x');
  });
});

describe('openai-chat__anthropic-messages', () => {
  const pair = openaiChatToAnthropicMessages;

  test('request: system and developer joined into `system`, same-role turns merged, parameters mapped', () => {
    const out = pair.request(
      {
        model: 'ignored',
        messages: [
          { role: 'system', content: 'A' },
          { role: 'developer', content: [{ type: 'text', text: 'B' }] },
          { role: 'user', content: 'hi' },
          {
            role: 'assistant',
            content: 'calling',
            tool_calls: [
              { id: 'c1', type: 'function', function: { name: 'f', arguments: '{"x":1}' } },
              { id: 'c2', type: 'function', function: { name: 'g', arguments: '' } },
            ],
          },
          { role: 'tool', tool_call_id: 'c1', content: 'one' },
          { role: 'tool', tool_call_id: 'c2', content: [{ type: 'text', text: 'two' }] },
        ],
        max_completion_tokens: 77,
        temperature: 0.2,
        stop: ['x', 'y'],
        tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
        tool_choice: 'required',
        parallel_tool_calls: false,
        user: 'u1',
        frequency_penalty: 1,
      },
      req(true),
      state('openai-chat'),
    );
    assert.deepEqual(out, {
      model: 'm',
      system: [
        { type: 'text', text: 'A' },
        { type: 'text', text: 'B' },
      ],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'hi' }] },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'calling' },
            { type: 'tool_use', id: 'c1', name: 'f', input: { x: 1 } },
            { type: 'tool_use', id: 'c2', name: 'g', input: {} },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'c1', content: 'one' },
            { type: 'tool_result', tool_use_id: 'c2', content: 'two' },
          ],
        },
      ],
      max_tokens: 77,
      stop_sequences: ['x', 'y'],
      temperature: 0.2,
      stream: true,
      tools: [{ name: 'f', input_schema: { type: 'object' } }],
      tool_choice: { type: 'any', disable_parallel_tool_use: true },
      metadata: { user_id: 'u1' },
    });
    const plain = pair.request({ messages: [{ role: 'user', content: 'x' }] }, req(), state('openai-chat'));
    assert.equal(plain.max_tokens, DEFAULT_MAX_TOKENS);
  });

  test('request: what Anthropic cannot take is a 400 naming it', () => {
    const bad = (body: Record<string, unknown>, re: RegExp) =>
      assert.throws(
        () => pair.request(body, req(), state('openai-chat')),
        (e) => e instanceof GwError && e.status === 400 && re.test(e.detail),
      );
    bad({ messages: [{ role: 'user', content: [{ type: 'input_audio' }] }] }, /"input_audio" content part/);
    bad({ messages: [{ role: 'function', content: 'x' }] }, /role "function"/);
    bad(
      {
        messages: [{ role: 'assistant', tool_calls: [{ id: 'c', function: { name: 'f', arguments: '{' } }] }],
      },
      /not JSON/,
    );
    bad({ messages: [], tools: [{ type: 'custom', custom: {} }] }, /only function tools/);
    bad({ messages: [], n: 2 }, /n > 1/);
  });

  test('answer: stop reasons map to finish reasons; text and tool calls; usage with cache', () => {
    const out = pair.response(
      {
        id: 'msg_1',
        model: 'claude-x',
        content: [
          { type: 'thinking', thinking: '…' },
          { type: 'text', text: 'a' },
          { type: 'tool_use', id: 't1', name: 'f', input: { q: 1 } },
        ],
        stop_reason: 'max_tokens',
        usage: {
          input_tokens: 4,
          cache_creation_input_tokens: 2,
          cache_read_input_tokens: 10,
          output_tokens: 3,
        },
      },
      state('openai-chat'),
    ) as Record<string, unknown>;
    assert.deepEqual((out.choices as unknown[])[0], {
      index: 0,
      message: {
        role: 'assistant',
        content: 'a',
        refusal: null,
        reasoning_content: '…',
        tool_calls: [{ id: 't1', type: 'function', function: { name: 'f', arguments: '{"q":1}' } }],
      },
      logprobs: null,
      finish_reason: 'length',
    });
    assert.deepEqual(out.usage, {
      prompt_tokens: 16,
      completion_tokens: 3,
      total_tokens: 19,
      prompt_tokens_details: { cached_tokens: 10 },
    });
  });

  test('stream: chunks as events arrive, split anywhere; an error event becomes an error data event', () => {
    const s = state('openai-chat', { stream: true });
    const out = feed(
      pair.stream(s),
      sse('message_start', {
        message: { id: 'msg_1', model: 'claude-x', usage: { input_tokens: 5, output_tokens: 1 } },
      }) +
        sse('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }) +
        sse('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'é' } }) +
        sse('error', { error: { type: 'overloaded_error', message: 'Overloaded' } }),
    );
    const data = events(out).map(([, d]) => JSON.parse(String(d)));
    assert.deepEqual(data[0].choices[0].delta, { role: 'assistant', content: '' });
    assert.equal(data[0].id, 'msg_1');
    assert.deepEqual(data[1].choices[0].delta, { content: 'é' });
    assert.deepEqual(data[2], {
      error: { message: 'Overloaded', type: 'overloaded_error', param: null, code: null },
    });
    assert.equal(data.length, 3);
  });

  test('error: Anthropic’s envelope as OpenAI’s error object', () => {
    assert.deepEqual(
      pair.error?.({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }, 529),
      {
        error: { message: 'Overloaded', type: 'server_error', param: null, code: 'overloaded_error' },
      },
    );
  });
});

describe('anthropic-messages__openai-chat', () => {
  const pair = anthropicMessagesToOpenaiChat;

  test('request: system, images, tool results before the rest of the turn, tool_choice, no model for a deployment', () => {
    const out = pair.request(
      {
        model: 'x',
        system: [{ type: 'text', text: 'S' }],
        max_tokens: 10,
        stop_sequences: ['E'],
        top_k: 5,
        metadata: { user_id: 'u' },
        tools: [{ name: 'f', input_schema: { type: 'object' } }],
        tool_choice: { type: 'tool', name: 'f', disable_parallel_tool_use: true },
        messages: [
          {
            role: 'assistant',
            content: [
              { type: 'thinking', thinking: 'hm', signature: 's' },
              { type: 'text', text: 'ok' },
            ],
          },
          {
            role: 'user',
            content: [
              { type: 'text', text: 'see' },
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAA' } },
              { type: 'image', source: { type: 'url', url: 'https://e/x.png' } },
              { type: 'tool_result', tool_use_id: 't1', content: [{ type: 'text', text: 'r' }] },
            ],
          },
        ],
      },
      req(false, false),
      state('anthropic-messages'),
    );
    assert.deepEqual(out, {
      messages: [
        { role: 'system', content: 'S' },
        { role: 'assistant', content: 'ok' },
        { role: 'tool', tool_call_id: 't1', content: 'r' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'see' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,AAA' } },
            { type: 'image_url', image_url: { url: 'https://e/x.png' } },
          ],
        },
      ],
      max_tokens: 10,
      stop: ['E'],
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
      tool_choice: { type: 'function', function: { name: 'f' } },
      parallel_tool_calls: false,
      user: 'u',
    });
    assert.throws(
      () =>
        pair.request(
          { messages: [], tools: [{ type: 'web_search_20250305', name: 'web_search' }] },
          req(),
          state('anthropic-messages'),
        ),
      (e) => e instanceof GwError && e.status === 400 && /server tool "web_search_20250305"/.test(e.detail),
    );
    // OpenAI's own API takes the limit under its current name; other chat providers keep max_tokens
    const named = pair.request(
      { max_tokens: 7, messages: [] },
      { ...req(), tokenLimitField: 'max_completion_tokens' },
      state('anthropic-messages'),
    );
    assert.deepEqual([named.max_completion_tokens, named.max_tokens], [7, undefined]);
  });

  test('answer: finish reasons map to stop reasons; cached tokens leave input_tokens', () => {
    const out = pair.response(
      {
        id: 'c1',
        model: 'gpt',
        choices: [
          {
            message: {
              content: null,
              tool_calls: [{ id: 'k', function: { name: 'f', arguments: '{"a":1}' } }],
            },
            finish_reason: 'tool_calls',
          },
        ],
        usage: { prompt_tokens: 100, completion_tokens: 7, prompt_tokens_details: { cached_tokens: 60 } },
      },
      state('anthropic-messages'),
    );
    assert.deepEqual(out, {
      id: 'c1',
      type: 'message',
      role: 'assistant',
      model: 'gpt',
      content: [{ type: 'tool_use', id: 'k', name: 'f', input: { a: 1 } }],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: {
        input_tokens: 40,
        output_tokens: 7,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 60,
      },
    });
  });

  test('stream: text then a tool call as blocks, message_delta with the usage that came after the finish; Azure’s filter chunk skipped', () => {
    const s = state('anthropic-messages', { stream: true });
    const chunk = (delta: object, finish: string | null = null) =>
      `data: ${JSON.stringify({ id: 'c1', model: 'gpt', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    const out = feed(
      pair.stream(s),
      // Azure's prompt filter results come first, without id or model.
      `data: ${JSON.stringify({ id: '', model: '', choices: [], prompt_filter_results: [] })}\n\n` +
        chunk({ role: 'assistant', content: '' }) +
        chunk({ content: 'Hi' }) +
        chunk({
          tool_calls: [{ index: 0, id: 'k', type: 'function', function: { name: 'f', arguments: '' } }],
        }) +
        chunk({ tool_calls: [{ index: 0, function: { arguments: '{"a":1}' } }] }) +
        chunk({}, 'tool_calls') +
        `data: ${JSON.stringify({ id: 'c1', choices: [], usage: { prompt_tokens: 9, completion_tokens: 4 } })}\n\n` +
        'data: [DONE]\n\n',
    );
    const ev = events(out);
    assert.deepEqual(
      ev.map(([e]) => e),
      [
        'message_start',
        'content_block_start',
        'content_block_delta',
        'content_block_stop',
        'content_block_start',
        'content_block_delta',
        'content_block_stop',
        'message_delta',
        'message_stop',
      ],
    );
    const data = ev.map(([, d]) => JSON.parse(String(d)));
    assert.equal(data[0].message.id, 'c1');
    assert.equal(data[0].message.model, 'gpt');
    assert.deepEqual(data[4].content_block, { type: 'tool_use', id: 'k', name: 'f', input: {} });
    assert.deepEqual(data[5], {
      type: 'content_block_delta',
      index: 1,
      delta: { type: 'input_json_delta', partial_json: '{"a":1}' },
    });
    assert.deepEqual(data[7], {
      type: 'message_delta',
      delta: { stop_reason: 'tool_use', stop_sequence: null },
      usage: {
        input_tokens: 9,
        output_tokens: 4,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
      },
    });
    assert.deepEqual(s.usage, { input: 9, output: 4, cachedInput: 0, reasoning: 0 });
  });

  test('error: OpenAI’s error object as Anthropic’s envelope', () => {
    assert.deepEqual(
      pair.error?.({ error: { message: 'slow down', type: 'requests', code: 'rate_limit_exceeded' } }, 429),
      {
        type: 'error',
        error: { type: 'rate_limit_error', message: 'slow down' },
      },
    );
  });
});

describe('anthropic-messages__bedrock-converse', () => {
  const pair = anthropicMessagesToBedrockConverse;
  const frames = (events: [string, Record<string, unknown>][]) =>
    Buffer.concat(events.map(([type, payload]) => eventFrame(type, payload)));
  /** Feeds `input` a byte at a time, like `feed`, for binary input. */
  function feedBytes(conv: StreamConverter, input: Buffer): string {
    let out = '';
    for (const b of input) out += String(conv.write(Buffer.from([b])) ?? '');
    return out + String(conv.end() ?? '');
  }

  test('request: sampling, top_k and thinking, tool choice, thinking blocks sent back, turns merged', () => {
    const thinking = { type: 'enabled', budget_tokens: 2000 };
    const out = pair.request(
      {
        model: 'ignored',
        system: [{ type: 'text', text: 'A' }],
        max_tokens: 4000,
        temperature: 1,
        top_p: 0.9,
        top_k: 40,
        thinking,
        tools: [{ name: 'f', input_schema: { type: 'object' } }],
        tool_choice: { type: 'tool', name: 'f' },
        messages: [
          { role: 'user', content: 'hi' },
          {
            role: 'user',
            content: [
              { type: 'text', text: '' },
              { type: 'text', text: 'again' },
            ],
          },
          {
            role: 'assistant',
            content: [
              { type: 'thinking', thinking: 'hmm', signature: 'sig' },
              { type: 'redacted_thinking', data: 'opaque' },
              { type: 'tool_use', id: 't1', name: 'f', input: { q: 1 } },
            ],
          },
          {
            role: 'user',
            content: [
              {
                type: 'tool_result',
                tool_use_id: 't1',
                content: [
                  { type: 'text', text: 'seen' },
                  { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: 'AA' } },
                ],
              },
            ],
          },
        ],
      },
      req(false, false),
      state('anthropic-messages'),
    );
    assert.deepEqual(out, {
      messages: [
        { role: 'user', content: [{ text: 'hi' }, { text: 'again' }] },
        {
          role: 'assistant',
          content: [
            { reasoningContent: { reasoningText: { text: 'hmm', signature: 'sig' } } },
            { reasoningContent: { redactedContent: 'opaque' } },
            { toolUse: { toolUseId: 't1', name: 'f', input: { q: 1 } } },
          ],
        },
        {
          role: 'user',
          content: [
            {
              toolResult: {
                toolUseId: 't1',
                content: [{ text: 'seen' }, { image: { format: 'jpeg', source: { bytes: 'AA' } } }],
              },
            },
          ],
        },
      ],
      system: [{ text: 'A' }],
      inferenceConfig: { maxTokens: 4000, temperature: 1, topP: 0.9 },
      toolConfig: {
        tools: [{ toolSpec: { name: 'f', inputSchema: { json: { type: 'object' } } } }],
        toolChoice: { tool: { name: 'f' } },
      },
      additionalModelRequestFields: { thinking, top_k: 40 },
    });
  });

  test('request: what Converse cannot take is a 400 naming it', () => {
    const bad = (body: Record<string, unknown>, re: RegExp) =>
      assert.throws(
        () => pair.request(body, req(), state('anthropic-messages')),
        (e) => e instanceof GwError && e.status === 400 && re.test(e.detail),
      );
    bad({ messages: [{ role: 'user', content: [{ type: 'document' }] }] }, /"document" content block/);
    bad({ messages: [{ role: 'system', content: 'x' }] }, /role "system"/);
    bad({ messages: [], tools: [{ type: 'web_search_20250305', name: 'w' }] }, /server tool/);
    bad({}, /"messages" array/);
  });

  test('answer: reasoning, text and tool use as blocks; stop reasons; usage with cache reads', () => {
    const s = state('anthropic-messages');
    s.model = 'anthropic.claude';
    const out = pair.response(
      {
        output: {
          message: {
            role: 'assistant',
            content: [
              { reasoningContent: { reasoningText: { text: 'r', signature: 's' } } },
              { reasoningContent: { redactedContent: 'x' } },
              { text: 'a' },
              { toolUse: { toolUseId: 't', name: 'f', input: { q: 1 } } },
            ],
          },
        },
        stopReason: 'tool_use',
        usage: { inputTokens: 3, outputTokens: 4, cacheReadInputTokens: 10, cacheWriteInputTokens: 2 },
      },
      s,
    );
    assert.deepEqual(
      { ...out, id: undefined },
      {
        id: undefined,
        type: 'message',
        role: 'assistant',
        model: 'anthropic.claude',
        content: [
          { type: 'thinking', thinking: 'r', signature: 's' },
          { type: 'redacted_thinking', data: 'x' },
          { type: 'text', text: 'a' },
          { type: 'tool_use', id: 't', name: 'f', input: { q: 1 } },
        ],
        stop_reason: 'tool_use',
        stop_sequence: null,
        usage: {
          input_tokens: 5,
          output_tokens: 4,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 10,
        },
      },
    );
    assert.deepEqual(s.usage, { input: 15, output: 4, cachedInput: 10, cacheWrite: 2, reasoning: 0 });
    const stops = [
      'end_turn',
      'max_tokens',
      'stop_sequence',
      'guardrail_intervened',
      'model_context_window_exceeded',
    ];
    assert.deepEqual(
      stops.map((stopReason) => pair.response({ stopReason }, state('anthropic-messages'))?.stop_reason),
      ['end_turn', 'max_tokens', 'stop_sequence', 'refusal', 'max_tokens'],
    );
    assert.deepEqual(pair.error?.({ message: 'nope' }, 400), {
      type: 'error',
      error: { type: 'invalid_request_error', message: 'nope' },
    });
  });

  test('stream, a byte at a time: thinking, text and a tool call as Anthropic events; usage after messageStop', () => {
    const s = state('anthropic-messages', { stream: true });
    const out = feedBytes(
      pair.stream(s),
      frames([
        ['messageStart', { role: 'assistant' }],
        ['contentBlockDelta', { contentBlockIndex: 0, delta: { reasoningContent: { text: 'hm' } } }],
        ['contentBlockDelta', { contentBlockIndex: 0, delta: { reasoningContent: { signature: 'sg' } } }],
        ['contentBlockStop', { contentBlockIndex: 0 }],
        ['contentBlockDelta', { contentBlockIndex: 1, delta: { text: 'ok' } }],
        ['contentBlockStop', { contentBlockIndex: 1 }],
        ['contentBlockStart', { contentBlockIndex: 2, start: { toolUse: { toolUseId: 't', name: 'f' } } }],
        ['contentBlockDelta', { contentBlockIndex: 2, delta: { toolUse: { input: '{"q"' } } }],
        ['contentBlockDelta', { contentBlockIndex: 2, delta: { toolUse: { input: ':1}' } } }],
        ['contentBlockStop', { contentBlockIndex: 2 }],
        ['messageStop', { stopReason: 'tool_use' }],
        ['metadata', { usage: { inputTokens: 7, outputTokens: 8 } }],
      ]),
    );
    const evs = events(out).map(([type, data]) => [type, JSON.parse(String(data))]);
    assert.deepEqual(
      evs.map(([type]) => type),
      [
        'message_start',
        'content_block_start',
        'content_block_delta',
        'content_block_delta',
        'content_block_stop',
        'content_block_start',
        'content_block_delta',
        'content_block_stop',
        'content_block_start',
        'content_block_delta',
        'content_block_delta',
        'content_block_stop',
        'message_delta',
        'message_stop',
      ],
    );
    assert.deepEqual(evs[1]?.[1].content_block, { type: 'thinking', thinking: '', signature: '' });
    assert.deepEqual(evs[3]?.[1].delta, { type: 'signature_delta', signature: 'sg' });
    assert.deepEqual(evs[8]?.[1], {
      type: 'content_block_start',
      index: 2,
      content_block: { type: 'tool_use', id: 't', name: 'f', input: {} },
    });
    const delta = evs[12]?.[1];
    assert.deepEqual(
      [delta.delta.stop_reason, delta.usage.input_tokens, delta.usage.output_tokens],
      ['tool_use', 7, 8],
    );
    assert.deepEqual(s.usage, { input: 7, output: 8, cachedInput: 0, reasoning: 0 });
  });

  test('stream: cut before messageStop, or bytes that are not frames: an error event ends it', () => {
    const cut = feedBytes(
      pair.stream(state('anthropic-messages')),
      frames([
        ['messageStart', { role: 'assistant' }],
        ['contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'a' } }],
      ]),
    );
    assert.deepEqual(events(cut).at(-1)?.[0], 'error');
    assert.match(cut, /ended before its messageStop/);
    const garbage = pair.stream(state('anthropic-messages'));
    const out = String(garbage.write(Buffer.from([0, 0, 0, 1, 0, 0, 0, 0])) ?? '');
    assert.match(out, /^event: error\ndata: .*invalid event stream/);
    assert.equal(garbage.end(), undefined);
  });
});

describe('anthropic-messages__gemini-generate-content', () => {
  const pair = anthropicMessagesToGeminiGenerateContent;

  test('request: sampling, adaptive thinking, signatures back on the next part, tool results by name', () => {
    const out = pair.request(
      {
        temperature: 0.5,
        top_p: 0.8,
        top_k: 20,
        thinking: { type: 'adaptive' },
        tools: [{ name: 'f', input_schema: { type: 'object' } }],
        tool_choice: { type: 'none' },
        messages: [
          { role: 'user', content: 'hi' },
          {
            role: 'assistant',
            content: [
              { type: 'thinking', thinking: 'summary', signature: 's1' },
              { type: 'redacted_thinking', data: 'x' },
              { type: 'tool_use', id: 't1', name: 'f', input: { q: 1 } },
              { type: 'thinking', thinking: '', signature: 's2' },
            ],
          },
          {
            role: 'user',
            content: [{ type: 'tool_result', tool_use_id: 't1', content: 'boom', is_error: true }],
          },
        ],
      },
      req(false, false),
      state('anthropic-messages'),
    );
    assert.deepEqual(out.contents, [
      { role: 'user', parts: [{ text: 'hi' }] },
      { role: 'model', parts: [{ functionCall: { name: 'f', args: { q: 1 } }, thoughtSignature: 's1' }] },
      { role: 'user', parts: [{ functionResponse: { name: 'f', response: { error: 'boom' } } }] },
    ]);
    assert.deepEqual(out.generationConfig, {
      temperature: 0.5,
      topP: 0.8,
      topK: 20,
      thinkingConfig: { thinkingBudget: -1, includeThoughts: true },
    });
    assert.deepEqual(out.toolConfig, { functionCallingConfig: { mode: 'NONE' } });
    assert.throws(
      () =>
        pair.request(
          { messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: 'u' } }] }] },
          req(),
          state('anthropic-messages'),
        ),
      (e) => e instanceof GwError && e.status === 400 && /Gemini takes images inline only/.test(e.detail),
    );
  });

  test('answer: a blocked prompt is a refusal; usage with thoughts and cache', () => {
    const s = state('anthropic-messages');
    const out = pair.response(
      {
        promptFeedback: { blockReason: 'SAFETY' },
        usageMetadata: { promptTokenCount: 10, cachedContentTokenCount: 4, candidatesTokenCount: 0 },
      },
      s,
    );
    assert.deepEqual(
      [out?.stop_reason, out?.content, out?.usage],
      [
        'refusal',
        [],
        { input_tokens: 6, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 4 },
      ],
    );
    assert.deepEqual(
      pair.error?.({ error: { code: 400, message: 'bad key', status: 'INVALID_ARGUMENT' } }, 400),
      {
        type: 'error',
        error: { type: 'invalid_request_error', message: 'bad key' },
      },
    );
  });

  test('stream, a byte at a time: thoughts, a whole function call, the stop and usage at the finishReason', () => {
    const s = state('anthropic-messages', { stream: true });
    const data = (v: object) => `data: ${JSON.stringify(v)}\r\n\r\n`;
    const out = feed(
      pair.stream(s),
      data({
        candidates: [{ content: { parts: [{ text: 'th', thought: true }] } }],
        usageMetadata: { promptTokenCount: 5 },
        modelVersion: 'gemini-x',
        responseId: 'r1',
      }) +
        data({
          candidates: [
            {
              content: { parts: [{ functionCall: { name: 'f', args: { a: 1 } }, thoughtSignature: 'sg' }] },
              finishReason: 'STOP',
            },
          ],
          usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 3, thoughtsTokenCount: 2 },
        }),
    );
    const evs = events(out).map(([, d]) => JSON.parse(String(d)));
    assert.deepEqual(
      evs.map((e) => e.delta?.type ?? e.content_block?.type ?? e.type),
      [
        'message_start',
        'thinking',
        'thinking_delta',
        'signature_delta',
        'content_block_stop',
        'tool_use',
        'input_json_delta',
        'content_block_stop',
        'message_delta',
        'message_stop',
      ],
    );
    assert.equal(evs[0].message.id, 'msg_r1');
    assert.equal(evs[0].message.model, 'gemini-x');
    assert.equal(evs[0].message.usage.input_tokens, 5);
    assert.deepEqual(evs[6].delta, { type: 'input_json_delta', partial_json: '{"a":1}' });
    assert.deepEqual([evs[8].delta.stop_reason, evs[8].usage.output_tokens], ['tool_use', 5]);
    assert.deepEqual(s.usage, { input: 5, output: 5, cachedInput: 0, reasoning: 2 });
  });
});

describe('reasoning in the OpenAI chat pairs', () => {
  test('openai-chat__anthropic-messages: reasoning_effort as a thinking budget; thinking as reasoning_content', () => {
    const pair = openaiChatToAnthropicMessages;
    const ask = (body: Record<string, unknown>) =>
      pair.request({ messages: [{ role: 'user', content: 'x' }], ...body }, req(), state('openai-chat'));
    const medium = ask({ reasoning_effort: 'medium' });
    assert.deepEqual(
      [medium.thinking, medium.max_tokens],
      [
        { type: 'enabled', budget_tokens: THINKING_BUDGETS.medium },
        DEFAULT_MAX_TOKENS + (THINKING_BUDGETS.medium as number),
      ],
    );
    // The client's own cap holds both: the budget fits below it, or there is no thinking.
    assert.deepEqual(ask({ reasoning_effort: 'high', max_completion_tokens: 3000 }).thinking, {
      type: 'enabled',
      budget_tokens: 2999,
    });
    assert.equal(ask({ reasoning_effort: 'low', max_tokens: 1000 }).thinking, undefined);
    assert.equal(ask({ reasoning_effort: 'none' }).thinking, undefined);
    const out = pair.response(
      {
        id: 'msg_1',
        content: [
          { type: 'thinking', thinking: 'because', signature: 's' },
          { type: 'text', text: 'a' },
        ],
        stop_reason: 'end_turn',
      },
      state('openai-chat'),
    );
    const message = (out?.choices as { message: Record<string, unknown> }[] | undefined)?.[0]?.message;
    assert.deepEqual([message?.reasoning_content, message?.content], ['because', 'a']);
    const streamed = feed(
      pair.stream(state('openai-chat', { stream: true })),
      sse('message_start', { message: { id: 'm', model: 'c', usage: { input_tokens: 1 } } }) +
        sse('content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking: 'hm' } }) +
        sse('content_block_delta', { index: 0, delta: { type: 'signature_delta', signature: 's' } }),
    );
    assert.match(streamed, /"delta":\{"reasoning_content":"hm"\}/);
    assert.doesNotMatch(streamed, /signature/);
  });

  test('openai-chat__bedrock-converse and __gemini-generate-content: reasoning as reasoning_content', () => {
    const bedrock = openaiChatToBedrockConverse.response(
      {
        output: {
          message: {
            content: [{ reasoningContent: { reasoningText: { text: 'r', signature: 's' } } }, { text: 'a' }],
          },
        },
        stopReason: 'end_turn',
      },
      state('openai-chat'),
    );
    const gemini = openaiChatToGeminiGenerateContent.response(
      {
        candidates: [
          { content: { parts: [{ text: 't', thought: true }, { text: 'b' }] }, finishReason: 'STOP' },
        ],
        usageMetadata: { promptTokenCount: 1, candidatesTokenCount: 2, thoughtsTokenCount: 3 },
      },
      state('openai-chat'),
    );
    const msg = (c: Record<string, unknown> | undefined) =>
      (c?.choices as { message: Record<string, unknown> }[] | undefined)?.[0]?.message;
    assert.deepEqual([msg(bedrock)?.reasoning_content, msg(bedrock)?.content], ['r', 'a']);
    assert.deepEqual([msg(gemini)?.reasoning_content, msg(gemini)?.content], ['t', 'b']);
    assert.deepEqual(gemini?.usage, {
      prompt_tokens: 1,
      completion_tokens: 5,
      total_tokens: 6,
      completion_tokens_details: { reasoning_tokens: 3 },
    });
    const s = state('openai-chat', { stream: true });
    const streamed = feed(
      openaiChatToGeminiGenerateContent.stream(s),
      `data: ${JSON.stringify({ candidates: [{ content: { parts: [{ text: 'th', thought: true }] } }] })}\r\n\r\n`,
    );
    assert.match(streamed, /"delta":\{"reasoning_content":"th"\}/);
  });
});
