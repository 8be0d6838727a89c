// xDS mode end to end: the real `bin/gw --xds-address … --gateway …` against an in-test controller xDS
// server. Not ready before the first config; real HTTP through a pushed Bind/Route; a pushed change
// takes effect (the time it takes is printed); a refused push keeps traffic flowing; a controller that
// goes away leaves the proxy serving.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import type { NamedResource } from '@gw/controller/translator/types';
import { startXdsServer, type XdsServer } from '@gw/controller/xds/server';
import { startUpstream, type TestServer } from '@gw/testkit';
import { cleanupGw, freePort, type GwProcess, sleep, startGw } from './support/gw-process.ts';

const GATEWAY = 'default/web';
const LISTENER = `${GATEWAY}/http`;

let xds: XdsServer;
let v1: TestServer;
let v2: TestServer;
let port: number;
let gw: GwProcess;

before(async () => {
  [xds, v1, v2, port] = await Promise.all([
    startXdsServer({ port: 0, host: '127.0.0.1', mode: 'plaintext' }),
    startUpstream('v1'),
    startUpstream('v2'),
    freePort(),
  ]);
});
after(async () => {
  await cleanupGw();
  await Promise.all([xds.close(), v1.close(), v2.close()]);
});

/** One bind on `port` (loopback), one route `/` to `upstream`, and `more`. */
function resources(upstream: TestServer, more: NamedResource[] = []): NamedResource[] {
  return [
    {
      name: `bind/${port}`,
      resource: { bind: { port, listeners: [{ name: LISTENER, gateway: GATEWAY, protocol: 'HTTP' }] } },
    },
    {
      name: `route/${port}/${LISTENER}/default/web/0`,
      resource: {
        route: {
          port,
          listener: LISTENER,
          namespace: 'default',
          name: 'web',
          matches: [{ path: { pathPrefix: '/' } }],
          backends: [{ weight: 1, host: { host: '127.0.0.1', port: upstream.port } }],
        },
      },
    },
    ...more,
  ];
}

/** GET on a new connection (no agent), so requests spread over the workers. */
function get(path = '/'): Promise<{ status: number; upstream: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      res.resume();
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, upstream: res.headers['x-upstream'] as string | undefined }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

describe('gw --xds-address', () => {
  test('not ready until the first config arrives; then serves the pushed route', async () => {
    gw = await startGw({
      args: [
        '--xds-address',
        `http://127.0.0.1:${xds.port}`,
        '--gateway',
        GATEWAY,
        '--admin-addr',
        '127.0.0.1:0',
        '--stats-addr',
        '127.0.0.1:0',
        '--readiness-addr',
        '127.0.0.1:0',
      ],
      waitReady: false,
    });
    await until('the proxy to connect', () => xds.metrics().connected[GATEWAY] === 1);
    assert.equal((await fetch(`${gw.readiness}/healthz/ready`)).status, 503);

    const acked = new Promise((r) => xds.once('ack', r));
    xds.setResources(GATEWAY, resources(v1));
    await acked;
    assert.equal((await fetch(`${gw.readiness}/healthz/ready`)).status, 200);
    const r = await get('/hello');
    assert.equal(r.status, 200);
    assert.equal(r.upstream, 'v1');
    assert.equal(v1.seen.at(-1)?.url, '/hello');
    const dump = await gw.configDump();
    assert.equal(dump.source, `xds http://127.0.0.1:${xds.port} gateway ${GATEWAY}`);
    assert.deepEqual(
      dump.routes.map((x) => x.key),
      [`${LISTENER}/default/web/0`],
    );
  });

  test('a pushed route change reaches traffic (push-to-effect latency printed)', async () => {
    const firstSeen: number[] = [];
    const allApplied: number[] = [];
    let target = v1;
    for (let i = 0; i < 10; i++) {
      target = target === v1 ? v2 : v1;
      const want = target === v1 ? 'v1' : 'v2';
      const acked = new Promise<number>((r) => xds.once('ack', () => r(performance.now())));
      const t0 = performance.now();
      xds.setResources(GATEWAY, resources(target));
      // First request the new route answers, polling on fresh connections.
      for (;;) {
        const r = await get();
        if (r.upstream === want) break;
        if (performance.now() - t0 > 5000)
          assert.fail(`route change not visible after 5 s (still ${r.upstream})`);
      }
      firstSeen.push(performance.now() - t0);
      // The ACK goes out once every worker has swapped.
      allApplied.push((await acked) - t0);
      for (let k = 0; k < 6; k++) assert.equal((await get()).upstream, want);
    }
    const fmt = (xs: number[]) =>
      `median ${median(xs).toFixed(1)} ms, max ${Math.max(...xs).toFixed(1)} ms (n=${xs.length})`;
    console.log(`xDS push → first request on the new route: ${fmt(firstSeen)}`);
    console.log(`xDS push → ACK (all workers swapped): ${fmt(allApplied)}`);
  });

  test('a refused push is NACKed, shows in the config dump, and traffic keeps the last good config', async () => {
    const before = (await get()).upstream;
    const nacked = new Promise<{ message: string }>((r) => xds.once('nack', r));
    xds.setResources(
      GATEWAY,
      resources(before === 'v1' ? v1 : v2, [
        {
          name: 'policy/default/broken/0',
          resource: {
            policy: {
              name: 'default/broken',
              target: { route: 'default/web' },
              traffic: { timeout: { x: 1 } },
            },
          },
        },
      ]),
    );
    const nack = await nacked;
    assert.match(nack.message, /policy\/default\/broken\/0: traffic\.timeout\.x: unknown field "x"/);
    const dump = await gw.configDump();
    assert.match(String(dump.lastReloadError), /policy\/default\/broken\/0/);
    assert.equal((await get()).upstream, before);
    assert.equal((await fetch(`${gw.readiness}/healthz/ready`)).status, 200);
  });

  test('the controller goes away: the proxy keeps serving', async () => {
    xds.setResources(GATEWAY, resources(v1));
    await until('v1', async () => (await get()).upstream === 'v1');
    await xds.close();
    await until('the proxy sees the controller gone', () =>
      gw.stdout.some((l) => /xDS disconnected/.test(l)),
    );
    assert.equal((await get()).upstream, 'v1');
    assert.equal((await fetch(`${gw.readiness}/healthz/ready`)).status, 200);
  });
});

async function until(what: string, f: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await f())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}
