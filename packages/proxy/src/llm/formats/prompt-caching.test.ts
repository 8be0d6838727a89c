// promptCaching's boundaries on requests in Anthropic's and Bedrock Converse's own shapes (the rules);
// llm-prompt-caching.test.ts sends real clients through gw to fake providers (the wiring).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { LlmPromptCachingIR } from '../../config/ir.ts';
import { applyPromptCaching } from './prompt-caching.ts';

const ALL: LlmPromptCachingIR = { system: true, messages: true, tools: true, minTokens: null, offset: 0 };
const EPHEMERAL = { type: 'ephemeral' };
const POINT = { cachePoint: { type: 'default' } };
const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(' ');

const conversation = () => [
  { role: 'user', content: 'first' },
  { role: 'assistant', content: [{ type: 'text', text: 'reply' }] },
  { role: 'user', content: 'second' },
];

describe('Anthropic messages: cache_control on the last block of each boundary', () => {
  test('system, history and tools are marked; the current turn is not', () => {
    const body: Record<string, unknown> = {
      system: 'you are helpful',
      messages: conversation(),
      tools: [
        { name: 'a', input_schema: {} },
        { name: 'b', input_schema: {} },
      ],
    };
    applyPromptCaching('anthropic-messages', 'claude', body, ALL);
    assert.deepEqual(body.system, [{ type: 'text', text: 'you are helpful', cache_control: EPHEMERAL }]);
    const m = body.messages as { content: unknown }[];
    assert.equal(m[0]?.content, 'first');
    assert.deepEqual(m[1]?.content, [{ type: 'text', text: 'reply', cache_control: EPHEMERAL }]);
    assert.equal(m[2]?.content, 'second');
    assert.deepEqual((body.tools as object[])[1], { name: 'b', input_schema: {}, cache_control: EPHEMERAL });
    assert.equal(JSON.stringify((body.tools as object[])[0]).includes('cache_control'), false);
  });

  test('minTokens (words × 1.3) gates the system prompt only; cacheTools off leaves the tools', () => {
    const c = { ...ALL, tools: false, minTokens: 1024 };
    const small: Record<string, unknown> = {
      system: words(700),
      messages: conversation(),
      tools: [{ name: 'a' }],
    };
    applyPromptCaching('anthropic-messages', 'claude', small, c);
    assert.equal(typeof small.system, 'string', '700 words are 910 tokens: not marked');
    assert.match(JSON.stringify(small.messages), /cache_control/);
    assert.deepEqual(small.tools, [{ name: 'a' }]);
    const large: Record<string, unknown> = { system: words(800), messages: [] };
    applyPromptCaching('anthropic-messages', 'claude', large, c);
    assert.deepEqual((large.system as { cache_control?: unknown }[])[0]?.cache_control, EPHEMERAL);
  });

  test('cacheMessageOffset walks the history marker back, clamped at the first message', () => {
    const body: Record<string, unknown> = { messages: conversation() };
    applyPromptCaching('anthropic-messages', 'claude', body, { ...ALL, offset: 5 });
    assert.deepEqual((body.messages as { content: unknown }[])[0]?.content, [
      { type: 'text', text: 'first', cache_control: EPHEMERAL },
    ]);
    const one: Record<string, unknown> = { messages: [{ role: 'user', content: 'only' }] };
    applyPromptCaching('anthropic-messages', 'claude', one, ALL);
    assert.deepEqual(one.messages, [{ role: 'user', content: 'only' }], 'no history yet');
  });

  test('the client’s markers count against the four and are never replaced', () => {
    const mine = { type: 'ephemeral', ttl: '1h' };
    const body: Record<string, unknown> = {
      system: [{ type: 'text', text: 's', cache_control: mine }],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'a', cache_control: mine }] },
        { role: 'assistant', content: [{ type: 'text', text: 'b', cache_control: mine }] },
        { role: 'user', content: 'c' },
      ],
      tools: [{ name: 't' }],
    };
    applyPromptCaching('anthropic-messages', 'claude', body, ALL);
    // three of the client's: the system and history boundaries are already marked, the tools get the fourth
    assert.deepEqual((body.system as { cache_control: unknown }[])[0]?.cache_control, mine);
    assert.deepEqual((body.tools as object[])[0], { name: 't', cache_control: EPHEMERAL });
    const full: Record<string, unknown> = {
      messages: Array.from({ length: 5 }, (_, i) => ({
        role: i % 2 ? 'assistant' : 'user',
        content: [{ type: 'text', text: String(i), ...(i < 4 ? { cache_control: mine } : {}) }],
      })),
      tools: [{ name: 't' }],
    };
    applyPromptCaching('anthropic-messages', 'claude', full, ALL);
    assert.deepEqual(full.tools, [{ name: 't' }], 'four markers already: nothing added');
  });

  test('a block type that takes no marker is skipped for the one before it', () => {
    const body: Record<string, unknown> = {
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'q' },
            { type: 'thinking', thinking: 'x' },
          ],
        },
        { role: 'user', content: 'now' },
      ],
    };
    applyPromptCaching('anthropic-messages', 'claude', body, ALL);
    assert.deepEqual((body.messages as { content: unknown[] }[])[0]?.content, [
      { type: 'text', text: 'q', cache_control: EPHEMERAL },
      { type: 'thinking', thinking: 'x' },
    ]);
  });
});

describe('Bedrock Converse: cachePoint blocks after each boundary', () => {
  const converse = () => ({
    system: [{ text: 'you are helpful' }],
    messages: [
      { role: 'user', content: [{ text: 'first' }] },
      { role: 'assistant', content: [{ text: 'reply' }] },
      { role: 'user', content: [{ text: 'second' }] },
    ],
    toolConfig: { tools: [{ toolSpec: { name: 'a' } }] },
  });

  test('a Claude model: after the system prompt, the history and the tools', () => {
    const body: Record<string, unknown> = converse();
    applyPromptCaching('bedrock-converse', 'anthropic.claude-3-5-haiku-20241022-v1:0', body, ALL);
    assert.deepEqual(body.system, [{ text: 'you are helpful' }, POINT]);
    assert.deepEqual((body.messages as { content: unknown[] }[])[1]?.content, [{ text: 'reply' }, POINT]);
    assert.deepEqual((body.messages as { content: unknown[] }[])[2]?.content, [{ text: 'second' }]);
    assert.deepEqual((body.toolConfig as { tools: unknown[] }).tools, [{ toolSpec: { name: 'a' } }, POINT]);
  });

  test('a model that does not cache (Llama, Claude v2) is left as it is', () => {
    for (const model of ['meta.llama3-70b-instruct-v1:0', 'anthropic.claude-v2:1']) {
      const body: Record<string, unknown> = converse();
      applyPromptCaching('bedrock-converse', model, body, ALL);
      assert.deepEqual(body, converse(), model);
    }
  });

  test('other formats are not touched', () => {
    const body: Record<string, unknown> = { messages: conversation() };
    applyPromptCaching('openai-chat', 'gpt-4o', body, ALL);
    assert.deepEqual(body, { messages: conversation() });
  });
});
