import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { oneRoute, startUpstream, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';

let up: TestServer;
let proxy: TestProxy;
before(async () => {
  up = await startUpstream('slow', async (req, res) => {
    const ms = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('sleep') ?? 0);
    await sleep(ms);
    if (!res.destroyed) res.end('done');
  });
  // a timeout far above a busy machine's stall, so that a 10 ms answer is never cut
  proxy = await startProxy(oneRoute(up.port, 'timeout: {requestTimeout: 1s}'));
});
after(async () => {
  await proxy.close();
  await up.close();
});

test('a response within the timeout passes', async () => {
  const res = await fetch(proxy.url('/?sleep=10'));
  assert.equal(res.status, 200);
  assert.equal(await res.text(), 'done');
});

test('a slow upstream gets 504 at the deadline', async () => {
  const t0 = performance.now();
  const res = await fetch(proxy.url('/?sleep=5000'));
  const took = performance.now() - t0;
  assert.equal(res.status, 504);
  assert.equal(await res.text(), 'request timeout\n');
  assert.ok(took >= 980 && took < 4000, `took ${took} ms`);
});
