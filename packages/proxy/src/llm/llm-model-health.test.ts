// A model's `health` (agentgateway's outlier detection on llm.models[]): unhealthy answers eject the
// model for a while, and a virtual model's routing passes it by — a failover group wholly out is not
// tried, a weighted choice leaves it out. The official `openai` client against gw; fake providers in
// OpenAI's wire format, one of which fails while the test says so.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { ConfigError } from '@gw/api';
import { type FakeOpenAI, startFakeOpenAI } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import OpenAI from 'openai';
import { loadConfigText } from '../config/load.ts';

const messages = [{ role: 'user' as const, content: 'Hello!' }];

let failing = true;
let flaky: FakeOpenAI;
let steady: FakeOpenAI;
let proxy: TestProxy;

before(async () => {
  flaky = await startFakeOpenAI({ name: 'flaky', answer: () => (failing ? { error: 503 } : undefined) });
  steady = await startFakeOpenAI({ name: 'steady' });
  proxy = await startProxy(`config:
  adminAddr: "off"
llm:
  port: 0
  models:
  - name: flaky
    provider: openai
    visibility: internal
    params: {apiKey: k, baseUrl: "${flaky.origin}/v1"}
    health: {eviction: {consecutiveFailures: 1, duration: 30s}}
  - name: steady
    provider: openai
    visibility: internal
    params: {apiKey: k, baseUrl: "${steady.origin}/v1"}
  virtualModels:
  - name: resilient
    routing:
      failover:
        targets: [{model: flaky, priority: 0}, {model: steady, priority: 1}]
`);
});

after(async () => {
  await proxy?.close();
  await flaky?.close();
  await steady?.close();
});

beforeEach(() => {
  failing = true;
});

const chat = (model: string) =>
  new OpenAI({ apiKey: 'sk-client', baseURL: proxy.url('/v1'), maxRetries: 0 }).chat.completions.create({
    model,
    messages,
  });

describe('health on a model', () => {
  test('a 503 ejects the model: the next requests skip its failover group without calling it', async () => {
    const before = { flaky: flaky.seen.length, steady: steady.seen.length };
    const first = await chat('resilient');
    assert.equal(first.object, 'chat.completion');
    assert.equal(flaky.seen.length, before.flaky + 1, 'tried first, answered 503');
    assert.equal(steady.seen.length, before.steady + 1, 'the next group answered');
    failing = false; // flaky would answer now, but it is ejected for 30 s
    for (let i = 0; i < 3; i++) await chat('resilient');
    assert.equal(flaky.seen.length, before.flaky + 1, 'not called while ejected');
    assert.equal(steady.seen.length, before.steady + 4);
  });
});

describe('config', () => {
  test('health.active on a model is refused, naming the field (providers are not probed)', () => {
    assert.throws(
      () =>
        loadConfigText(
          'llm.yaml',
          `llm:
  port: 4000
  models:
  - {name: m, provider: openai, params: {apiKey: k}, health: {active: {path: /healthz}}}
`,
          process.cwd(),
        ),
      (e: unknown) =>
        e instanceof ConfigError && /llm\.models\[0\]\.health\.active: health\.active probes/.test(e.message),
    );
  });
});
