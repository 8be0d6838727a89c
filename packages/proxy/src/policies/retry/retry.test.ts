import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { oneRoute, startUpstream, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';

let up: TestServer;
let proxy: TestProxy;
let failuresLeft = 0;
before(async () => {
  up = await startUpstream('flaky', (_req, res, echo) => {
    if (failuresLeft > 0) {
      failuresLeft--;
      res.writeHead(503);
      res.end('busy');
      return;
    }
    res.end(`ok after ${up.seen.length} attempts, body=${echo.body}`);
  });
  proxy = await startProxy(oneRoute(up.port, 'retry: {attempts: 2, codes: [503], backoff: 10ms}'));
});
after(async () => {
  await proxy.close();
  await up.close();
});

test('retries a listed status and replays the request body', async () => {
  up.seen.length = 0;
  failuresLeft = 2;
  const res = await fetch(proxy.url('/r'), { method: 'POST', body: 'payload' });
  assert.equal(res.status, 200);
  assert.equal(await res.text(), 'ok after 3 attempts, body=payload');
});

test('gives up after `attempts` retries and returns the last answer', async () => {
  up.seen.length = 0;
  failuresLeft = 5;
  const res = await fetch(proxy.url('/r'));
  assert.equal(res.status, 503);
  assert.equal(await res.text(), 'busy');
  assert.equal(up.seen.length, 3);
  failuresLeft = 0;
});

test('a connection that fails is retried on another attempt', async () => {
  const dead = await startUpstream('gone');
  const port = dead.port;
  await dead.close();
  const p = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - policies: {retry: {attempts: 1, codes: [503]}}
      backends: [{host: "127.0.0.1:${port}"}]
`);
  try {
    const t0 = performance.now();
    const res = await fetch(p.url('/'));
    assert.equal(res.status, 503);
    assert.match(await res.text(), /upstream connect error/);
    assert.ok(performance.now() - t0 < 2000);
  } finally {
    await p.close();
  }
});
