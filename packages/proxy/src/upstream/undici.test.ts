// undici.ts loads undici's dispatcher modules by path instead of its index: they must be the very
// objects the index exports (an undici upgrade that moved a module fails here, not in production),
// and its `request` must send what undici's does.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as undici from 'undici';
import { Agent, buildConnector, errors, Pool, ProxyAgent, request } from './undici.ts';

let server: Server;
let origin: string;
const agent = new Agent();

before(async () => {
  server = createServer((req, res) => {
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
    });
    req.on('end', () => res.end(JSON.stringify({ method: req.method, url: req.url, size })));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(async () => {
  await agent.close();
  await new Promise((resolve) => server.close(resolve));
});

test('the modules are the ones undici index exports', () => {
  assert.equal(Pool, undici.Pool);
  assert.equal(Agent, undici.Agent);
  assert.equal(ProxyAgent, undici.ProxyAgent);
  assert.equal(buildConnector, undici.buildConnector);
  assert.equal(errors, undici.errors);
});

test('a dispatcher made from them has the request API', async () => {
  const pool = new Pool(origin);
  try {
    const res = await pool.request({ origin, path: '/p', method: 'GET' });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(await res.body.json(), { method: 'GET', url: '/p', size: 0 });
  } finally {
    await pool.close();
  }
});

test('request sends the path with its query, the method and the body', async () => {
  const res = await request(`${origin}/a/b?x=1&y=2`, { method: 'POST', body: 'hello', dispatcher: agent });
  assert.deepEqual(await res.body.json(), { method: 'POST', url: '/a/b?x=1&y=2', size: 5 });
  // As undici: no method is GET, or PUT when there is a body.
  const get = await request(new URL(`${origin}/g`), { dispatcher: agent });
  assert.deepEqual(await get.body.json(), { method: 'GET', url: '/g', size: 0 });
  const put = await request(`${origin}/u`, { body: 'x', dispatcher: agent });
  assert.deepEqual(await put.body.json(), { method: 'PUT', url: '/u', size: 1 });
});

test('request refuses a URL that is not http or https', async () => {
  await assert.rejects(request('ftp://127.0.0.1/x', { dispatcher: agent }), errors.InvalidArgumentError);
});

test('importing undici.ts leaves fetch and the rest of undici unloaded', () => {
  const probe = `
    import { createRequire } from 'node:module';
    await import(${JSON.stringify(fileURLToPath(new URL('./undici.ts', import.meta.url)))});
    const loaded = Object.keys(createRequire(import.meta.url).cache);
    console.log(JSON.stringify(loaded.filter((p) => p.includes('/undici/')).map((p) => p.replace(/.*\\/undici\\//, ''))));
  `;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', probe], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const loaded = JSON.parse(r.stdout) as string[];
  assert.ok(loaded.includes('lib/dispatcher/pool.js'), r.stdout);
  assert.ok(!loaded.includes('index.js'), 'undici index loaded');
  assert.ok(!loaded.some((p) => p.startsWith('lib/web/')), `fetch and web modules loaded: ${r.stdout}`);
});
