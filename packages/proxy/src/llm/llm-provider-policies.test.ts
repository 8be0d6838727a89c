// An ai provider's own policies on a route's ai backend (agentgateway's LocalBackendPolicies on a
// provider): its requestHeaderModifier and responseHeaderModifier on the provider's call, its
// http.requestTimeout bounding the call, and its passive health taking a failing provider out. Before,
// the loader kept them and the provider's call never read them. The official openai client against
// fake providers.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { FAKE_REPLY, type FakeOpenAI, startFakeOpenAI } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import OpenAI from 'openai';
import { configIssues } from '../config/test-support.ts';

let fake: FakeOpenAI;
let failing: FakeOpenAI;
/** Takes the request and never answers. */
let silent: Server;
let proxy: TestProxy;
const messages = [{ role: 'user' as const, content: 'Hello!' }];

before(async () => {
  fake = await startFakeOpenAI({ name: 'fake', apiKey: 'sk-provider' });
  failing = await startFakeOpenAI({ name: 'failing', answer: () => ({ error: 503 }) });
  silent = createServer((req) => req.resume());
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  const route = (prefix: string, provider: string) => `    - matches: [{path: {pathPrefix: /${prefix}}}]
      backends:
      - ai:
          ${provider}`;
  proxy = await startProxy(`config:
  adminAddr: "off"
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
${route(
  'headers',
  `name: headers
          provider: {openAI: {model: gpt-4o-mini}}
          hostOverride: "127.0.0.1:${fake.port}"
          policies:
            backendAuth: {key: sk-provider}
            requestHeaderModifier: {set: {x-org: acme}, remove: [x-secret]}
            responseHeaderModifier: {set: {x-served-by: gw}}`,
)}
${route(
  'slow',
  `name: slow
          provider: {openAI: {model: gpt-4o-mini}}
          hostOverride: "127.0.0.1:${(silent.address() as AddressInfo).port}"
          policies: {backendAuth: {key: k}, http: {requestTimeout: 300ms}}`,
)}
${route(
  'health',
  `groups:
          - providers:
            - name: failing
              provider: {openAI: {model: gpt-4o-mini}}
              hostOverride: "127.0.0.1:${failing.port}"
              policies: {backendAuth: {key: k}, health: {eviction: {consecutiveFailures: 1, duration: 1m}}}
          - providers:
            - name: fallback
              provider: {openAI: {model: gpt-4o-mini}}
              hostOverride: "127.0.0.1:${fake.port}"
              policies: {backendAuth: {key: sk-provider}}`,
)}
`);
});

after(async () => {
  await proxy?.close();
  await fake?.close();
  await failing?.close();
  silent?.closeAllConnections();
  silent?.close();
});

const client = (prefix: string) =>
  new OpenAI({ apiKey: 'sk-client', baseURL: proxy.url(`/${prefix}/v1`), maxRetries: 0, timeout: 10_000 });

test('the provider’s header modifiers: on its request, and on the answer', async () => {
  const r = await client('headers')
    .chat.completions.create({ model: 'gpt-4o-mini', messages }, { headers: { 'x-secret': 'mine' } })
    .withResponse();
  assert.equal(r.data.choices[0]?.message.content, FAKE_REPLY);
  const seen = fake.seen.at(-1);
  assert.equal(seen?.headers['x-org'], 'acme');
  assert.equal(seen?.headers['x-secret'], undefined);
  assert.equal(r.response.headers.get('x-served-by'), 'gw');
});

test('the provider’s http.requestTimeout bounds its call (a 504 in OpenAI’s shape)', async () => {
  const t0 = performance.now();
  const err = await client('slow')
    .chat.completions.create({ model: 'gpt-4o-mini', messages })
    .catch((e: unknown) => e);
  assert.ok(err instanceof OpenAI.APIError, String(err));
  assert.equal(err.status, 504);
  assert.ok(performance.now() - t0 < 5_000);
});

test('the provider’s passive health: once it has failed, the next request goes straight to the fallback', async () => {
  const c = client('health');
  // the failing provider answers 503, the request fails over; its one failure evicts it
  assert.equal(
    (await c.chat.completions.create({ model: 'gpt-4o-mini', messages })).choices[0]?.message.content,
    FAKE_REPLY,
  );
  const asked = failing.seen.length;
  assert.equal(asked, 1);
  await c.chat.completions.create({ model: 'gpt-4o-mini', messages });
  assert.equal(failing.seen.length, asked, 'the evicted provider was not asked again');
});

test('a redirect and tokenize on a provider are refused by name; an active health check is taken', () => {
  const load = (extra: string) =>
    configIssues(
      `binds:\n- port: 8080\n  listeners:\n  - routes:\n    - backends:\n      - ai:\n          name: a\n          provider: {openAI: {}}\n${extra}`,
    );
  assert.equal(load('          policies: {health: {active: {path: /health}}}\n'), '', 'no issue');
  assert.match(
    load('          policies: {requestRedirect: {scheme: https}}\n'),
    /requestRedirect does not apply to an ai provider/,
  );
  assert.match(load('          tokenize: true\n'), /tokenize is not supported/);
});

test("llm.policies.timeout: the LLM API's request deadline (a 504 in OpenAI's shape)", async () => {
  const p = await startProxy(`llm:
  port: 0
  policies: {timeout: {requestTimeout: 300ms}}
  models:
  - name: m
    provider: openai
    params: {apiKey: k, baseUrl: "http://127.0.0.1:${(silent.address() as AddressInfo).port}/v1"}
`);
  try {
    const client = new OpenAI({ apiKey: 'x', baseURL: p.url('/v1'), maxRetries: 0 });
    const started = Date.now();
    const err = await client.chat.completions.create({ model: 'm', messages }).catch((e: unknown) => e);
    assert.ok(err instanceof OpenAI.APIError, String(err));
    assert.equal(err.status, 504);
    assert.ok(Date.now() - started < 5000, 'answered at the deadline, not the provider');
  } finally {
    await p.close();
  }
});
