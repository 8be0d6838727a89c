// A model entry's own rules, as agentgateway's `llm.models[]` has them: `matches` (request headers
// that, besides the name, pick the entry serving a request) and `authorization` (rules a request
// must pass to be sent to the model). The official `openai` client against gw, gw against fake
// providers speaking OpenAI's wire format.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ConfigError } from '@gw/api';
import { type FakeOpenAI, startFakeOpenAI } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import OpenAI from 'openai';
import { loadConfigText } from '../config/load.ts';

const messages = [{ role: 'user' as const, content: 'Hello!' }];

let premium: FakeOpenAI;
let standard: FakeOpenAI;
let proxy: TestProxy;

before(async () => {
  premium = await startFakeOpenAI({ name: 'premium' });
  standard = await startFakeOpenAI({ name: 'standard' });
  proxy = await startProxy(`config:
  adminAddr: "off"
llm:
  port: 0
  models:
  - name: gpt-4o-mini
    provider: openai
    params: {apiKey: k, baseUrl: "${premium.origin}/v1"}
    matches:
    - headers: [{name: x-tier, value: {exact: premium}}]
    - headers: [{name: x-team, value: {regex: "research-.*"}}]
  - name: gpt-4o-mini
    provider: openai
    params: {apiKey: k, baseUrl: "${standard.origin}/v1"}
  - name: beta-model
    provider: openai
    params: {apiKey: k, baseUrl: "${premium.origin}/v1"}
    matches: [{headers: [{name: x-beta, value: {exact: "1"}}]}]
  - name: capped
    provider: openai
    params: {apiKey: k, baseUrl: "${standard.origin}/v1"}
    authorization:
      rules: ['has(llmRequest.max_tokens) && llmRequest.max_tokens <= 100']
  virtualModels:
  - name: auto
    routing:
      weighted:
        targets: [{model: gpt-4o-mini}]
`);
});

after(async () => {
  await proxy?.close();
  await premium?.close();
  await standard?.close();
});

const client = (headers: Record<string, string> = {}) =>
  new OpenAI({ apiKey: 'sk-client', baseURL: proxy.url('/v1'), maxRetries: 0, defaultHeaders: headers });

/** Which fake provider answered the next call. */
async function servedBy(call: () => Promise<unknown>): Promise<string> {
  const before = [premium.seen.length, standard.seen.length];
  await call();
  if (premium.seen.length > (before[0] as number)) return 'premium';
  if (standard.seen.length > (before[1] as number)) return 'standard';
  return 'none';
}

describe('matches: entries of one name told apart by request headers', () => {
  test('the entry whose header matches serves; the entry without matches serves the rest', async () => {
    const chat = (h: Record<string, string>) => () =>
      client(h).chat.completions.create({ model: 'gpt-4o-mini', messages });
    assert.equal(await servedBy(chat({ 'x-tier': 'premium' })), 'premium');
    assert.equal(await servedBy(chat({ 'x-team': 'research-nlp' })), 'premium', 'the second match, a regex');
    assert.equal(await servedBy(chat({ 'x-tier': 'basic' })), 'standard');
    assert.equal(await servedBy(chat({})), 'standard');
  });

  test('a virtual model target reaches the entries of its name the same way', async () => {
    const chat = (h: Record<string, string>) => () =>
      client(h).chat.completions.create({ model: 'auto', messages });
    assert.equal(await servedBy(chat({ 'x-tier': 'premium' })), 'premium');
    assert.equal(await servedBy(chat({})), 'standard');
  });

  test('a name whose only entry needs a header: without it, 404 in OpenAI’s shape naming the model', async () => {
    assert.equal(
      await servedBy(() =>
        client({ 'x-beta': '1' }).chat.completions.create({ model: 'beta-model', messages }),
      ),
      'premium',
    );
    await assert.rejects(
      client().chat.completions.create({ model: 'beta-model', messages }),
      (e: unknown) =>
        e instanceof OpenAI.NotFoundError && /no entry of model beta-model matches/.test(e.message),
    );
  });

  test('/v1/models lists a name once, whatever entries it has', async () => {
    const ids = [];
    for await (const m of client().models.list()) ids.push(m.id);
    assert.deepEqual(ids.sort(), ['auto', 'beta-model', 'capped', 'gpt-4o-mini']);
  });
});

describe('authorization on a model', () => {
  test('a request the rules allow is served; one they do not is 403 in OpenAI’s shape, the provider never called', async () => {
    assert.equal(
      await servedBy(() => client().chat.completions.create({ model: 'capped', messages, max_tokens: 50 })),
      'standard',
    );
    const before = standard.seen.length;
    await assert.rejects(
      client().chat.completions.create({ model: 'capped', messages, max_tokens: 500 }),
      (e: unknown) => e instanceof OpenAI.PermissionDeniedError && /authorization denied/.test(e.message),
    );
    assert.equal(standard.seen.length, before);
  });
});

describe('config errors name the field', () => {
  const load = (model: string) =>
    loadConfigText(
      'llm.yaml',
      `llm:
  port: 4000
  models:
  - name: m
    provider: openai
    params: {apiKey: k}
${model}`,
      process.cwd(),
    );
  test('a header regex that does not compile', () => {
    assert.throws(
      () => load('    matches: [{headers: [{name: x-a, value: {regex: "("}}]}]\n'),
      (e: unknown) =>
        e instanceof ConfigError &&
        /llm\.models\[0\]\.matches\[0\]\.headers\[0\]\.value\.regex: invalid regular expression/.test(
          e.message,
        ),
    );
  });
  test('a finalTransformation that is not CEL', () => {
    assert.throws(
      () => load("    finalTransformation: {max_tokens: 'llmRequest.max_tokens *'}\n"),
      (e: unknown) =>
        e instanceof ConfigError && /llm\.models\[0\]\.finalTransformation\.max_tokens/.test(e.message),
    );
  });
  test('an authorization rule that is not CEL', () => {
    assert.throws(
      () => load("    authorization: {rules: ['llmRequest.model ==']}\n"),
      (e: unknown) =>
        e instanceof ConfigError && /llm\.models\[0\]\.authorization\.rules\[0\]/.test(e.message),
    );
  });
  test('an empty matches list is no condition (agentgateway accepts it too)', () => {
    const { ir } = load('    matches: []\n');
    const target = ir.binds[0]?.listeners[0]?.routes[0]?.backends[0]?.target;
    assert.ok(target && 'kind' in target && target.kind === 'ai');
    assert.equal(target.models[0]?.matches, undefined);
  });
});
