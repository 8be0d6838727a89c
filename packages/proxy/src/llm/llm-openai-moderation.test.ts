// OpenAI's inline moderation on an ai backend's openAI provider (agentgateway's
// `provider.openAI.moderation`): the configured `moderation` parameter goes into every chat
// completions and responses request sent to the provider, replacing the client's, translated requests
// included; embeddings and passthrough routes are left as they are (with a warning), and the moderation results OpenAI
// answers with reach an OpenAI client unchanged. Real parts: the official `openai` and
// `@anthropic-ai/sdk` clients, and a fake provider speaking OpenAI's wire format.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { ConfigError } from '@gw/api';
import { FAKE_REPLY, FAKE_USAGE, type FakeLlmRequest, type FakeOpenAI, startFakeOpenAI } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import OpenAI from 'openai';
import { loadConfigText } from '../config/load.ts';

let provider: FakeOpenAI;
let proxy: TestProxy;

const lastSeen = () => provider.seen[provider.seen.length - 1] as FakeLlmRequest;
const messages = [{ role: 'user' as const, content: 'Hello!' }];
const openai = (prefix: string) =>
  new OpenAI({ apiKey: 'sk-client', baseURL: proxy.url(`${prefix}/v1`), maxRetries: 0 });
const BLOCK_INPUT = {
  model: 'omni-moderation-latest',
  policy: { input: { mode: 'block' }, output: { mode: 'score' } },
};

before(async () => {
  provider = await startFakeOpenAI({ name: 'openai', apiKey: 'sk-provider' });
  const ai = (name: string, openAI: string, policies = '') => `      - ai:
          name: ${name}
          provider: {openAI: ${openAI}}
          hostOverride: "127.0.0.1:${provider.port}"
          policies:
            backendAuth: {key: sk-provider}
${policies}`;
  proxy = await startProxy(`config:
  adminAddr: "off"
binds:
- port: 0
  listeners:
  - routes:
    - matches: [{path: {pathPrefix: /moderated}}]
      backends:
${ai('moderated', '{moderation: {policy: {input: {mode: block}, output: {mode: score}}}}')}
    - matches: [{path: {pathPrefix: /defaults}}]
      backends:
${ai('defaults', '{model: gpt-4o-mini, moderation: {}}')}
    - matches: [{path: {pathPrefix: /plain}}]
      backends:
${ai('plain', '{}')}
    - matches: [{path: {pathPrefix: /passthrough}}]
      backends:
${ai(
  'passthrough',
  '{moderation: {model: text-moderation-stable}}',
  `            ai:
              routes: {"*": passthrough}
`,
)}
`);
});

after(async () => {
  await proxy?.close();
  await provider?.close();
});

