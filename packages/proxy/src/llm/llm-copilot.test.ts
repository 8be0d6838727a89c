// The GitHub Copilot provider (agentgateway's `copilot`): OpenAI's chat completions and responses at
// the API's root, a GitHub token as the bearer — from GH_COPILOT_TOKEN, or where GitHub Copilot or the
// GitHub CLI keep it — and Copilot's client headers. The official `openai` client through gw to a fake
// speaking OpenAI's wire format in Copilot's place.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import { type FakeLlmRequest, type FakeOpenAI, startFakeOpenAI } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { tempDir } from '@gw/testkit/temp-dir';
import OpenAI from 'openai';

const ENV_TOKEN = 'gho_from_the_environment';
const FILE_TOKEN = 'gho_from_hosts_json';
let copilot: FakeOpenAI;
let proxy: TestProxy;
const saved = { ...process.env };
const config = tempDir('gw-copilot-');
const empty = tempDir('gw-copilot-empty-');

const lastSeen = () => copilot.seen[copilot.seen.length - 1] as FakeLlmRequest;
const messages = [{ role: 'user' as const, content: 'Hello!' }];

before(async () => {
  mkdirSync(join(config, 'github-copilot'));
  writeFileSync(
    join(config, 'github-copilot', 'hosts.json'),
    JSON.stringify({ 'github.com': { user: 'octocat', oauth_token: ` ${FILE_TOKEN}\n` } }),
  );
  copilot = await startFakeOpenAI({ name: 'copilot' });
  proxy = await startProxy(`config:
  adminAddr: "off"
binds:
- port: 0
  listeners:
  - routes:
    - matches: [{path: {pathPrefix: /route}}]
      backends:
      - ai:
          name: copilot
          provider: {copilot: {model: gpt-4.1}}
          hostOverride: "127.0.0.1:${copilot.port}"
          policies: {backendAuth: copilot}
llm:
  port: 0
  models:
  - {name: gpt-4o, provider: copilot, params: {hostOverride: "127.0.0.1:${copilot.port}"}}
`);
});

after(async () => {
  await proxy?.close();
  await copilot?.close();
  process.env = saved;
});

beforeEach(() => {
  delete process.env.GH_COPILOT_TOKEN;
  delete process.env.COPILOT_GITHUB_TOKEN;
  process.env.XDG_CONFIG_HOME = empty;
});

describe('the copilot provider', () => {
  const llm = () => new OpenAI({ apiKey: 'client-key', baseURL: proxy.url('/v1', 1), maxRetries: 0 });

  test('chat completions at /chat/completions, the token from GH_COPILOT_TOKEN and Copilot’s headers', async () => {
    process.env.GH_COPILOT_TOKEN = ENV_TOKEN;
    const r = await llm().chat.completions.create({ model: 'gpt-4o', messages });
    assert.ok(r.choices[0]?.message.content);
    const seen = lastSeen();
    assert.equal(seen.url, '/chat/completions');
    assert.equal(seen.headers.authorization, `Bearer ${ENV_TOKEN}`);
    assert.equal(seen.headers['x-github-api-version'], '2025-10-01');
    assert.equal(seen.headers['openai-intent'], 'conversation-agent');
    assert.ok(seen.headers['editor-version']);
  });

  test('responses at /responses', async () => {
    process.env.COPILOT_GITHUB_TOKEN = ENV_TOKEN;
    const r = await llm().responses.create({ model: 'gpt-4o', input: 'Hello!' });
    assert.ok(r.output_text);
    assert.equal(lastSeen().url, '/responses');
  });

  test('a route’s ai provider with backendAuth copilot: the token GitHub Copilot keeps in hosts.json', async () => {
    process.env.XDG_CONFIG_HOME = config;
    const c = new OpenAI({ apiKey: 'client-key', baseURL: proxy.url('/route/v1', 0), maxRetries: 0 });
    await c.chat.completions.create({ model: 'anything', messages });
    const seen = lastSeen();
    assert.equal(seen.headers.authorization, `Bearer ${FILE_TOKEN}`);
    assert.equal(seen.json?.model, 'gpt-4.1');
  });

  test('else the GitHub CLI’s hosts.yml', async () => {
    const gh = tempDir('gw-copilot-gh-');
    mkdirSync(join(gh, 'gh'));
    writeFileSync(
      join(gh, 'gh', 'hosts.yml'),
      'github.com:\n  user: octocat\n  oauth_token: gho_from_the_cli\n',
    );
    process.env.XDG_CONFIG_HOME = gh;
    await llm().chat.completions.create({ model: 'gpt-4o', messages });
    assert.equal(lastSeen().headers.authorization, 'Bearer gho_from_the_cli');
  });

  test('no token anywhere: an error in OpenAI’s shape naming where to put one; nothing is sent', async () => {
    const before = copilot.seen.length;
    await assert.rejects(
      llm().chat.completions.create({ model: 'gpt-4o', messages }),
      (e: unknown) => e instanceof OpenAI.APIError && e.status === 500 && /GH_COPILOT_TOKEN/.test(e.message),
    );
    assert.equal(copilot.seen.length, before);
  });
});
