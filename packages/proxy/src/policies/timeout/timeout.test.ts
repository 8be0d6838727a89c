import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { oneRoute, startUpstream, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { request } from 'undici';

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

describe('responseIdleTimeout', () => {
  let drip: TestServer;
  let idle: TestProxy;
  before(async () => {
    // /stall: one chunk, then nothing for 3 s; /steady: a chunk every 100 ms for 1 s
    drip = await startUpstream('drip', async (req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first\n');
      if (req.url?.startsWith('/big')) {
        // 16 MiB at once: far more than the sockets between hold, so the gateway waits on its client
        res.end(Buffer.alloc(16 * 1024 * 1024, 120));
        return;
      }
      if (req.url?.startsWith('/stall')) {
        await sleep(3000);
        if (!res.destroyed) res.end('late\n');
        return;
      }
      for (let i = 0; i < 10 && !res.destroyed; i++) {
        await sleep(100);
        res.write(`${i}\n`);
      }
      res.end('end\n');
    });
    idle = await startProxy(oneRoute(drip.port, 'timeout: {responseIdleTimeout: 400ms}'));
  });
  after(async () => {
    await idle?.close();
    await drip?.close();
  });

  test('a body that stalls is cut once the backend has sent nothing for that long', async () => {
    const t0 = performance.now();
    const r = await request(idle.url('/stall'));
    assert.equal(r.statusCode, 200);
    let got = '';
    await assert.rejects(async () => {
      for await (const c of r.body) got += c;
    });
    const took = performance.now() - t0;
    assert.equal(got, 'first\n');
    assert.ok(took >= 380 && took < 2500, `cut after ${Math.round(took)} ms`);
  });

  test('a client slow to read does not count: the wait is for the backend, not for the client', async () => {
    const r = await request(idle.url('/big'));
    assert.equal(r.statusCode, 200);
    // read nothing for longer than the idle timeout, while the backend has long sent everything
    await sleep(1200);
    let n = 0;
    for await (const c of r.body) n += (c as Buffer).length;
    assert.equal(n, 6 + 16 * 1024 * 1024);
  });

  test('a body that keeps coming is never cut, however long it takes in all', async () => {
    const r = await request(idle.url('/steady'));
    assert.equal(r.statusCode, 200);
    const text = await r.body.text();
    assert.match(text, /^first\n0\n1\n[\s\S]*9\nend\n$/);
  });
});

test('a timeout longer than a timer can wait (720h: "practically never") does not cut a request', async () => {
  const long = await startProxy(
    oneRoute(up.port, 'timeout: {requestTimeout: 720h, backendRequestTimeout: 1000h}'),
  );
  try {
    const res = await fetch(long.url('/?sleep=100'));
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'done');
  } finally {
    await long.close();
  }
});
