// An API key's allowedModels (agentgateway's): through llm.policies.apiKey, each key may use only the
// models it names (exact, prefix* or *), sees only those in /v1/models, and is refused any other with
// a 403 in its client's own error shape; a key without the field may use every model, an empty list
// none. The official openai and Anthropic clients against fake providers in their wire formats.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import {
  FAKE_ANTHROPIC_REPLY,
  FAKE_REPLY,
  type FakeAnthropic,
  type FakeOpenAI,
  startFakeAnthropic,
  startFakeOpenAI,
} from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import OpenAI from 'openai';

let openai: FakeOpenAI;
let anthropic: FakeAnthropic;
let proxy: TestProxy;
const messages = [{ role: 'user' as const, content: 'Hello!' }];
const sha = (k: string) => `sha256:${createHash('sha256').update(k).digest('hex')}`;

const gpt = (key: string) => new OpenAI({ apiKey: key, baseURL: proxy.url('/v1'), maxRetries: 0 });
const claude = (key: string) =>
  new Anthropic({ apiKey: null, authToken: key, baseURL: proxy.url(''), maxRetries: 0 });

before(async () => {
  openai = await startFakeOpenAI({ name: 'openai', apiKey: 'sk-provider' });
  anthropic = await startFakeAnthropic({ name: 'anthropic', apiKey: 'sk-ant-provider' });
  proxy = await startProxy(`config:
  adminAddr: "off"
llm:
  port: 0
  policies:
    apiKey:
      mode: strict
      keys:
        alice: {key: k-alice, metadata: {team: web}, allowedModels: ["gpt-*"]}
        bob: {keyHash: "${sha('k-bob')}", allowedModels: []}
        carol: {key: k-carol}
        dave: {key: k-dave, allowedModels: [claude-sonnet-4-5, fast]}
  models:
  - name: gpt-4o-mini
    provider: openai
    params: {apiKey: sk-provider, baseUrl: "${openai.origin}/v1"}
  - name: claude-sonnet-4-5
    provider: anthropic
    params: {apiKey: sk-ant-provider, baseUrl: "${anthropic.origin}/v1"}
  virtualModels:
  - name: fast
    routing: {failover: {targets: [{model: gpt-4o-mini, priority: 0}]}}
`);
});

after(async () => {
  await proxy?.close();
  await Promise.all([openai?.close(), anthropic?.close()]);
});

async function refused(p: Promise<unknown>) {
  const err = await p.catch((e: unknown) => e);
  assert.ok(err instanceof OpenAI.APIError || err instanceof Anthropic.APIError, String(err));
  assert.equal(err.status, 403);
  return err;
}

const listed = async (key: string) => (await gpt(key).models.list()).data.map((m) => m.id).sort();

describe('allowedModels', () => {
  test('a key limited to gpt-*: its model answers, another is a 403 in OpenAI’s shape', async () => {
    const r = await gpt('k-alice').chat.completions.create({ model: 'gpt-4o-mini', messages });
    assert.equal(r.choices[0]?.message.content, FAKE_REPLY);
    const calls = anthropic.seen.length;
    const err = await refused(
      gpt('k-alice').chat.completions.create({ model: 'claude-sonnet-4-5', messages }),
    );
    assert.match(err.message, /this API key may not use the model "claude-sonnet-4-5"/);
    assert.equal((err as InstanceType<typeof OpenAI.APIError>).type, 'permission_error');
    assert.equal(anthropic.seen.length, calls, 'the provider was not asked');
  });

  test('the Anthropic client is refused in Anthropic’s error shape', async () => {
    const err = await refused(
      claude('k-alice').messages.create({ model: 'claude-sonnet-4-5', max_tokens: 32, messages }),
    );
    assert.deepEqual((err as InstanceType<typeof Anthropic.APIError>).error, {
      type: 'error',
      error: { type: 'permission_error', message: 'this API key may not use the model "claude-sonnet-4-5"' },
    });
  });

  test('a virtual model is allowed by its own name, not by its targets’', async () => {
    const m = await claude('k-dave').messages.create({
      model: 'claude-sonnet-4-5',
      max_tokens: 32,
      messages,
    });
    assert.equal(m.content[0]?.type === 'text' ? m.content[0].text : '', FAKE_ANTHROPIC_REPLY);
    const r = await gpt('k-dave').chat.completions.create({ model: 'fast', messages });
    assert.equal(r.choices[0]?.message.content, FAKE_REPLY);
    await refused(gpt('k-dave').chat.completions.create({ model: 'gpt-4o-mini', messages }));
  });

  test('an empty list allows no model; a key without the field every model', async () => {
    await refused(gpt('k-bob').chat.completions.create({ model: 'gpt-4o-mini', messages }));
    const r = await gpt('k-carol').chat.completions.create({ model: 'claude-sonnet-4-5', messages });
    assert.equal(r.choices[0]?.message.content, FAKE_ANTHROPIC_REPLY);
  });

  test('/v1/models lists what the key may use', async () => {
    assert.deepEqual(await listed('k-alice'), ['gpt-4o-mini']);
    assert.deepEqual(await listed('k-bob'), []);
    assert.deepEqual(await listed('k-carol'), ['claude-sonnet-4-5', 'fast', 'gpt-4o-mini']);
    assert.deepEqual(await listed('k-dave'), ['claude-sonnet-4-5', 'fast']);
  });

  test('the key’s metadata is still apiKey.* and the provider gets its own key', async () => {
    await gpt('k-alice').chat.completions.create({ model: 'gpt-4o-mini', messages });
    assert.equal(openai.seen[openai.seen.length - 1]?.headers.authorization, 'Bearer sk-provider');
  });
});
