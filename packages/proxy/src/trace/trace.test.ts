import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { TraceEvent } from '@gw/api';
import { startUpstream, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { request } from 'undici';

let up: TestServer;
let proxy: TestProxy;
const SECRET = 'sk-very-secret-4242';
before(async () => {
  up = await startUpstream();
  proxy = await startProxy(`config:
  sensitiveHeaders: [x-api-key]
gateways:
  default:
    port: 0
    address: 127.0.0.1
    policies:
      requestHeaderModifier: {set: {x-from-gateway: "1"}}
routes:
- name: api
  matches: [{path: {pathPrefix: /api}}]
  policies:
    urlRewrite: {path: {prefix: /v2}}
    responseHeaderModifier: {set: {x-route: api}}
  backends:
  - host: "127.0.0.1:${up.port}"
    policies: {requestHeaderModifier: {set: {x-backend-key: visible-value, x-api-key: ${SECRET}}}}
- name: blocked
  matches: [{path: {pathPrefix: /blocked}}]
  policies: {csrf: {}}
  backends: [{host: "127.0.0.1:${up.port}"}]
`);
});
after(async () => {
  await proxy.close();
  await up.close();
});

const types = (events: TraceEvent[]) =>
  events.map(
    (e) =>
      `${e.message.type}${e.message.stage ? `:${e.message.stage}` : ''}${e.message.phase ? `:${e.message.phase}` : ''}`,
  );

test('every event type, in order, for a request through gateway, route and backend policies', async () => {
  const traced = proxy.trace();
  const res = await request(proxy.url('/api/items?x=1'), {
    method: 'POST',
    body: 'hello upstream',
    headers: { authorization: `Bearer ${SECRET}`, 'x-api-key': SECRET, 'content-type': 'text/plain' },
  });
  const body = await res.body.text();
  const events = await traced;
  assert.deepEqual(types(events), [
    'requestStarted',
    'requestSnapshot:initial request',
    'routeSelection',
    'policySelection:gateway',
    'policySelection:route',
    'policy:gateway',
    'requestSnapshot:gateway policies',
    'policy:route',
    'policy:route',
    'requestSnapshot:route policies',
    'policySelection:backend',
    'policy:backend',
    'requestSnapshot:final request',
    'backendCallStart',
    'bodySnapshot:final request',
    'backendCallResult',
    'responseSnapshot:raw response',
    'responseSnapshot:backend response ready',
    'responseSnapshot:final response',
    'bodySnapshot:response',
    'requestFinished',
  ]);
  const find = (t: string, stage?: string) =>
    events.find((e) => e.message.type === t && (stage === undefined || e.message.stage === stage))
      ?.message as Record<
      string,
      // biome-ignore lint/suspicious/noExplicitAny: test access to event fields
      any
    >;
  assert.equal(find('routeSelection').selectedRoute.key, 'default/default/api');
  assert.ok(find('routeSelection').evaluatedRoutes.length >= 2);
  assert.deepEqual(Object.keys(find('policySelection').effectivePolicy), ['requestHeaderModifier']);
  const initial = find('requestSnapshot', 'initial request').requestState;
  assert.equal(initial.request.path, '/api/items');
  assert.equal(initial.request.method, 'POST');
  assert.equal(initial.source.address, '127.0.0.1');
  assert.deepEqual(initial.env, {});
  assert.match(initial.request.startTime, /^\d{4}-\d\d-\d\dT/);
  const final = find('requestSnapshot', 'final request');
  assert.equal(final.requestState.request.path, '/v2/items');
  assert.equal(final.requestState.request.headers['x-from-gateway'], '1');
  assert.deepEqual(final.backend, { name: `127.0.0.1:${up.port}`, type: 'static', protocol: 'http' });
  assert.equal(find('backendCallStart').target, `127.0.0.1:${up.port}`);
  assert.equal(
    Buffer.from(find('bodySnapshot', 'final request').body, 'base64').toString(),
    'hello upstream',
  );
  assert.equal(find('backendCallResult').status, 200);
  assert.equal(find('backendCallResult').error, null);
  assert.match(find('responseSnapshot', 'raw response').proxy.upstreamDuration, /^\d+\.\d+$/);
  assert.equal(find('responseSnapshot', 'final response').requestState.response.headers['x-route'], 'api');
  assert.equal(Buffer.from(find('bodySnapshot', 'response').body, 'base64').toString(), body);
  for (const e of events) {
    assert.equal(typeof e.eventEnd, 'number');
    assert.ok(e.eventStart === null || typeof e.eventStart === 'number');
    assert.equal(e.severity === 'info' || e.severity === 'warn' || e.severity === 'error', true);
  }
});

test('sensitive headers are redacted in every event, also when a policy adds them; the upstream still gets them', async () => {
  const traced = proxy.trace();
  const res = await request(proxy.url('/api/secret'), {
    headers: { authorization: `Bearer ${SECRET}`, 'proxy-authorization': SECRET, 'x-api-key': SECRET },
  });
  const echo = (await res.body.json()) as { headers: Record<string, string> };
  const events = await traced;
  const dump = JSON.stringify(events);
  // The response body snapshot is the echo of the upstream, which legitimately holds the header values.
  const withoutBodies = JSON.stringify(events.filter((e) => e.message.type !== 'bodySnapshot'));
  const finalReq = events.find(
    (e) => e.message.stage === 'final request' && e.message.type === 'requestSnapshot',
  );
  const finalState = finalReq?.message.requestState as
    | { request: { headers: Record<string, string> } }
    | undefined;
  const finalHeaders = finalState?.request.headers ?? {};
  assert.equal(finalHeaders['x-api-key'], '<redacted>', 'added by a policy, still redacted');
  assert.equal(finalHeaders['x-backend-key'], 'visible-value', 'a header that is not sensitive is shown');
  assert.equal(withoutBodies.includes(SECRET), false, 'a secret leaked into a trace event');
  assert.match(dump, /<redacted>/);
  assert.equal(echo.headers.authorization, `Bearer ${SECRET}`);
  assert.equal(echo.headers['x-api-key'], SECRET);
});

test('a policy rejection is an event with its reason, and the client gets the same answer as untraced', async () => {
  const send = () =>
    request(proxy.url('/blocked'), {
      method: 'POST',
      headers: { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
    });
  const plain = await send();
  const plainBody = await plain.body.text();
  const traced = proxy.trace();
  const res = await send();
  const events = await traced;
  assert.equal(res.statusCode, plain.statusCode);
  assert.equal(await res.body.text(), plainBody);
  const policy = events.find((e) => e.message.type === 'policy')?.message;
  assert.equal(policy?.policy, 'csrf');
  assert.equal(policy?.outcome, 'rejected');
  assert.equal(policy?.status, 403);
  assert.match(String(policy?.reason), /CSRF/);
  assert.equal(events.at(-1)?.message.type, 'requestFinished');
});

test('an expression picks which request is traced; others pass untraced', async () => {
  const traced = proxy.trace('request.path == "/api/wanted"');
  await (await request(proxy.url('/api/other'))).body.dump();
  await (await request(proxy.url('/api/wanted'))).body.dump();
  const events = await traced;
  const initial = events.find((e) => e.message.stage === 'initial request')?.message as unknown as {
    requestState: { request: { path: string } };
  };
  assert.equal(initial.requestState.request.path, '/api/wanted');
});

test('a request with no route is traced to its 404', async () => {
  const traced = proxy.trace();
  const res = await request(proxy.url('/nowhere'));
  assert.equal(res.statusCode, 404);
  await res.body.dump();
  const events = await traced;
  assert.deepEqual(types(events), [
    'requestStarted',
    'requestSnapshot:initial request',
    'routeSelection',
    'error',
    'responseSnapshot:final response',
    'bodySnapshot:response',
    'requestFinished',
  ]);
});
