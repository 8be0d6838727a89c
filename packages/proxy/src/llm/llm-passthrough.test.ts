// passthrough on a model (agentgateway's): the client's request goes to the provider byte for byte,
// in its own format, with only the gateway's credential added; `detect` reads the answer for usage as
// it passes, `opaque` leaves it alone. A client whose format the provider does not speak is told so
// in its own error shape. The model's own fields (params.model, overrides …) are set on the client's
// JSON, as agentgateway does; what works on the provider's format is a config error. The official
// `@anthropic-ai/sdk` and `openai` clients, and a raw request, against a fake Anthropic.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { ConfigError } from '@gw/api';
import { FAKE_ANTHROPIC_REPLY, type FakeAnthropic, startFakeAnthropic } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import OpenAI from 'openai';
import { request } from 'undici';
import { loadConfigText } from '../config/load.ts';

let anthropic: FakeAnthropic;
let proxy: TestProxy;

before(async () => {
  anthropic = await startFakeAnthropic({ apiKey: 'sk-ant-gw' });
  proxy = await startProxy(`config:
  adminAddr: "off"
llm:
  port: 0
  models:
  - name: claude-detect
    provider: anthropic
    params: {apiKey: sk-ant-gw, baseUrl: "${anthropic.origin}"}
    passthrough: detect
  - name: claude-opaque
    provider: anthropic
    params: {apiKey: sk-ant-gw, baseUrl: "${anthropic.origin}"}
    passthrough: opaque
  - name: claude-pinned
    provider: anthropic
    params: {apiKey: sk-ant-gw, baseUrl: "${anthropic.origin}", model: claude-sonnet-4-5}
    passthrough: detect
    overrides: {max_tokens: 10}
    defaults: {temperature: 0.2}
`);
});

after(async () => {
  await proxy?.close();
  await anthropic?.close();
});

const lastLog = async () => {
  await new Promise((r) => setTimeout(r, 30));
  return proxy.accessLog[proxy.accessLog.length - 1] ?? {};
};

/** A body no JSON serializer writes this way: spaces, key order, a field gw never sets. */
const raw = (model: string) =>
  `{ "messages" : [ {"role":"user","content":"Hello!"} ],  "max_tokens":50, "model":"${model}", "x_vendor_hint": {"keep":true} }`;

describe('passthrough', () => {
  test('detect: the body byte for byte, the gateway’s key instead of the client’s; usage still counted', async () => {
    const r = await request(proxy.url('/v1/messages'), {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-api-key': 'sk-ant-client',
        'anthropic-version': '2023-06-01',
      },
      body: raw('claude-detect'),
    });
    assert.equal(r.statusCode, 200);
    const answer = (await r.body.json()) as { content: { text: string }[] };
    assert.equal(answer.content[0]?.text, FAKE_ANTHROPIC_REPLY);
    const seen = anthropic.seen[anthropic.seen.length - 1];
    assert.equal(seen?.body, raw('claude-detect'));
    assert.equal(seen?.headers['x-api-key'], 'sk-ant-gw');
    const log = await lastLog();
    assert.equal(log['llm.model'], 'claude-detect');
    assert.ok(Number(log['llm.inputTokens']) > 0, JSON.stringify(log));
  });

  test('opaque: the same request; the answer is not read (no usage)', async () => {
    const claude = new Anthropic({ apiKey: 'sk-ant-client', baseURL: proxy.url(''), maxRetries: 0 });
    const m = await claude.messages.create({
      model: 'claude-opaque',
      max_tokens: 50,
      messages: [{ role: 'user', content: 'Hello!' }],
    });
    assert.equal((m.content[0] as { text: string }).text, FAKE_ANTHROPIC_REPLY);
    assert.equal(anthropic.seen[anthropic.seen.length - 1]?.json?.model, 'claude-opaque');
    const log = await lastLog();
    assert.equal(log['llm.inputTokens'], undefined);
  });

  test('params.model, overrides and defaults are set on the client’s JSON, still in its format', async () => {
    const r = await request(proxy.url('/v1/messages'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: raw('claude-pinned'),
    });
    assert.equal(r.statusCode, 200);
    await r.body.dump();
    const seen = anthropic.seen[anthropic.seen.length - 1]?.json;
    assert.equal(seen?.model, 'claude-sonnet-4-5');
    assert.equal(seen?.max_tokens, 10, 'the override replaces the client’s 50');
    assert.equal(seen?.temperature, 0.2);
    assert.deepEqual(seen?.x_vendor_hint, { keep: true }, 'fields gw does not know go on');
    const log = await lastLog();
    assert.equal(log['llm.model'], 'claude-sonnet-4-5');
  });

  test('a client format the provider does not speak: a 400 in the client’s shape, naming both', async () => {
    const openai = new OpenAI({ apiKey: 'sk', baseURL: proxy.url('/v1'), maxRetries: 0 });
    const before = anthropic.seen.length;
    await assert.rejects(
      openai.chat.completions.create({ model: 'claude-detect', messages: [{ role: 'user', content: 'hi' }] }),
      (e: unknown) =>
        e instanceof OpenAI.APIError &&
        e.status === 400 &&
        /passthrough .* provider anthropic does not speak openai-chat/.test(e.message),
    );
    assert.equal(anthropic.seen.length, before);
  });
});

describe('config errors name the field', () => {
  const load = (extra: string, policies = '') =>
    loadConfigText(
      'llm.yaml',
      `llm:\n  port: 4000\n${policies}  models:\n  - {name: m, provider: anthropic, params: {apiKey: k}, passthrough: detect${extra}}\n`,
      process.cwd(),
    );
  test('a setting that works on the provider’s format', () => {
    assert.throws(
      () => load(', finalTransformation: {max_tokens: "10"}'),
      (e: unknown) =>
        e instanceof ConfigError &&
        /llm\.models\[0\]\.finalTransformation: finalTransformation has no place in a passthrough model/.test(
          e.message,
        ),
    );
    // the model's own fields load (agentgateway sets them on a passthrough request too)
    load(', overrides: {max_tokens: 10}, defaults: {temperature: 0}');
  });
  test('guardrails of every model while one is passed through', () => {
    assert.throws(
      () => load('', '  policies: {guardrails: {request: [{regex: {rules: [{builtin: ssn}]}}]}}\n'),
      (e: unknown) =>
        e instanceof ConfigError &&
        /llm\.models\[0\]\.passthrough: llm\.policies\.guardrails guard every model/.test(e.message),
    );
  });
  test('an unknown mode', () => {
    assert.throws(
      () =>
        loadConfigText(
          'llm.yaml',
          'llm:\n  port: 4000\n  models:\n  - {name: m, provider: openai, passthrough: raw}\n',
          process.cwd(),
        ),
      (e: unknown) => e instanceof ConfigError && /llm\.models\[0\]\.passthrough/.test(e.message),
    );
  });
});
