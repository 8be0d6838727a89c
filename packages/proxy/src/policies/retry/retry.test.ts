import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { CLOSED_PORT, eventually, oneRoute, startUpstream, type TestServer } from '@gw/testkit';
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
  // the access log says which retry answered, as agentgateway's does
  const record = (path: string) => proxy.accessLog.findLast((r) => r['http.path'] === path);
  await eventually(() => record('/r') !== undefined);
  assert.equal(record('/r')?.['retry.attempt'], 2);
  await (await fetch(proxy.url('/first'))).text();
  await eventually(() => record('/first') !== undefined);
  assert.equal(record('/first')?.['retry.attempt'], undefined, 'no field when the first try answered');
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

test('an attempt that runs out of backendRequestTimeout is tried again; the last one is a 504', async (t) => {
  let slowLeft = 0;
  const slow = await startUpstream('slow', async (_req, res) => {
    if (slowLeft > 0) {
      slowLeft--;
      await new Promise((r) => setTimeout(r, 600));
      if (!res.destroyed) res.end('late');
      return;
    }
    res.end('in time');
  });
  const p = await startProxy(
    oneRoute(
      slow.port,
      `timeout: {backendRequestTimeout: 150ms}
retry: {attempts: 2, codes: [503], backoff: 10ms}`,
    ),
  );
  t.after(async () => {
    await p.close();
    await slow.close();
  });
  slowLeft = 1;
  const ok = await fetch(p.url('/'));
  assert.equal(ok.status, 200);
  assert.equal(await ok.text(), 'in time');
  assert.equal(slow.seen.length, 2);
  slowLeft = 5;
  const late = await fetch(p.url('/'));
  assert.equal(late.status, 504);
  await late.text();
  assert.equal(slow.seen.length, 5, 'three attempts, each timed out');
});

test('a connection that fails is retried on another attempt', async () => {
  // nothing listens there (a port freed by a server of this process could be handed to the next)
  const port = CLOSED_PORT;
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

test('condition: a response the CEL holds for is retried like a listed status; precondition false: one attempt', async () => {
  // 200s that ask to be retried (x-retry: yes) until `pending` runs out.
  let pending = 0;
  const cond = await startUpstream('cond', (_req, res) => {
    const again = pending > 0;
    if (again) pending--;
    res.writeHead(200, again ? { 'x-retry': 'yes' } : {});
    res.end(again ? 'not yet' : 'done');
  });
  const p = await startProxy(
    oneRoute(
      cond.port,
      `retry: {attempts: 3, codes: [], backoff: 1ms, condition: 'response.headers["x-retry"] == "yes"', precondition: 'request.method == "GET"'}`,
    ),
  );
  try {
    pending = 2;
    const got = await fetch(p.url('/c'));
    assert.equal(await got.text(), 'done');
    assert.equal(cond.seen.length, 3, 'two retries on the condition');
    // Past `attempts`, the last answer stands.
    cond.seen.length = 0;
    pending = 10;
    assert.equal(await (await fetch(p.url('/c'))).text(), 'not yet');
    assert.equal(cond.seen.length, 4);
    // A POST fails the precondition: one attempt whatever the condition says.
    cond.seen.length = 0;
    pending = 1;
    const post = await fetch(p.url('/c'), { method: 'POST', body: 'x' });
    assert.equal(await post.text(), 'not yet');
    assert.equal(cond.seen.length, 1);
  } finally {
    await p.close();
    await cond.close();
  }
});

test('a condition or precondition that is not CEL is named at its field', async () => {
  for (const field of ['condition', 'precondition']) {
    await assert.rejects(
      startProxy(oneRoute(1, `retry: {codes: [503], ${field}: 'request.path =='}`)),
      (err: Error) => new RegExp(`policies\\.retry\\.${field}: invalid CEL`).test(err.message),
    );
  }
});
