// What a trace and the access log never show: configured API keys (in the policy-selection event),
// Cookie and x-api-key values (by default, without config.sensitiveHeaders), the header an auth
// policy reads, and a query parameter that carries a credential.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { TraceEvent } from '@gw/api';
import { startUpstream, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { request } from 'undici';
import { redactQuery } from './redact.ts';

const OBJECT_KEY = 'sk-object-form-93ab';
const LIST_KEY = 'sk-list-form-51cd';
const QUERY_KEY = 'sk-query-form-77ef';
const HEADER_KEY = 'sk-header-form-12aa';
const HASHED = 'a'.repeat(64);
const COOKIE = 'session=cookie-secret-4711';

let up: TestServer;
let proxy: TestProxy;
before(async () => {
  up = await startUpstream();
  proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - name: object-form
      matches: [{path: {pathPrefix: /object}}]
      policies:
        apiKey:
          keys:
            alice: {key: ${OBJECT_KEY}, metadata: {tier: gold}}
            bob: {keyHash: "sha256:${HASHED}"}
      backends: [{host: "127.0.0.1:${up.port}"}]
    - name: list-form
      matches: [{path: {pathPrefix: /list}}]
      policies:
        apiKey: {keys: [${LIST_KEY}, {key: other-list-key}]}
      backends: [{host: "127.0.0.1:${up.port}"}]
    - name: query
      matches: [{path: {pathPrefix: /query}}]
      policies:
        apiKey:
          location: {queryParameter: {name: api_key}}
          keys: [${QUERY_KEY}]
      backends: [{host: "127.0.0.1:${up.port}"}]
    - name: header
      matches: [{path: {pathPrefix: /header}}]
      policies:
        apiKey:
          location: {header: {name: x-gw-token}}
          keys: [${HEADER_KEY}]
      backends: [{host: "127.0.0.1:${up.port}"}]
    - name: open
      matches: [{path: {pathPrefix: /open}}]
      backends: [{host: "127.0.0.1:${up.port}"}]
`);
});
after(async () => {
  await proxy.close();
  await up.close();
});

/** The events without body snapshots (the upstream's echo legitimately holds what it was sent). */
const shown = (events: TraceEvent[]) =>
  JSON.stringify(events.filter((e) => e.message.type !== 'bodySnapshot'));

const snapshot = (events: TraceEvent[], stage: string) =>
  events.find((e) => e.message.type === 'requestSnapshot' && e.message.stage === stage)?.message
    .requestState as { request: { headers: Record<string, string>; pathAndQuery: string; uri: string } };

test('a trace of a request on an apiKey route shows no configured key (object and list forms)', async () => {
  for (const [path, key] of [
    ['/object/x', OBJECT_KEY],
    ['/list/x', LIST_KEY],
  ] as const) {
    const traced = proxy.trace();
    const res = await request(proxy.url(path), { headers: { authorization: `Bearer ${key}` } });
    assert.equal(res.statusCode, 200);
    await res.body.dump();
    const events = await traced;
    const text = JSON.stringify(events);
    for (const s of [OBJECT_KEY, LIST_KEY, 'other-list-key', HASHED])
      assert.ok(!text.includes(s), `${s} leaked into the trace of ${path}`);
    const route = events.find((e) => e.message.type === 'policySelection' && e.message.phase === 'route')
      ?.message.effectivePolicy as { apiKey: { keys: unknown } };
    if (path === '/object/x') {
      assert.deepEqual(route.apiKey.keys, {
        alice: { key: '[redacted]', metadata: { tier: 'gold' } },
        bob: { keyHash: '[redacted]' },
      });
    } else assert.deepEqual(route.apiKey.keys, ['[redacted]', { key: '[redacted]' }]);
  }
});

test('Cookie and x-api-key are redacted by default, like Authorization', async () => {
  const traced = proxy.trace();
  const res = await request(proxy.url('/open/x'), {
    headers: { cookie: COOKIE, 'x-api-key': 'sk-default-sensitive-3', 'x-plain': 'shown' },
  });
  const echo = (await res.body.json()) as { headers: Record<string, string> };
  const events = await traced;
  const initial = snapshot(events, 'initial request');
  assert.equal(initial.request.headers.cookie, '<redacted>');
  assert.equal(initial.request.headers['x-api-key'], '<redacted>');
  assert.equal(initial.request.headers['x-plain'], 'shown');
  const text = shown(events);
  assert.ok(!text.includes('cookie-secret-4711'));
  assert.ok(!text.includes('sk-default-sensitive-3'));
  assert.equal(echo.headers.cookie, COOKIE, 'the upstream still gets the cookie');
});

test('the header an apiKey policy reads is redacted in the trace', async () => {
  const traced = proxy.trace();
  const res = await request(proxy.url('/header'), {
    headers: { 'x-gw-token': 'not-the-key-but-still-a-credential' },
  });
  assert.equal(res.statusCode, 401);
  await res.body.dump();
  const events = await traced;
  assert.equal(snapshot(events, 'initial request').request.headers['x-gw-token'], '<redacted>');
  assert.ok(!shown(events).includes('not-the-key-but-still-a-credential'));
});

test('the API-key query parameter is redacted in the trace and in the access log', async () => {
  const traced = proxy.trace();
  const res = await request(proxy.url(`/query/items?x=1&api_key=${QUERY_KEY}&y=2`));
  assert.equal(res.statusCode, 200);
  await res.body.dump();
  const events = await traced;
  const initial = snapshot(events, 'initial request');
  assert.equal(initial.request.pathAndQuery, '/query/items?x=1&api_key=[redacted]&y=2');
  assert.match(initial.request.uri, /\/query\/items\?x=1&api_key=\[redacted\]&y=2$/);
  assert.ok(!JSON.stringify(events).includes(QUERY_KEY));

  // A wrong key in the query is redacted too: it may be a real key of another system.
  await (await request(proxy.url('/query/items?api_key=wrong-but-secret'))).body.dump();
  const lines = proxy.accessLog.filter((l) => String(l['http.path']).startsWith('/query/'));
  assert.deepEqual(
    lines.map((l) => [l['http.path'], l['http.status']]),
    [
      ['/query/items?x=1&api_key=[redacted]&y=2', 200],
      ['/query/items?api_key=[redacted]', 401],
    ],
  );
  assert.ok(!JSON.stringify(proxy.accessLog).includes(QUERY_KEY));
  assert.ok(!JSON.stringify(proxy.accessLog).includes('wrong-but-secret'));
});

test('redactQuery keeps everything but the named values, byte for byte', () => {
  const names = new Set(['api_key', 'access token']);
  assert.equal(redactQuery('/a?b=1&api_key=s&c=%20', names), '/a?b=1&api_key=[redacted]&c=%20');
  assert.equal(redactQuery('/a?api%5Fkey=s', names), '/a?api%5Fkey=[redacted]');
  assert.equal(
    redactQuery('/a?access+token=s&api_key', names),
    '/a?access+token=[redacted]&api_key=[redacted]',
  );
  assert.equal(redactQuery('/a?%zz=1', names), '/a?%zz=1');
  assert.equal(redactQuery('/a', names), '/a');
  assert.equal(redactQuery('/a?api_key=s', new Set()), '/a?api_key=s');
});
