// A model's `health` (agentgateway's outlier detection on llm.models[]): unhealthy answers eject the
// model for a while, and a virtual model's routing passes it by — a failover group wholly out is not
// tried, a weighted choice leaves it out. health.active probes a self-hosted server's health
// endpoint, and a model failing it is passed by before any request fails. The official `openai`
// client against gw; fake providers in OpenAI's wire format, one of which fails while the test says.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { eventually, type FakeOpenAI, httpGet, startFakeOpenAI } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import OpenAI from 'openai';
import pino from 'pino';
import { loadConfigText } from '../config/load.ts';
import { sharedMemoryOf } from '../policies/shared-memory.ts';
import { Supervisor } from '../server/supervisor.ts';

const messages = [{ role: 'user' as const, content: 'Hello!' }];

let failing = true;
let healthStatus = 200;
let flaky: FakeOpenAI;
let steady: FakeOpenAI;
let selfHosted: FakeOpenAI;
let proxy: TestProxy;

before(async () => {
  flaky = await startFakeOpenAI({ name: 'flaky', answer: () => (failing ? { error: 503 } : undefined) });
  steady = await startFakeOpenAI({ name: 'steady' });
  selfHosted = await startFakeOpenAI({ name: 'self-hosted', health: () => healthStatus });
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
  - name: vllm
    provider: openai
    visibility: internal
    params: {baseUrl: "${selfHosted.origin}/v1"}
    health:
      active: {path: /health, interval: 50ms, timeout: 1s, unhealthyThreshold: 2, healthyThreshold: 1}
  virtualModels:
  - name: resilient
    routing:
      failover:
        targets: [{model: flaky, priority: 0}, {model: steady, priority: 1}]
  - name: probed
    routing:
      failover:
        targets: [{model: vllm, priority: 0}, {model: steady, priority: 1}]
`);
});

after(async () => {
  await proxy?.close();
  await flaky?.close();
  await steady?.close();
  await selfHosted?.close();
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

describe('health on the providers of an ai backend', () => {
  test('two providers on one host (two API keys) are ejected apart: a failing key passes to the other, not to the next group', async (t) => {
    // one OpenAI-compatible host; the key sk-1 is refused (503), sk-2 served
    const shared = await startFakeOpenAI({
      name: 'shared',
      answer: (r) => (r.headers.authorization === 'Bearer sk-1' ? { error: 503 } : undefined),
    });
    const other = await startFakeOpenAI({ name: 'other' });
    const p = await startProxy(`config:
  adminAddr: "off"
binds:
- port: 0
  listeners:
  - routes:
    - backends:
      - ai:
          groups:
          - providers:
            - {name: key1, provider: {openAI: {}}, hostOverride: "127.0.0.1:${shared.port}",
               policies: {backendAuth: {key: sk-1}, health: {eviction: {consecutiveFailures: 1, duration: 30s}}}}
          - providers:
            - {name: key2, provider: {openAI: {}}, hostOverride: "127.0.0.1:${shared.port}",
               policies: {backendAuth: {key: sk-2}, health: {eviction: {consecutiveFailures: 1, duration: 30s}}}}
          - providers:
            - {name: other, provider: {openAI: {}}, hostOverride: "127.0.0.1:${other.port}", policies: {backendAuth: {key: sk-3}}}
`);
    t.after(async () => {
      await p.close();
      await shared.close();
      await other.close();
    });
    const client = new OpenAI({ apiKey: 'sk-client', baseURL: p.url('/v1'), maxRetries: 0 });
    const keys = () => shared.seen.map((r) => r.headers.authorization);
    for (let i = 0; i < 4; i++) await client.chat.completions.create({ model: 'gpt-4o', messages });
    // key1 tried once and ejected; key2, on the same host, stays in and answers everything
    assert.deepEqual(keys(), ['Bearer sk-1', 'Bearer sk-2', 'Bearer sk-2', 'Bearer sk-2', 'Bearer sk-2']);
    assert.equal(other.seen.length, 0, 'the last group is never needed');
    // and each provider is its own endpoint record, named by backend and provider
    const owners = p.plane
      .endpointHealth()
      .map((h) => h.backend)
      .sort();
    assert.equal(owners.length, 2);
    assert.match(owners[0] ?? '', /\/key1$/);
    assert.match(owners[1] ?? '', /\/key2$/);
  });
});

describe('health.active on a model', () => {
  const seenChats = (f: FakeOpenAI) => f.seen.filter((r) => r.method === 'POST').length;

  test('a model failing its probes is passed by before any request fails, and taken back once they pass', async () => {
    healthStatus = 200;
    // probes reach the server's health endpoint, and the model serves
    await until('a probe', () => selfHosted.seen.some((r) => r.method === 'GET' && r.url === '/health'));
    assert.equal((await chat('probed')).object, 'chat.completion');
    assert.equal(seenChats(selfHosted), 1, 'the first group answered');

    // its health endpoint fails: after two probes the model is out, though its chats would still work
    healthStatus = 503;
    await until('the model passed by', async () => {
      const before = seenChats(steady);
      await chat('probed');
      return seenChats(steady) > before;
    });
    const calls = seenChats(selfHosted);
    for (let i = 0; i < 3; i++) assert.equal((await chat('probed')).object, 'chat.completion');
    assert.equal(seenChats(selfHosted), calls, 'not called while its probes fail');
    // /config_dump's endpointHealth shows the model's probes
    const shown = proxy.plane.endpointHealth().find((h) => h.active !== undefined);
    assert.equal(shown?.active?.state, 'unhealthy');
    assert.equal(shown?.active?.lastResult, 'status 503');

    healthStatus = 200;
    await until('the model back', async () => {
      const before = seenChats(selfHosted);
      await chat('probed');
      return seenChats(selfHosted) > before;
    });
  });
});

describe('health.active on a model, two workers', () => {
  test('one prober per proxy, and every worker passes the model by once its probes fail', async (t) => {
    let status = 200;
    const probed = await startFakeOpenAI({ name: 'probed', health: () => status });
    const backup = await startFakeOpenAI({ name: 'backup' });
    const sup = new Supervisor({
      workers: 2,
      logFilter: 'error',
      logFormat: 'json',
      log: pino({ level: 'silent' }),
    });
    t.after(async () => {
      await sup.stop(1000);
      await probed.close();
      await backup.close();
    });
    const ir = loadConfigText(
      'llm.yaml',
      `llm:
  port: 0
  models:
  - {name: a, provider: openai, visibility: internal, params: {baseUrl: "${probed.origin}/v1"},
     health: {active: {path: /health, interval: 100ms, timeout: 1s, unhealthyThreshold: 2}}}
  - {name: b, provider: openai, visibility: internal, params: {baseUrl: "${backup.origin}/v1"}}
  virtualModels:
  - {name: m, routing: {failover: {targets: [{model: a, priority: 0}, {model: b, priority: 1}]}}}
`,
      process.cwd(),
    ).ir;
    await sup.apply(ir, sharedMemoryOf(ir));
    const port = Object.values(sup.ports)[0] as number;
    const probes = () => probed.seen.filter((r) => r.url === '/health').length;
    const before = probes();
    await new Promise((r) => setTimeout(r, 1500));
    const n = probes() - before;
    // 100 ms apart: about 15 in 1.5 s from one prober (fewer on a busy machine), about 30 from two
    assert.ok(n >= 3 && n <= 20, `${n} probes in 1.5 s`);

    status = 503;
    const chats = () => probed.seen.filter((r) => r.method === 'POST').length;
    await until('the model passed by', async () => {
      const c = chats();
      await post(port);
      return chats() === c;
    });
    // each on a connection of its own, so both workers answer some: none reaches the probed model
    const c = chats();
    for (let i = 0; i < 20; i++) assert.equal(await post(port), 200);
    assert.equal(chats(), c, 'no worker sends to a model failing its probes');
  });
});

/** A chat completion for virtual model `m` on a connection of its own; its status. */
async function post(port: number): Promise<number> {
  const body = JSON.stringify({ model: 'm', messages });
  const r = await httpGet(port, '/v1/chat/completions', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  });
  return r.status;
}

/** Polls `check` for up to 5 s. */
const until = (what: string, check: () => boolean | Promise<boolean>) => eventually(check, 5000, what);

describe('config', () => {
  test('health.active on a model, or from a named provider, loads with the model', () => {
    const ir = loadConfigText(
      'llm.yaml',
      `llm:
  port: 4000
  providers:
  - {name: shared, provider: openai, params: {baseUrl: "http://vllm.internal:8000/v1"}, defaults: {health: {active: {path: /health}}}}
  models:
  - {name: m, provider: openai, params: {apiKey: k}, health: {active: {path: /healthz, interval: 5s}}}
  - {name: q, provider: {reference: shared}}
`,
      process.cwd(),
    ).ir;
    const t = ir.binds[0]?.listeners[0]?.routes[0]?.backends[0]?.target;
    assert.ok(t?.kind === 'ai');
    assert.deepEqual(
      t.models.map((m) => m.health?.active),
      [{ path: '/healthz', interval: '5s' }, { path: '/health' }],
    );
  });
});
