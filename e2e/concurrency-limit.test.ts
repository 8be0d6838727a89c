// concurrencyLimit on the real `bin/gw` with two workers: a limit per caller and one for the route,
// counted across the workers (each request on a connection of its own), slots held until the answer
// has been sent, and given back when the client goes away.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { startUpstream, type TestServer } from '@gw/testkit';
import { until } from './support/controller-e2e.ts';
import { cleanupGw, configBlock, type GwProcess, startGw } from './support/gw-process.ts';

let upstream: TestServer;
let g: GwProcess;
let port: number;
/** Requests the upstream holds, answered when the test says. */
const waiting: (() => void)[] = [];

before(async () => {
  upstream = await startUpstream('slow', async (req) => {
    if (req.url?.startsWith('/hold')) await new Promise<void>((r) => waiting.push(r));
  });
  g = await startGw({
    yaml: `${configBlock('workerThreads: 2')}binds:
- port: 0
  listeners:
  - routes:
    - policies:
        concurrencyLimit:
        - maxConcurrent: 3
        - maxConcurrent: 1
          key: request.headers["x-user"]
          limitOverride: 'request.headers["x-tier"] == "gold" ? 2 : (request.headers["x-tier"] == "none" ? 0 : 1)'
      backends: [{host: "127.0.0.1:${upstream.port}"}]
`,
  });
  port = await g.proxyPort();
});
after(async () => {
  for (const w of waiting.splice(0)) w();
  await cleanupGw();
  await upstream.close();
});

interface Sent {
  done: Promise<{ status: number; body: string }>;
  abort: () => void;
}

/** A GET on a connection of its own (so requests spread over both workers). */
function send(user: string, path: string, tier?: string): Sent {
  const headers = { 'x-user': user, ...(tier ? { 'x-tier': tier } : {}) };
  const req = http.request({ host: '127.0.0.1', port, path, agent: false, headers });
  const done = new Promise<{ status: number; body: string }>((resolve, reject) => {
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
  });
  req.end();
  return { done, abort: () => req.destroy() };
}

const held = (n: number) =>
  until(`${n} requests held upstream`, async () => waiting.length >= n || undefined, {
    timeoutMs: 5000,
    intervalMs: 10,
  });

describe('concurrencyLimit', () => {
  test('per caller and for the route, across workers; slots go back when the answer is sent', async () => {
    const alice = send('alice', '/hold/a');
    await held(1);
    const again = await send('alice', '/hold/a2').done;
    assert.equal(again.status, 429);
    assert.match(again.body, /concurrencyLimit: 1 already in flight/);
    const bob = send('bob', '/hold/b');
    const carol = send('carol', '/hold/c');
    await held(3);
    assert.equal((await send('dave', '/hold/d').done).status, 429, 'the route holds 3 at most');
    assert.equal(waiting.length, 3, 'refused requests never reached the upstream');

    for (const w of waiting.splice(0)) w();
    for (const s of [alice, bob, carol]) assert.equal((await s.done).status, 200);
    // every slot is back: alice, and three callers at once, get in
    const next = ['alice', 'bob', 'carol'].map((u) => send(u, '/hold/n'));
    await held(3);
    for (const w of waiting.splice(0)) w();
    for (const s of next) assert.equal((await s.done).status, 200);
  });

  test("limitOverride: a request's own limit in place of maxConcurrent, 0 refusing it", async () => {
    const gold = [send('gina', '/hold/g1', 'gold'), send('gina', '/hold/g2', 'gold')];
    await held(2);
    const third = await send('gina', '/hold/g3', 'gold').done;
    assert.equal(third.status, 429);
    assert.match(third.body, /concurrencyLimit: 2 already in flight/);
    const none = await send('nora', '/quick', 'none').done;
    assert.equal(none.status, 429);
    assert.match(none.body, /concurrencyLimit: none allowed/);
    for (const w of waiting.splice(0)) w();
    for (const s of gold) assert.equal((await s.done).status, 200);
  });

  test('a client that goes away gives its slot back', async () => {
    const gone = send('erin', '/hold/e');
    await held(1);
    gone.abort();
    await gone.done.catch(() => undefined);
    // the slot goes back once gw sees the connection close
    const ok = await until(
      'erin to get in again',
      async () => {
        const s = send('erin', '/quick');
        const r = await s.done;
        return r.status === 200 ? r : undefined;
      },
      { timeoutMs: 5000, intervalMs: 50 },
    );
    assert.equal(ok.status, 200);
    for (const w of waiting.splice(0)) w();
  });
});
