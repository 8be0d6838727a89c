// agentgateway's ai policy on a route's ai backend: `modelAliases` (a requested name → the model
// sent), `routes` (which API a path is, or forward it as it came: passthrough, detect) and the policy
// set on the route or the backend as well as on the provider, merged field by field. Real parts: the
// official `openai` client and a fake provider speaking OpenAI's wire format.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ConfigError } from '@gw/api';
import { type FakeLlmRequest, type FakeOpenAI, startFakeOpenAI } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import OpenAI from 'openai';
import { request } from 'undici';
import { loadConfigText } from '../config/load.ts';
import { compileAliases } from './model.ts';

let provider: FakeOpenAI;
let proxy: TestProxy;

const lastSeen = () => provider.seen[provider.seen.length - 1] as FakeLlmRequest;
const messages = [{ role: 'user' as const, content: 'Hello!' }];
const client = (prefix: string) =>
  new OpenAI({ apiKey: 'sk-client', baseURL: proxy.url(`${prefix}/v1`), maxRetries: 0 });
const lastLog = async () => {
  await new Promise((r) => setTimeout(r, 30));
  return proxy.accessLog[proxy.accessLog.length - 1] ?? {};
};

before(async () => {
  provider = await startFakeOpenAI({ name: 'openai', apiKey: 'sk-provider' });
  const ai = (name: string, policies: string, extra = '') => `      - ai:
          name: ${name}
          provider: {openAI: {}}
          hostOverride: "127.0.0.1:${provider.port}"${extra}
          policies:
            backendAuth: {key: sk-provider}
${policies}`;
  proxy = await startProxy(`config:
  adminAddr: "off"
binds:
- port: 0
  listeners:
  - routes:
    - matches: [{path: {pathPrefix: /aliases}}]
      backends:
${ai(
  'aliased',
  `            ai:
              modelAliases:
                fast: gpt-4o-mini
                "claude-*": gpt-4o
                "claude-3-*": gpt-4.1
`,
)}
    - matches: [{path: {pathPrefix: /merged}}]
      policies:
        ai:
          modelAliases: {smart: gpt-4o}
          defaults: {temperature: 0.5, max_tokens: 99}
      backends:
${ai(
  'merged',
  `            ai:
              defaults: {temperature: 0.1}
`,
)}
    - matches: [{path: {pathPrefix: /routes}}]
      backends:
${ai(
  'routed',
  `            ai:
              routes:
                /v1/chat/completions: completions
                /ask: completions
                /v1/models: passthrough
                "*": passthrough
`,
)}
    - matches: [{path: {pathPrefix: /listed}}]
      policies:
        ai:
          models:
          - {id: gpt-4o-mini, ownedBy: openai, created: 1704067200}
          - {id: in-house}
          routes: {"/v1/models": Models, "/v1/chat/completions": Completions}
      backends:
${ai('listed', '')}
    - matches: [{path: {pathPrefix: /detect}}]
      backends:
${ai(
  'detected',
  `            ai:
              routes: {"*": detect}
`,
)}
    - matches: [{headers: [{name: x-route, value: {exact: prefixed}}]}]
      backends:
${ai(
  'prefixed',
  `            ai:
              routes: {"*": passthrough}
`,
  '\n          pathPrefix: /openai/v1',
)}
`);
});

after(async () => {
  await proxy?.close();
  await provider?.close();
});

