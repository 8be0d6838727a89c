// dialInTurn: a Service's workloads dialled in turn by a real undici Pool, over real sockets, with a
// workload that refuses connections passed over.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { CLOSED_PORT } from '@gw/testkit';
import { buildConnector, Pool } from 'undici';
import { dialInTurn, type Endpoint, SKIP_UNREACHABLE_MS, turnOrder } from './in-turn.ts';

let servers: Server[];
/** Two servers that answer with their index, and a port nothing listens on. */
let live: Endpoint[];
let dead: Endpoint;

before(async () => {
  servers = [0, 1].map((i) =>
    createServer((_req, res) => {
      res.end(String(i));
    }),
  );
  for (const s of servers) await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  live = servers.map((s) => ({ host: '127.0.0.1', port: (s.address() as AddressInfo).port }));
  // nothing listens there: connections to it are refused
  dead = { host: '127.0.0.1', port: CLOSED_PORT };
});
after(async () => {
  for (const s of servers ?? []) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

/** A connector that records each address it dials. */
function recording(): { connect: ReturnType<typeof buildConnector>; dialled: number[] } {
  const dialled: number[] = [];
  const inner = buildConnector({ timeout: 2000 });
  const connect: ReturnType<typeof buildConnector> = (opts, cb) => {
    dialled.push(Number(opts.port));
    return inner(opts, cb);
  };
  return { connect, dialled };
}

/** `count` requests at once through a Pool whose connections are dialled by `connect`. */
async function burst(connect: ReturnType<typeof buildConnector>, count: number): Promise<string[]> {
  // no keep-alive: each request dials a connection of its own
  const pool = new Pool('http://svc.example:80', { connect, pipelining: 0, keepAliveTimeout: 1 });
  try {
    return await Promise.all(
      Array.from({ length: count }, async () => {
        const r = await pool.request({ path: '/', method: 'GET', reset: true });
        return r.body.text();
      }),
    );
  } finally {
    await pool.close();
  }
}

describe('dialInTurn', () => {
  test('each connection goes to the next workload', async () => {
    const got = await burst(dialInTurn(buildConnector({}), live), 8);
    assert.equal(got.filter((b) => b === '0').length, 4, got.join(','));
    assert.equal(got.filter((b) => b === '1').length, 4, got.join(','));
  });

  test('a workload that refuses is passed over: no request fails, and it is not dialled again for a while', async () => {
    let clock = 1_000_000;
    const { connect, dialled } = recording();
    const dial = dialInTurn(connect, [dead, ...live], () => clock);
    // connections dialled at once all start before the first refusal: each refused one is redialled
    const first = await burst(dial, 12);
    assert.equal(first.length, 12);
    assert.ok(
      first.every((b) => b === '0' || b === '1'),
      first.join(','),
    );
    assert.ok(dialled.includes(dead.port), `dialled ${dialled.join(',')}`);
    assert.ok(first.includes('0') && first.includes('1'), first.join(','));

    // from then on it is passed over
    dialled.length = 0;
    await burst(dial, 6);
    assert.equal(dialled.filter((p) => p === dead.port).length, 0, `dialled ${dialled.join(',')}`);

    // once the time is up it is dialled again (and passed over again, since it still refuses): one
    // request at a time, a turn of three dials it once
    clock += SKIP_UNREACHABLE_MS + 1;
    dialled.length = 0;
    for (let i = 0; i < 3; i++) assert.match((await burst(dial, 1))[0] ?? '', /^[01]$/);
    assert.equal(dialled.filter((p) => p === dead.port).length, 1, `dialled ${dialled.join(',')}`);
    assert.equal(dialled.length, 4, `dialled ${dialled.join(',')}`);
  });

  test('a weight is a share of the turn, spread out', async () => {
    const at = (weights: (number | undefined)[]) =>
      turnOrder(weights.map((weight) => ({ host: 'h', port: 1, ...(weight ? { weight } : {}) })));
    assert.deepEqual(at([undefined, undefined, undefined]), [0, 1, 2]);
    assert.deepEqual(at([3, 1]), [0, 0, 1, 0]);
    assert.deepEqual(at([1, 2]), [1, 0, 1]);
    // large capacities are scaled down to a turn of at most 256, each keeping a place
    const big = at([10_000, 1]);
    assert.ok(big.length <= 257, `${big.length}`);
    assert.equal(big.filter((i) => i === 1).length, 1);
    // through a real Pool: eight connections over 3:1 are six and two, wherever the turn starts
    const weighted = [{ ...(live[0] as Endpoint), weight: 3 }, live[1] as Endpoint];
    for (let round = 0; round < 3; round++) {
      const got = await burst(dialInTurn(buildConnector({}), weighted), 8);
      assert.equal(got.filter((b) => b === '0').length, 6, got.join(','));
    }
  });

  test('when no workload answers, the connection fails after trying each once', async () => {
    const { connect, dialled } = recording();
    const dial = dialInTurn(connect, [dead, dead]);
    const pool = new Pool('http://svc.example:80', { connect: dial });
    try {
      await assert.rejects(pool.request({ path: '/', method: 'GET' }), { code: 'ECONNREFUSED' });
    } finally {
      await pool.close();
    }
    assert.equal(dialled.length, 2);
  });

  test('an error that is not about reaching the workload is not retried elsewhere', async () => {
    // TLS to a plain HTTP server: the handshake fails on a connection that was made
    const dialled: number[] = [];
    const tls = buildConnector({ rejectUnauthorized: false });
    const dial = dialInTurn((opts, cb) => {
      dialled.push(Number(opts.port));
      return tls({ ...opts, protocol: 'https:' }, cb);
    }, live);
    const pool = new Pool('https://svc.example:443', { connect: dial });
    try {
      await assert.rejects(pool.request({ path: '/', method: 'GET' }));
    } finally {
      await pool.close();
    }
    assert.equal(dialled.length, 1, `dialled ${dialled.join(',')}`);
  });
});
