// Local rate limits are exact per proxy replica: every worker draws from one shared bucket (one per
// key for a limit with a key).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startUpstream, type TestServer } from '@gw/testkit';
import { Client } from 'undici';
import { cleanupGw, configBlock, type GwProcess, startGw } from './support/gw-process.ts';

let up: TestServer;
let gw: GwProcess;
before(async () => {
  up = await startUpstream();
  gw = await startGw({
    args: ['--workers', '2'],
    yaml: `${configBlock()}binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - name: per-user
      matches: [{path: {pathPrefix: /per-user}}]
      policies:
        localRateLimit: [{maxTokens: 5, tokensPerFill: 5, fillInterval: 1h, key: 'request.headers["x-user"]'}]
      backends: [{host: "127.0.0.1:${up.port}"}]
    - policies: {localRateLimit: [{requests: 25, unit: Hours}]}
      backends: [{host: "127.0.0.1:${up.port}"}]
`,
  });
});
after(async () => {
  await cleanupGw();
  await up.close();
});

test('60 requests on fresh connections across 2 workers: exactly 25 pass', async () => {
  const port = await gw.proxyPort();
  const statuses: number[] = [];
  await Promise.all(
    Array.from({ length: 6 }, async () => {
      for (let i = 0; i < 10; i++) {
        // A new connection each time, so the kernel spreads them over both workers.
        const c = new Client(`http://127.0.0.1:${port}`);
        const r = await c.request({ path: '/', method: 'GET' });
        await r.body.dump();
        statuses.push(r.statusCode);
        await c.close();
      }
    }),
  );
  assert.equal(statuses.filter((s) => s === 200).length, 25);
  assert.equal(statuses.filter((s) => s === 429).length, 35);
  const metrics = await (await fetch(`${gw.stats}/metrics`)).text();
  const workers = new Set([...metrics.matchAll(/gw_requests_total\{[^}]*worker="(\d)"\}/g)].map((m) => m[1]));
  assert.equal(workers.size, 2, 'both workers served requests');
});

test('a limit with a key: 4 users × 12 requests on fresh connections across 2 workers, exactly 5 each pass', async () => {
  const port = await gw.proxyPort();
  const passed = new Map<string, number>();
  await Promise.all(
    ['u1', 'u2', 'u3', 'u4'].map(async (user) => {
      for (let i = 0; i < 12; i++) {
        const c = new Client(`http://127.0.0.1:${port}`);
        const r = await c.request({ path: '/per-user', method: 'GET', headers: { 'x-user': user } });
        await r.body.dump();
        if (r.statusCode === 200) passed.set(user, (passed.get(user) ?? 0) + 1);
        else assert.equal(r.statusCode, 429);
        await c.close();
      }
    }),
  );
  assert.deepEqual(Object.fromEntries(passed), { u1: 5, u2: 5, u3: 5, u4: 5 });
});
