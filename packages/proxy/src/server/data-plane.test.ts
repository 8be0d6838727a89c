import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startUpstream } from '@gw/testkit';
import { startProxy } from '@gw/testkit/proxy';
import { Client, request } from 'undici';

const config = (port: number, route: string, body = '') => `binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - name: l
    routes:
    - name: ${route}
      ${body ? `policies: {directResponse: {status: 200, body: "${body}"}}` : ''}
      backends: [{host: "127.0.0.1:${port}"}]
`;

test('a request in flight finishes on the table it started with', async (t) => {
  const slow = await startUpstream('slow', async (_req, res) => {
    await sleep(400);
    res.end('old route answered');
  });
  t.after(() => slow.close());
  const p = await startProxy(config(slow.port, 'old'));
  t.after(() => p.close());

  const inflight = request(p.url('/'));
  // routed by the old table once the upstream has it (it records a request before answering)
  for (let i = 0; i < 250 && slow.seen.length === 0; i++) await sleep(20);
  assert.equal(slow.seen.length, 1, 'the first request reached the upstream');
  await p.reload(config(slow.port, 'new', 'new table'));
  const fresh = await request(p.url('/'));
  assert.equal(await fresh.body.text(), 'new table');
  const old = await inflight;
  assert.equal(old.statusCode, 200);
  assert.equal(await old.body.text(), 'old route answered');
});

test('a config that cannot be applied leaves the running one in place', async (t) => {
  const up = await startUpstream();
  t.after(() => up.close());
  const p = await startProxy(config(up.port, 'good', 'running'));
  t.after(() => p.close());
  const before = p.plane.version;

  // A port that is taken: compiling succeeds, binding fails, nothing changes.
  const taken = createServer();
  await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
  t.after(() => taken.close());
  const busyPort = (taken.address() as { port: number }).port;
  await assert.rejects(
    p.reload(
      `${config(up.port, 'good', 'replaced')}- port: ${busyPort}\n  address: 127.0.0.1\n  listeners: [{routes: []}]\n`,
    ),
    // the bind named by its address and its listener, then the reason
    new RegExp(`cannot listen: 127\\.0\\.0\\.1:${busyPort} \\(bind/${busyPort}/listener0\\): .*EADDRINUSE`),
  );
  assert.equal(p.plane.version, before);
  const r = await request(p.url('/'));
  assert.equal(await r.body.text(), 'running');

  // An invalid file never reaches the data plane at all.
  await assert.rejects(p.reload('binds: [{port: nope}]'), /binds\[0\]\.port/);
  assert.equal(await (await request(p.url('/'))).body.text(), 'running');
});

test('a listener removed by a reload stops accepting; the others keep their sockets', async (t) => {
  const up = await startUpstream();
  t.after(() => up.close());
  const two = `${config(up.port, 'a', 'first')}- port: 0
  address: 127.0.0.1
  listeners: [{name: second, routes: [{policies: {directResponse: {status: 200, body: second}}}]}]
`;
  const p = await startProxy(two);
  t.after(() => p.close());
  const firstPort = p.port(0);
  const secondPort = p.port(1);
  assert.equal(await (await request(`http://127.0.0.1:${secondPort}/`)).body.text(), 'second');
  await p.reload(config(up.port, 'a', 'first again'));
  assert.equal(p.port(0), firstPort, 'the kept bind keeps its port');
  assert.equal(await (await request(`http://127.0.0.1:${firstPort}/`)).body.text(), 'first again');
  const fresh = new Client(`http://127.0.0.1:${secondPort}`);
  t.after(() => fresh.destroy());
  await assert.rejects(fresh.request({ path: '/', method: 'GET' }), /ECONNREFUSED/);
});

test('a reload keeps the connection pool of a backend it did not change', async (t) => {
  const a = await startUpstream('a');
  const b = await startUpstream('b');
  const yaml = (bHeader: string) => `binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - name: a
      matches: [{path: {pathPrefix: /a}}]
      backends: [{host: "127.0.0.1:${a.port}"}]
    - name: b
      matches: [{path: {pathPrefix: /b}}]
      policies: {requestHeaderModifier: {set: {x-version: "${bHeader}"}}}
      backends: [{host: "127.0.0.1:${b.port}"}]
`;
  const p = await startProxy(yaml('1'));
  t.after(async () => {
    await p.close();
    await a.close();
    await b.close();
  });
  const get = async (path: string) => {
    const r = await request(p.url(path));
    return JSON.parse(await r.body.text()) as { headers: Record<string, string> };
  };
  for (let i = 0; i < 3; i++) await get('/a');
  assert.equal(a.connections, 1, 'sequential requests share one keep-alive connection');
  await p.reload(yaml('2'));
  assert.equal((await get('/b')).headers['x-version'], '2', 'the new config is in effect');
  for (let i = 0; i < 3; i++) await get('/a');
  assert.equal(a.connections, 1, 'the untouched backend kept its pool and its connection');
});
