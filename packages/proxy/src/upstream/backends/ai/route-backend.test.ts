// A route whose backend is an AI provider directly (agentgateway's route-level `ai` backend, the shape
// the controller sends for an `ai` GwBackend): the official `openai` client through gw to fake
// providers, the key from the backend's backendAuth, and priority groups that fail over.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ConfigError } from '@gw/api';
import { FAKE_REPLY, type FakeLlmRequest, type FakeOpenAI, startFakeOpenAI } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import OpenAI from 'openai';
import { loadConfigText } from '../../../config/load.ts';

let direct: FakeOpenAI;
let flaky: FakeOpenAI;
let backup: FakeOpenAI;
let proxy: TestProxy;

before(async () => {
  direct = await startFakeOpenAI({ name: 'direct', apiKey: 'sk-from-config' });
  flaky = await startFakeOpenAI({ name: 'flaky', answer: () => ({ error: 503 }) });
  backup = await startFakeOpenAI({ name: 'backup' });
  proxy = await startProxy(`config:
  adminAddr: "off"
backends:
- name: grouped
  ai:
    groups:
    - providers:
      - name: first
        provider: {openAI: {}}
        hostOverride: "127.0.0.1:${flaky.port}"
    - providers:
      - name: second
        provider: {openAI: {model: backup-model}}
        hostOverride: "127.0.0.1:${backup.port}"
binds:
- port: 0
  listeners:
  - routes:
    - name: direct
      matches: [{path: {pathPrefix: /direct}}]
      backends:
      - ai:
          name: openai
          provider: {openAI: {model: gpt-4o-mini}}
          hostOverride: "127.0.0.1:${direct.port}"
          policies:
            backendAuth: {key: sk-from-config}
    - name: grouped
      matches: [{path: {pathPrefix: /grouped}}]
      backends:
      - backend: grouped
`);
});

after(async () => {
  await proxy.close();
  await Promise.all([direct.close(), flaky.close(), backup.close()]);
});

const lastSeen = (f: FakeOpenAI) => f.seen[f.seen.length - 1] as FakeLlmRequest;
const client = (prefix: string) =>
  new OpenAI({ apiKey: 'sk-client', baseURL: proxy.url(`${prefix}/v1`), maxRetries: 0 });
const messages = [{ role: 'user' as const, content: 'Hello!' }];

describe('a route-level ai backend', () => {
  test('one provider: any model is served, with the configured model and key', async () => {
    const r = await client('/direct').chat.completions.create({ model: 'anything', messages });
    assert.equal(r.choices[0]?.message.content, FAKE_REPLY);
    const seen = lastSeen(direct);
    assert.equal(seen.headers.authorization, 'Bearer sk-from-config');
    assert.equal(seen.json?.model, 'gpt-4o-mini');
  });

  test('groups: a provider answering 503 passes the request to the next group', async () => {
    const n = { flaky: flaky.seen.length, backup: backup.seen.length };
    const r = await client('/grouped').chat.completions.create({ model: 'gpt-4o', messages });
    assert.equal(r.choices[0]?.message.content, FAKE_REPLY);
    assert.equal(flaky.seen.length, n.flaky + 1);
    assert.equal(backup.seen.length, n.backup + 1);
    assert.equal(lastSeen(backup).json?.model, 'backup-model');
  });

  test('a key file that cannot be read is a config error at the backendAuth path', () => {
    const yaml = `binds:
- port: 1
  listeners:
  - routes:
    - backends:
      - ai: {name: x, provider: {openAI: {}}, policies: {backendAuth: {key: {file: /nonexistent/key}}}}
`;
    assert.throws(
      () => loadConfigText('gw.yaml', yaml, process.cwd()),
      (e) =>
        e instanceof ConfigError &&
        e.issues.some((i) => /backendAuth.*key.*file/.test(String(i.path)) && /cannot read/.test(i.message)),
    );
  });

  test('a provider the schema does not know is a config error at its path', () => {
    const yaml = `binds:
- port: 1
  listeners:
  - routes:
    - backends:
      - ai: {name: x, provider: {nope: {}}}
`;
    assert.throws(
      () => loadConfigText('gw.yaml', yaml, process.cwd()),
      (e) => e instanceof ConfigError && e.issues.some((i) => i.path.includes('ai')),
    );
  });
});
