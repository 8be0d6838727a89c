import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { CLOSED_PORT, oneRoute, startUpstream, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';

let up: TestServer;
let proxy: TestProxy;
before(async () => {
  up = await startUpstream();
  proxy = await startProxy(
    oneRoute(
      up.port,
      `requestHeaderModifier: {add: {x-add: two}, set: {x-set: new}, remove: [x-drop]}
responseHeaderModifier: {add: {x-resp: added}, set: {x-upstream: replaced}, remove: [content-type]}`,
    ),
  );
});
after(async () => {
  await proxy.close();
  await up.close();
});

test('request headers: add appends, set replaces, remove drops (case-insensitive)', async () => {
  const res = await fetch(proxy.url('/'), { headers: { 'X-Add': 'one', 'x-set': 'old', 'X-Drop': 'gone' } });
  assert.equal(res.status, 200);
  const echo = (await res.json()) as { headers: Record<string, string> };
  assert.equal(echo.headers['x-add'], 'one, two');
  assert.equal(echo.headers['x-set'], 'new');
  assert.equal(echo.headers['x-drop'], undefined);
});

test('response headers are modified on the way back', async () => {
  const res = await fetch(proxy.url('/'));
  await res.arrayBuffer();
  assert.equal(res.headers.get('x-resp'), 'added');
  assert.equal(res.headers.get('x-upstream'), 'replaced');
  assert.equal(res.headers.get('content-type'), null);
});

test('an error the gateway answers gets the response headers too (set and add)', async (t) => {
  const p = await startProxy(
    oneRoute(
      CLOSED_PORT,
      'responseHeaderModifier: {set: {strict-transport-security: max-age=63072000}, add: {x-resp: added}}',
    ),
  );
  t.after(() => p.close());
  const res = await fetch(p.url('/'));
  assert.equal(res.status, 503);
  await res.arrayBuffer();
  assert.equal(res.headers.get('strict-transport-security'), 'max-age=63072000');
  assert.equal(res.headers.get('x-resp'), 'added');
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
});
