// The supervisor with real worker threads: a crashed worker comes back on the current config with the
// shared rate-limit state, and shutdown cuts and counts what outlives the termination deadline.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startUpstream } from '@gw/testkit';
import pino from 'pino';
import { request } from 'undici';
import { loadConfigText } from '../config/load.ts';
import { sharedMemoryOf } from '../policies/shared-memory.ts';
import { Supervisor } from './supervisor.ts';

const log = pino({ level: 'silent' });

const config = (version: string, upstreamPort = 1) => `binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - name: version
      matches: [{path: {pathPrefix: /version}}]
      policies: {directResponse: {status: 200, body: "${version}"}}
    - name: limited
      matches: [{path: {pathPrefix: /limited}}]
      policies:
        localRateLimit: [{maxTokens: 6, tokensPerFill: 1, fillInterval: 1h}]
        directResponse: {status: 200, body: "ok"}
    - name: slow
      matches: [{path: {pathPrefix: /slow}}]
      backends: [{host: "127.0.0.1:${upstreamPort}"}]
`;

async function until(what: string, f: () => boolean, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!f()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** A request on a new connection, so SO_REUSEPORT spreads the requests over the workers. */
async function get(port: number, path: string): Promise<{ status: number; body: string }> {
  const r = await request(`http://127.0.0.1:${port}${path}`, { reset: true });
  return { status: r.statusCode, body: await r.body.text() };
}

test('a crashed worker comes back serving the current config, with the shared rate-limit buckets', async (t) => {
  const sup = new Supervisor({ workers: 2, logFilter: 'error', logFormat: 'json', log });
  t.after(() => sup.stop(1000));
  const ir = loadConfigText('test.yaml', config('v1'), process.cwd()).ir;
  await sup.apply(ir, sharedMemoryOf(ir));
  const current = loadConfigText('test.yaml', config('v2'), process.cwd()).ir;
  await sup.apply(current, sharedMemoryOf(current));
  const port = Object.values(sup.ports)[0] as number;

  // Spend 4 of the 6 tokens, on both workers.
  for (let i = 0; i < 4; i++) assert.equal((await get(port, '/limited')).status, 200);

  const exits: number[] = [];
  sup.onWorkerExit = (index) => exits.push(index);
  const crashed = sup.workers[0]?.worker;
  await crashed?.terminate();
  await until('the replacement worker', () => exits.length === 1 && sup.workers[0]?.worker !== crashed);
  await until('the replacement applied the config', () => sup.workers[0]?.version === current.version);

  // Every answer now comes from the current config, whichever worker serves it...
  for (let i = 0; i < 8; i++) assert.equal((await get(port, '/version')).body, 'v2');
  // ...and the replacement shares the buckets: 2 tokens were left, across both workers.
  const statuses: number[] = [];
  for (let i = 0; i < 10; i++) statuses.push((await get(port, '/limited')).status);
  assert.deepEqual(
    statuses.filter((s) => s === 200).length,
    2,
    `after the restart: ${statuses.join(' ')} (a fresh bucket would let more through)`,
  );
});

test('shutdown cuts a request slower than the termination deadline and counts it', async (t) => {
  const slow = await startUpstream('slow', () => sleep(5_000));
  t.after(() => slow.close());
  const sup = new Supervisor({ workers: 1, logFilter: 'error', logFormat: 'json', log });
  const ir = loadConfigText('test.yaml', config('v1', slow.port), process.cwd()).ir;
  await sup.apply(ir, sharedMemoryOf(ir));
  const port = Object.values(sup.ports)[0] as number;
  const inflight = request(`http://127.0.0.1:${port}/slow`).then(
    async (r) => ({ status: r.statusCode, body: await r.body.text() }),
    (err: Error) => ({ error: err.message }),
  );
  await until('the slow request upstream', () => slow.seen.length === 1);
  const t0 = Date.now();
  const cut = await sup.stop(200);
  assert.equal(cut, 1, 'one request was cut');
  assert.ok(Date.now() - t0 < 3_000, 'shutdown waited for the deadline, not for the request');
  const outcome = await inflight;
  assert.ok('error' in outcome, `the cut request did not complete: ${JSON.stringify(outcome)}`);
});