describe('openAI provider moderation', () => {
  test('a chat completion carries the configured moderation, and its results reach the client', async () => {
    const completion = await openai('/moderated').chat.completions.create({ model: 'gpt-4o', messages });
    assert.deepEqual(lastSeen().json?.moderation, BLOCK_INPUT);
    assert.equal(lastSeen().json?.model, 'gpt-4o');
    assert.equal(completion.choices[0]?.message.content, FAKE_REPLY);
    const input = completion.moderation?.input;
    assert.equal(input?.type, 'moderation_results');
    assert.equal(input?.type === 'moderation_results' && input.results[0]?.flagged, false);
    assert.equal(input?.type === 'moderation_results' && input.model, 'omni-moderation-latest');
    assert.equal(completion.usage?.prompt_tokens, FAKE_USAGE.chat.prompt_tokens);
  });

  test("the client's own moderation is replaced: the operator's policy holds", async () => {
    await openai('/moderated').chat.completions.create({
      model: 'gpt-4o',
      messages,
      moderation: { model: 'text-moderation-stable', policy: { input: { mode: 'score' } } },
    });
    assert.deepEqual(lastSeen().json?.moderation, BLOCK_INPUT);
  });

  test('a stream carries it too, and its moderation chunk reaches the client', async () => {
    const stream = await openai('/moderated').chat.completions.create({
      model: 'gpt-4o',
      messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let moderated = 0;
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.moderation) moderated++;
      if (chunk.usage) usage = chunk.usage;
    }
    assert.deepEqual(lastSeen().json?.moderation, BLOCK_INPUT);
    assert.equal(lastSeen().json?.stream, true);
    assert.equal(moderated, 1);
    assert.ok(text.length > 0);
    assert.equal(usage?.completion_tokens, FAKE_USAGE.stream.completion_tokens);
  });

  test('a Responses API request carries it, and the response keeps its moderation', async () => {
    const response = await openai('/moderated').responses.create({ model: 'gpt-4o', input: 'Hello!' });
    assert.deepEqual(lastSeen().json?.moderation, BLOCK_INPUT);
    assert.ok(lastSeen().url.endsWith('/v1/responses'));
    assert.equal(response.moderation?.input.type, 'moderation_result');
  });

  test('an Anthropic client translated to chat completions is moderated too (JSON and stream)', async () => {
    const anthropic = new Anthropic({ apiKey: 'sk-client', baseURL: proxy.url('/moderated'), maxRetries: 0 });
    const message = await anthropic.messages.create({ model: 'gpt-4o', max_tokens: 64, messages });
    assert.ok(lastSeen().url.endsWith('/v1/chat/completions'));
    assert.deepEqual(lastSeen().json?.moderation, BLOCK_INPUT);
    assert.equal(message.content[0]?.type === 'text' && message.content[0].text, FAKE_REPLY);
    // the moderation chunk (no choices) passes through the translation without a stray event
    const events: string[] = [];
    let text = '';
    const stream = anthropic.messages.stream({ model: 'gpt-4o', max_tokens: 64, messages });
    for await (const e of stream) {
      events.push(e.type);
      if (e.type === 'content_block_delta' && e.delta.type === 'text_delta') text += e.delta.text;
    }
    assert.deepEqual(lastSeen().json?.moderation, BLOCK_INPUT);
    assert.ok(text.length > 0);
    assert.equal(events[0], 'message_start');
    assert.equal(events.at(-1), 'message_stop');
    assert.equal(events.filter((e) => e === 'message_stop').length, 1);
  });

  test('moderation: {} sends the default model and no policy', async () => {
    await openai('/defaults').chat.completions.create({ model: 'anything', messages });
    assert.deepEqual(lastSeen().json?.moderation, { model: 'omni-moderation-latest' });
    assert.equal(lastSeen().json?.model, 'gpt-4o-mini');
  });

  test('embeddings are not moderated', async () => {
    await openai('/moderated').embeddings.create({ model: 'text-embedding-3-small', input: 'Hello!' });
    assert.ok(lastSeen().url.endsWith('/v1/embeddings'));
    assert.equal(lastSeen().json?.moderation, undefined);
  });

  test("without the setting, and on a passthrough route, the client's moderation passes unchanged", async () => {
    const own = { model: 'text-moderation-stable', policy: { input: { mode: 'score' as const } } };
    await openai('/plain').chat.completions.create({ model: 'gpt-4o', messages, moderation: own });
    assert.deepEqual(lastSeen().json?.moderation, own);
    await openai('/plain').chat.completions.create({ model: 'gpt-4o', messages });
    assert.equal(lastSeen().json?.moderation, undefined);
    await openai('/passthrough').chat.completions.create({ model: 'gpt-4o', messages });
    assert.equal(lastSeen().json?.moderation, undefined);
  });

  test('a provider whose ai routes pass requests through is warned that those go unmoderated', () => {
    const cfg = loadConfigText(
      'gw.yaml',
      `binds:\n- port: 0\n  listeners:\n  - routes:\n    - backends:\n      - ai: {name: a, provider: {openAI: {moderation: {}}}, policies: {ai: {routes: {/v1/chat/completions: completions, "*": passthrough}}}}\n`,
      process.cwd(),
    );
    const w = cfg.warnings.find((x) => x.path.endsWith('provider.openAI.moderation'));
    assert.match(w?.message ?? JSON.stringify(cfg.warnings), /\* \(passthrough\) go unmoderated/);
    const quiet = loadConfigText(
      'gw.yaml',
      `binds:\n- port: 0\n  listeners:\n  - routes:\n    - backends:\n      - ai: {name: a, provider: {openAI: {moderation: {}}}}\n`,
      process.cwd(),
    );
    assert.deepEqual(quiet.warnings, []);
  });

  test('a bad setting is a config error naming the field', () => {
    const config = (m: string) =>
      `binds:\n- port: 0\n  listeners:\n  - routes:\n    - backends:\n      - ai: {name: a, provider: {openAI: {moderation: ${m}}}}\n`;
    for (const [m, field, reason] of [
      ['{policy: {input: {mode: Block}}}', 'moderation.policy.input.mode', /score|block/],
      ['{policy: {output: {}}}', 'moderation.policy.output.mode', /./],
      ['{model: ""}', 'moderation.model', /./],
      ['{mode: block}', 'moderation', /mode/],
    ] as const) {
      assert.throws(
        () => loadConfigText('gw.yaml', config(m), process.cwd()),
        (e: unknown) => e instanceof ConfigError && e.message.includes(field) && reason.test(e.message),
        m,
      );
    }
  });
});
