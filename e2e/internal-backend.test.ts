// The internal backend (gw's admin API as a route's backend) on the real `bin/gw` with two workers:
// `forward` behind an API key and a prefix rewrite, a fixed admin path, the admin's own refusal of a
// cross-site browser request still in force through the route, and a 503 when the admin is off.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Agent, request } from 'undici';
import { cleanupGw, configBlock, type GwProcess, startGw } from './support/gw-process.ts';

const routes = `binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - name: admin
      matches: [{ path: { pathPrefix: /gw-admin/ } }]
      policies:
        apiKey: { keys: [k-admin] }
        urlRewrite: { path: { prefix: / } }
      backends: [{ internal: forward }]
    - name: dump
      matches: [{ path: { exact: /dump } }]
      backends: [{ internal: config_dump }]
    - name: named
      hostnames: [admin.gw.test]
      matches: [{ path: { exact: /named-dump } }]
      backends: [{ internal: /config_dump }]
    - name: level
      matches: [{ path: { exact: /level } }]
      policies:
        apiKey: { keys: [k-admin] }
      backends: [{ internal: /logging }]
`;

let g: GwProcess;
let port: number;

before(async () => {
  g = await startGw({ args: ['--workers', '2'], yaml: `${configBlock()}${routes}` });
  port = await g.proxyPort(0);
});

after(async () => {
  await cleanupGw();
});

/** A request on a connection of its own, so both workers answer some. */
async function send(
  path: string,
  opts: { method?: 'GET' | 'POST'; headers?: Record<string, string>; to?: number } = {},
): Promise<{ status: number; type: string; body: string }> {
  const agent = new Agent({ pipelining: 0 });
  try {
    const r = await request(`http://127.0.0.1:${opts.to ?? port}${path}`, {
      method: opts.method ?? 'GET',
      headers: opts.headers ?? {},
      dispatcher: agent,
    });
    return { status: r.statusCode, type: String(r.headers['content-type']), body: await r.body.text() };
  } finally {
    await agent.close();
  }
}

const KEY = { authorization: 'Bearer k-admin' };

test('forward: the admin API behind the route, its prefix rewritten away; no key, no admin', async () => {
  for (let i = 0; i < 4; i++) {
    const dump = await send('/gw-admin/config_dump', { headers: KEY });
    assert.equal(dump.status, 200, dump.body);
    assert.match(dump.type, /application\/json/);
    const binds = (JSON.parse(dump.body) as { binds: { port: number }[] }).binds;
    assert.deepEqual(
      binds.map((b) => b.port),
      [port],
    );
  }
  const level = await send('/gw-admin/logging', { headers: KEY });
  assert.equal(level.status, 200);
  assert.match(level.body, /info/);
  const denied = await send('/gw-admin/config_dump');
  assert.equal(denied.status, 401);
});

test('a fixed admin path: every request goes to it', async () => {
  const r = await send('/dump?x=1');
  assert.equal(r.status, 200);
  assert.match(r.type, /application\/json/);
  assert.deepEqual(
    (JSON.parse(r.body) as { binds: { port: number }[] }).binds.map((b) => b.port),
    [port],
  );
});

test('a fixed path keeps the query and the method: POST /level?level=debug sets the log level', async () => {
  const set = await send('/level?level=debug', { method: 'POST', headers: KEY });
  assert.equal(set.status, 200, set.body);
  assert.match((await send('/gw-admin/logging', { headers: KEY })).body, /debug/);
  assert.equal((await send('/level?level=info', { method: 'POST', headers: KEY })).status, 200);
  assert.match((await send('/level', { headers: KEY })).body, /info/);
});

test('a route for any Host serves the admin only to an address or localhost; one naming its host serves that name', async () => {
  const rebound = await send('/dump', { headers: { host: `evil.example:${port}` } });
  assert.equal(rebound.status, 403);
  assert.match(
    rebound.body,
    /the admin API answers a request for "evil\.example" only on a route or listener whose hostnames name it/,
  );
  assert.equal((await send('/dump', { headers: { host: `localhost:${port}` } })).status, 200);
  const named = await send('/named-dump', { headers: { host: 'admin.gw.test' } });
  assert.equal(named.status, 200, named.body);
  assert.match(named.type, /application\/json/);
});

test("the admin's refusal of a cross-site browser request holds through the route", async () => {
  const r = await send('/gw-admin/quitquitquit', {
    method: 'POST',
    headers: { ...KEY, 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' },
  });
  assert.equal(r.status, 403);
  assert.match(r.body, /admin: requests from other sites are refused/);
  // still serving
  assert.equal((await send('/gw-admin/logging', { headers: KEY })).status, 200);
});

test('with the admin off, an internal backend answers 503 saying so', async () => {
  const off = await startGw({
    yaml: `config:\n  adminAddr: "off"\n  statsAddr: 127.0.0.1:0\n  readinessAddr: 127.0.0.1:0\n${routes}`,
  });
  const offPort = Number(/listeners=127\.0\.0\.1:(\d+)/.exec(off.stdout.join('\n'))?.[1]);
  assert.ok(offPort > 0, off.stdout.join('\n'));
  const r = await send('/dump', { to: offPort });
  assert.equal(r.status, 503);
  assert.match(r.body, /the admin API is off \(config\.adminAddr\)/);
  await off.stop();
});
