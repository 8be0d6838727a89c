import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startUpstream, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';

let up: TestServer;
let proxy: TestProxy;
before(async () => {
  up = await startUpstream();
  proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - name: fixed
      matches: [{path: {exact: /fixed}}]
      policies: {delay: {duration: 200ms}}
      backends: [{host: "127.0.0.1:${up.port}"}]
    - name: cel
      matches: [{path: {exact: /cel}}]
      policies:
        delay:
          conditional:
          - {condition: 'request.headers["x-slow"] == "yes"', duration: 'duration("250ms")'}
          - {duration: "int(request.headers['x-ms'])"}
      backends: [{host: "127.0.0.1:${up.port}"}]
    - name: timeout
      matches: [{path: {exact: /over}}]
      policies: {delay: {duration: 5s}, timeout: {requestTimeout: 200ms}}
      backends: [{host: "127.0.0.1:${up.port}"}]
`);
});
after(async () => {
  await proxy.close();
  await up.close();
});

async function timed(path: string, headers: Record<string, string> = {}) {
  const t0 = performance.now();
  const res = await fetch(proxy.url(path), { headers });
  await res.arrayBuffer();
  return { status: res.status, ms: performance.now() - t0 };
}

test('a fixed delay holds the request', async () => {
  const r = await timed('/fixed');
  assert.equal(r.status, 200);
  assert.ok(r.ms >= 190, `took ${r.ms}`);
});

test('CEL conditions pick the delay; a CEL number is milliseconds; non-positive injects none', async () => {
  const slow = await timed('/cel', { 'x-slow': 'yes', 'x-ms': '0' });
  assert.ok(slow.ms >= 240, `took ${slow.ms}`);
  // a delay far longer than a busy machine's stall, so that "none" is told apart from it
  const ms = await timed('/cel', { 'x-ms': '1200' });
  assert.ok(ms.ms >= 1190, `took ${ms.ms}`);
  const none = await timed('/cel', { 'x-ms': '-5' });
  assert.ok(none.ms < 1000, `took ${none.ms}`);
});

test('the delay counts against the request timeout', async () => {
  const r = await timed('/over');
  assert.equal(r.status, 504);
  // cut at the 200 ms timeout, well before the 5 s delay
  assert.ok(r.ms < 3000, `took ${r.ms}`);
});