describe('modelAliases', () => {
  test('an exact name, then the longest pattern; other names go as asked', async () => {
    const sent = async (model: string) => {
      await client('/aliases').chat.completions.create({ model, messages });
      return lastSeen().json?.model;
    };
    assert.equal(await sent('fast'), 'gpt-4o-mini');
    assert.equal(await sent('claude-3-haiku'), 'gpt-4.1');
    assert.equal(await sent('claude-opus'), 'gpt-4o');
    assert.equal(await sent('gpt-4o-mini'), 'gpt-4o-mini');
    const log = await lastLog();
    assert.equal(log['llm.requestModel'] ?? log['llm.model'], 'gpt-4o-mini');
  });

  test('the lookup on its own: patterns with several stars, special characters taken literally', () => {
    const alias = compileAliases({ 'a.b*': 'dots', '*-mini-*': 'minis', 'x*y*z': 'xyz', exact: 'e' });
    assert.equal(alias('a.bc'), 'dots');
    assert.equal(alias('aXbc'), undefined);
    assert.equal(alias('gpt-mini-2'), 'minis');
    assert.equal(alias('x1y2z'), 'xyz');
    assert.equal(alias('exact'), 'e');
    assert.equal(alias('exactly'), undefined);
  });
});

describe('ai on the route and on the provider', () => {
  test('merged field by field: the provider’s defaults win, the route’s aliases stay', async () => {
    await client('/merged').chat.completions.create({ model: 'smart', messages });
    const body = lastSeen().json ?? {};
    assert.equal(body.model, 'gpt-4o');
    assert.equal(body.temperature, 0.1);
    // the provider set defaults, so the route's defaults (max_tokens among them) are replaced whole
    assert.equal(body.max_tokens, undefined);
  });
});

