// A named backend `llmModels` (what the controller sends for GwModels) on a route under a path
// prefix: models matched on the requested name, an internal model only reachable through a virtual
// model, virtual models naming their targets by entry name, and the model list; the official
// `openai` client against fake providers.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { LLM_API_PATH_REGEXES, LLM_API_PATHS } from '@gw/api/llm/api-paths';
import { FAKE_REPLY, type FakeOpenAI, startFakeOpenAI } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import OpenAI from 'openai';
import { CLIENT_APIS, MODELS_PATH } from './formats/clients.ts';

let primary: FakeOpenAI;
let flaky: FakeOpenAI;
let proxy: TestProxy;
let client: OpenAI;
const messages = [{ role: 'user' as const, content: 'Hello!' }];

before(async () => {
  primary = await startFakeOpenAI({ name: 'primary', apiKey: 'sk-primary' });
  flaky = await startFakeOpenAI({ name: 'flaky', answer: () => ({ error: 503 }) });
  const provider = (name: string, p: FakeOpenAI, extra = '') =>
    `{name: ${name}, provider: {openAI: {}}, hostOverride: "127.0.0.1:${p.port}"${extra}}`;
  proxy = await startProxy(`config:
  adminAddr: "off"
binds:
- port: 0
  listeners:
  - routes:
    - matches: [{path: {pathPrefix: /llm}}]
      backends: [{backend: models}]
backends:
- name: models
  llmModels:
    models:
    - ${provider('default/gpt', primary, ', match: gpt-4o, policies: {backendAuth: {key: sk-primary}}')}
    - ${provider('default/mini', primary, ', match: "mini-*", policies: {backendAuth: {key: sk-primary}}')}
    - ${provider('default/down', flaky, ', match: down, visibility: internal')}
    virtualModels:
    - name: default/steady
      match: steady
      routing:
        failover:
        - {model: default/down, as: down}
        - {model: default/gpt, as: gpt-4o}
    - name: default/tiered
      match: tiered
      routing:
        conditional:
        - {model: default/mini, as: mini-large, when: 'request.headers["x-tier"] == "gold"'}
        - {model: default/gpt, as: gpt-4o}
`);
  client = new OpenAI({ apiKey: 'sk-client', baseURL: proxy.url('/llm/v1'), maxRetries: 0 });
});

after(async () => {
  await proxy?.close();
  await primary?.close();
  await flaky?.close();
});

const lastModel = () => primary.seen[primary.seen.length - 1]?.json?.model;

test('the controller’s path list is the one the proxy serves', () => {
  const exact = CLIENT_APIS.filter((a) => !a.matches).map((a) => a.path);
  assert.deepEqual([...LLM_API_PATHS].sort(), [...exact, MODELS_PATH].sort());
  const patterns = [...new Set(CLIENT_APIS.flatMap((a) => (a.pathRegex ? [a.pathRegex] : [])))];
  assert.deepEqual(Object.values(LLM_API_PATH_REGEXES).sort(), patterns.sort());
  // every API found by its path has a pattern the routes take
  for (const a of CLIENT_APIS.filter((x) => x.matches))
    assert.ok(
      patterns.some((r) => new RegExp(`^${r}$`).test(a.path.replace('<model>', 'm'))),
      `${a.path} is routed`,
    );
});

describe('an llmModels backend', () => {
  test('an exact model and a prefix* model answer, with the entry’s key', async () => {
    const a = await client.chat.completions.create({ model: 'gpt-4o', messages });
    assert.equal(a.choices[0]?.message.content, FAKE_REPLY);
    assert.equal(lastModel(), 'gpt-4o');
    assert.equal(primary.seen[primary.seen.length - 1]?.headers.authorization, 'Bearer sk-primary');
    await client.chat.completions.create({ model: 'mini-fast', messages });
    assert.equal(lastModel(), 'mini-fast');
  });

  test('failover: the internal target answers 503, the next one serves, asked its own name', async () => {
    const before = flaky.seen.length;
    const a = await client.chat.completions.create({ model: 'steady', messages });
    assert.equal(a.choices[0]?.message.content, FAKE_REPLY);
    assert.equal(flaky.seen.length, before + 1, 'the first target was tried');
    assert.equal(lastModel(), 'gpt-4o');
  });

  test('conditional: the first target whose when holds, else the last', async () => {
    await client.chat.completions.create({ model: 'tiered', messages }, { headers: { 'x-tier': 'gold' } });
    assert.equal(lastModel(), 'mini-large');
    await client.chat.completions.create({ model: 'tiered', messages });
    assert.equal(lastModel(), 'gpt-4o');
  });

  test('an internal model is not served by name; an unknown model is a 404 in OpenAI’s shape', async () => {
    for (const model of ['down', 'nope']) {
      const err = await client.chat.completions.create({ model, messages }).catch((e: unknown) => e);
      assert.ok(err instanceof OpenAI.NotFoundError, `${model}: ${String(err)}`);
    }
  });

  test('models.list(): the public exact models and the virtual models', async () => {
    const ids: string[] = [];
    for await (const m of client.models.list()) ids.push(m.id);
    assert.deepEqual(ids.sort(), ['gpt-4o', 'steady', 'tiered']);
  });
});

test('a virtual model naming no entry is a config error at its path', async () => {
  await assert.rejects(
    startProxy(`binds:
- port: 0
  listeners:
  - routes: [{backends: [{backend: m}]}]
backends:
- name: m
  llmModels:
    models: []
    virtualModels:
    - {name: v, match: v, routing: {weighted: [{model: ghost, weight: 1}]}}
`),
    /backends\[0\]\.llmModels\.virtualModels\[0\]\.routing\.weighted\[0\]\.model: no model named "ghost"/,
  );
});