describe('routes', () => {
  test('a path of one’s own is a chat completion, sent to the provider’s path', async () => {
    const r = await request(proxy.url('/routes/ask'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-client' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages }),
    });
    assert.equal(r.statusCode, 200);
    const answer = (await r.body.json()) as { choices: { message: { content: string } }[] };
    assert.ok(answer.choices[0]?.message.content);
    assert.equal(lastSeen().url, '/v1/chat/completions');
    assert.equal(lastSeen().headers.authorization, 'Bearer sk-provider');
  });

  test("the ai policy's models: the model list a route's ai backend answers itself (CRD-style route type names)", async () => {
    const before = provider.seen.length;
    const list = await client('/listed').models.list();
    assert.deepEqual(
      list.data.map((m) => [m.id, m.owned_by, m.created]),
      [
        ['gpt-4o-mini', 'openai', 1704067200],
        ['in-house', 'openai', 0],
      ],
    );
    assert.equal(provider.seen.length, before, 'answered by the gateway');
    const r = await client('/listed').chat.completions.create({ model: 'gpt-4o-mini', messages });
    assert.ok(r.choices[0]?.message.content);
  });

  test('passthrough: the provider’s own model list, with the gateway’s key', async () => {
    const list = await client('/routes').models.list();
    const ids = list.data.map((m) => m.id);
    // the fake provider's list, not the gateway's (which would name only `*` providers: none)
    assert.ok(ids.length > 0, JSON.stringify(ids));
    const seen = lastSeen();
    assert.equal(seen.method, 'GET');
    assert.equal(seen.url, '/routes/v1/models');
    assert.equal(seen.headers.authorization, 'Bearer sk-provider');
  });

  test('passthrough of a path the gateway does not know: method, path, query, body and answer as they are', async () => {
    const r = await request(proxy.url('/routes/v1/files?purpose=batch'), {
      method: 'PUT',
      headers: { 'content-type': 'text/plain', authorization: 'Bearer sk-client' },
      body: 'not json at all',
    });
    const text = await r.body.text();
    // the provider's own 404, passed on unchanged
    assert.equal(r.statusCode, 404);
    assert.match(text, /Invalid URL \(PUT \/routes\/v1\/files\)/);
    const seen = lastSeen();
    assert.equal(seen.url, '/routes/v1/files?purpose=batch');
    assert.equal(seen.body, 'not json at all');
    assert.equal(seen.headers['content-type'], 'text/plain');
    assert.equal(seen.headers.authorization, 'Bearer sk-provider');
  });

  test('detect: a known API’s body is sent as written and its usage counted, streamed too', async () => {
    const raw = `{"model":"gpt-4o-mini",  "messages":[{"role":"user","content":"Hello!"}], "x_hint":1}`;
    const r = await request(proxy.url('/detect/v1/chat/completions'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-client' },
      body: raw,
    });
    assert.equal(r.statusCode, 200);
    await r.body.json();
    assert.equal(lastSeen().body, raw);
    let log = await lastLog();
    assert.equal(log['llm.requestModel'] ?? log['llm.model'], 'gpt-4o-mini');
    assert.ok(Number(log['llm.inputTokens']) > 0, JSON.stringify(log));

    const stream = await client('/detect').chat.completions.create({
      model: 'gpt-4o-mini',
      messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    assert.ok(text.length > 0);
    log = await lastLog();
    assert.ok(Number(log['llm.outputTokens']) > 0, JSON.stringify(log));
  });

  test('detect: a body that is not an LLM request is forwarded all the same', async () => {
    const r = await request(proxy.url('/detect/v1/chat/completions'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-client' },
      body: '{"no model": true',
    });
    // the provider's answer to a body it cannot parse, not the gateway's
    assert.equal(r.statusCode, 400);
    assert.match(await r.body.text(), /could not parse the JSON body/);
    assert.equal(lastSeen().body, '{"no model": true');
  });

  test('pathPrefix takes the place of the provider’s /v1 on a forwarded path', async () => {
    const r = await request(proxy.url('/v1/models?limit=2'), { headers: { 'x-route': 'prefixed' } });
    assert.equal(r.statusCode, 200);
    await r.body.text();
    assert.equal(lastSeen().url, '/openai/v1/models?limit=2');
  });
});

describe('config errors name the field', () => {
  const load = (yaml: string) => loadConfigText('agw.yaml', yaml, process.cwd());
  const route = (policies: string, backend = 'ai: {name: p, provider: {openAI: {}}}') => `binds:
- port: 8080
  listeners:
  - routes:
    - policies:
${policies}
      backends:
      - ${backend}
`;
  test('a route type this build does not serve', () => {
    assert.throws(
      () => load(route('        ai: {routes: {/v1/rerank: rerank}}')),
      (e: unknown) =>
        e instanceof ConfigError &&
        /routes\[0\]\.policies\.ai\.routes\["?\/v1\/rerank"?\]: the route type rerank is not supported/.test(
          e.message,
        ),
    );
  });
  test('ai on a route to a host backend', () => {
    assert.throws(
      () => load(route('        ai: {modelAliases: {a: b}}', 'host: 127.0.0.1:9')),
      (e: unknown) =>
        e instanceof ConfigError &&
        /routes\[0\]\.policies\.ai: ai applies to routes whose backends are ai backends/.test(e.message),
    );
  });
  test('ai in the policies of a host backend', () => {
    assert.throws(
      () =>
        load(route('        timeout: {requestTimeout: 1s}', 'host: 127.0.0.1:9\n        policies: {ai: {}}')),
      (e: unknown) =>
        e instanceof ConfigError &&
        /backends\[0\]\.policies\.ai: ai applies to ai backends, not to a host backend/.test(e.message),
    );
  });
  test('providers of one backend with different routes', () => {
    assert.throws(
      () =>
        load(`binds:
- port: 8080
  listeners:
  - routes:
    - backends:
      - ai:
          groups:
          - providers:
            - {name: a, provider: {openAI: {}}, policies: {ai: {routes: {"*": passthrough}}}}
            - {name: b, provider: {openAI: {}}}
`),
      (e: unknown) =>
        e instanceof ConfigError &&
        /groups\[0\]\.providers\[1\]\.policies\.ai\.routes: every provider of an ai backend has the same routes/.test(
          e.message,
        ),
    );
  });
  test('an alias that sends a pattern', () => {
    assert.throws(
      () => load(route('        ai: {modelAliases: {"a*": "b*"}}')),
      (e: unknown) =>
        e instanceof ConfigError &&
        /modelAliases(\.|\[")a\*("\])?: the model an alias sends is a name/.test(e.message),
    );
  });
});
