import assert from 'node:assert/strict';
import http, { type IncomingMessage } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConfigError } from '@gw/api';
import { CLOSED_PORT, startUpstream, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { request } from 'undici';
import { loadConfigText } from '../../config/load.ts';

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/** A plain HTTP authorization service: the Authorization header decides. */
async function startHttpAuthz() {
  const seen: Seen[] = [];
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    seen.push({
      method: req.method ?? '',
      url: req.url ?? '',
      headers: req.headers,
      body: Buffer.concat(chunks).toString(),
    });
    const send = (status: number, headers: Record<string, string>, body = '') => {
      res.writeHead(status, { 'content-length': Buffer.byteLength(body), ...headers });
      res.end(body);
    };
    switch (req.headers.authorization) {
      case 'Bearer alice':
        return send(
          200,
          {
            'x-auth-user': 'alice',
            'x-auth-internal': 'not copied',
            'content-type': 'application/json',
            // when the answer stops holding, in Unix seconds (as a token's exp)
            'x-expires': String(Date.now() / 1000 + 3),
          },
          '{"tier":"gold"}',
        );
      case 'Bearer bob':
        return send(200, { 'x-auth-user': 'bob' }, '{"tier":"free"}');
      case 'Bearer bad':
        return send(403, { 'x-reason': 'bad token', 'content-type': 'text/plain' }, 'forbidden by authz\n');
      case 'Bearer teapot':
        return send(418, {}, 'short and stout\n');
      case 'Bearer boom':
        return send(503, {}, 'internal details\n');
      case 'Bearer slow':
        await sleep(5_000);
        return send(200, {});
      default:
        return send(401, { 'www-authenticate': 'Bearer' }, 'who are you?\n');
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return {
    host: `127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

let authz: Awaited<ReturnType<typeof startHttpAuthz>>;
let up: TestServer;
let proxy: TestProxy;
before(async () => {
  authz = await startHttpAuthz();
  up = await startUpstream();
  const dead = `127.0.0.1:${CLOSED_PORT}`;
  const route = (name: string, extAuthz: string, extra = '') => `
    - name: ${name}
      matches: [{path: {pathPrefix: /${name}}}]
      policies:
        extAuthz: ${extAuthz}${extra}
      backends: [{host: "127.0.0.1:${up.port}"}]`;
  const h = authz.host;
  proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:${route(
    'full',
    `
          http:
            host: ${h}
            path: '"/auth" + request.path'
            allowedRequestHeaders: [authorization, x-forward-me]
            addRequestHeaders:
              x-original-method: request.method
              x-original-host: request.host
            allowedResponseHeaders: [x-auth-user]
            responseMetadata:
              user: response.headers["x-auth-user"]
              code: response.code
              raw: response.body
            timeout: 5s`,
    `
        authorization:
          rules: ['extauthz.user == "alice" && extauthz.code == 200 && extauthz.raw.contains("gold")']`,
  )}${route('default', `{http: {host: "${h}", timeout: 5s}}`)}${route(
    'redirect',
    `{http: {host: "${h}", timeout: 5s, redirect: '"https://login.example.com/?rd=" + request.path'}}`,
  )}${route('body', `{http: {host: "${h}", timeout: 5s, body: '{"path": request.path, "m": request.method}'}}`)}${route(
    'slow-closed',
    `{http: {host: "${h}", timeout: 100ms}}`,
  )}${route('slow-open', `{http: {host: "${h}", timeout: 100ms}, failureMode: failOpen}`)}${route(
    'down-closed',
    `{http: {host: "${dead}"}}`,
  )}${route(
    'cached',
    `{host: "${h}", protocol: {http: {includeResponseHeaders: [x-auth-user]}}, cache: {key: ['request.headers["authorization"]'], ttl: 60s}}`,
  )}${route(
    'cached-short',
    `{host: "${h}", protocol: {http: {metadata: {exp: 'double(response.headers["x-expires"])'}}}, cache: {key: ['request.headers["authorization"]'], ttl: extauthz.exp}}`,
  )}${route('posted', `{host: "${h}", protocol: {http: {addRequestHeaders: {":method": '"POST"'}}}}`)}${route('down-open', `{http: {host: "${dead}"}, failureMode: failOpen}`)}${route(
    'down-status',
    `{host: "${dead}", protocol: {http: {}}, failureMode: {denyWithStatus: 503}}`,
  )}
`);
});
after(async () => {
  await proxy.close();
  await up.close();
  await authz.close();
});

async function call(path: string, headers: Record<string, string> = {}, method = 'GET') {
  const r = await request(proxy.url(path), { method, headers });
  return { status: r.statusCode, headers: r.headers, text: await r.body.text() };
}

test("agentgateway's :method among addRequestHeaders is the check request's method", async () => {
  const r = await call('/posted/x', { authorization: 'Bearer alice' });
  assert.equal(r.status, 200);
  assert.equal(authz.seen.at(-1)?.method, 'POST');
  assert.equal(authz.seen.at(-1)?.headers[':method'], undefined);
});

describe('the extAuthz cache', () => {
  test('an allowed answer is reused for the same key, its header changes applied again; another key asks', async () => {
    const before = authz.seen.length;
    for (let i = 0; i < 3; i++) {
      const r = await call('/cached/x', { authorization: 'Bearer alice' });
      assert.equal(r.status, 200);
      assert.equal(JSON.parse(r.text).headers['x-auth-user'], 'alice');
    }
    assert.equal(authz.seen.length, before + 1);
    const r = await call('/cached/x', { authorization: 'Bearer bob' });
    assert.equal(JSON.parse(r.text).headers['x-auth-user'], 'bob');
    assert.equal(authz.seen.length, before + 2);
  });

  test('a denial is never reused: each asks again', async () => {
    const before = authz.seen.length;
    assert.equal((await call('/cached/x', { authorization: 'Bearer bad' })).status, 403);
    assert.equal((await call('/cached/x', { authorization: 'Bearer bad' })).status, 403);
    assert.equal(authz.seen.length, before + 2);
  });

  test('the ttl from the answer, a time in Unix seconds (as a token’s exp): after it, the service is asked again', async () => {
    const before = authz.seen.length;
    assert.equal((await call('/cached-short/x', { authorization: 'Bearer alice' })).status, 200);
    assert.equal((await call('/cached-short/x', { authorization: 'Bearer alice' })).status, 200);
    assert.equal(authz.seen.length, before + 1);
    await sleep(3_100);
    assert.equal((await call('/cached-short/x', { authorization: 'Bearer alice' })).status, 200);
    assert.equal(authz.seen.length, before + 2);
  });
});

test('a cache key or ttl that is not CEL is a config error at its field', () => {
  assert.throws(
    () =>
      loadConfigText(
        'gw.yaml',
        `binds:\n- port: 8080\n  listeners:\n  - routes:\n    - policies: {extAuthz: {host: "a:1", cache: {key: ["nope("], ttl: "1"}}}\n      backends: [{host: "127.0.0.1:9"}]\n`,
        process.cwd(),
      ),
    (e: unknown) => e instanceof ConfigError && /extAuthz\.cache\.key\[0\]: invalid CEL/.test(e.message),
  );
});

describe('HTTP ext_authz against a real node:http authorization service', () => {
  test('the check goes to the CEL path with only the allowed and added headers', async () => {
    const r = await call(
      '/full/items?q=1',
      { authorization: 'Bearer alice', 'x-forward-me': 'yes', cookie: 'session=1' },
      'DELETE',
    );
    assert.equal(r.status, 200);
    const s = authz.seen.at(-1)!;
    assert.equal(s.method, 'DELETE');
    assert.equal(s.url, '/auth/full/items');
    assert.equal(s.headers.authorization, 'Bearer alice');
    assert.equal(s.headers['x-forward-me'], 'yes');
    assert.equal(s.headers['x-original-method'], 'DELETE');
    assert.equal(s.headers['x-original-host'], '127.0.0.1');
    assert.equal(s.headers.cookie, undefined, 'not in allowedRequestHeaders');
    assert.equal(s.body, '');
  });

  test('allowed: allowed response headers reach upstream; metadata is extauthz.* for authorization', async () => {
    const r = await call('/full', { authorization: 'Bearer alice' });
    assert.equal(r.status, 200);
    const seen = JSON.parse(r.text).headers as Record<string, string>;
    assert.equal(seen['x-auth-user'], 'alice');
    assert.equal(seen['x-auth-internal'], undefined);
    // Allowed by the service, refused by the rule on its metadata.
    const bob = await call('/full', { authorization: 'Bearer bob' });
    assert.equal(bob.status, 403);
    assert.equal(bob.text, 'authorization denied\n');
  });

  test('by default the original path and query, and only Authorization, are sent', async () => {
    assert.equal(
      (await call('/default/x?y=2', { authorization: 'Bearer alice', 'x-other': '1' })).status,
      200,
    );
    const s = authz.seen.at(-1)!;
    assert.equal(s.url, '/default/x?y=2');
    assert.equal(s.headers['x-other'], undefined);
  });

  test("denied: the client gets the service's status, headers and body; upstream sees nothing", async () => {
    const before = up.seen.length;
    const bad = await call('/default', { authorization: 'Bearer bad' });
    assert.equal(bad.status, 403);
    assert.equal(bad.headers['x-reason'], 'bad token');
    assert.equal(bad.text, 'forbidden by authz\n');
    const teapot = await call('/default', { authorization: 'Bearer teapot' });
    assert.equal(teapot.status, 418);
    assert.equal(teapot.text, 'short and stout\n');
    const none = await call('/default');
    assert.equal(none.status, 401);
    assert.equal(none.headers['www-authenticate'], 'Bearer');
    assert.equal(up.seen.length, before);
  });

  test('redirect: a 401/403 becomes a 302 to the CEL location; other denials pass through', async () => {
    const r = await call('/redirect/app');
    assert.equal(r.status, 302);
    assert.equal(r.headers.location, 'https://login.example.com/?rd=/redirect/app');
    assert.equal((await call('/redirect/app', { authorization: 'Bearer teapot' })).status, 418);
  });

  test('body: a CEL body is sent, as JSON, with POST for a GET', async () => {
    assert.equal((await call('/body/z', { authorization: 'Bearer alice' })).status, 200);
    const s = authz.seen.at(-1)!;
    assert.equal(s.method, 'POST');
    assert.equal(s.headers['content-type'], 'application/json');
    assert.deepEqual(JSON.parse(s.body), { path: '/body/z', m: 'GET' });
  });

  test('a 5xx, a timeout or a down service: failClosed is 403, failOpen passes', async () => {
    const before = up.seen.length;
    const boom = await call('/default', { authorization: 'Bearer boom' });
    assert.equal(boom.status, 403);
    assert.equal(boom.text, 'external authorization failed\n', "the service's 5xx body is not shown");
    const t0 = performance.now();
    const slow = await call('/slow-closed', { authorization: 'Bearer slow' });
    // at the deadline, not when the service answers (5 s)
    assert.ok(performance.now() - t0 < 3000);
    assert.equal(slow.status, 403);
    assert.equal((await call('/down-closed', { authorization: 'Bearer alice' })).status, 403);
    // agentgateway's failureMode {denyWithStatus}: the denial's status is the one configured
    const denied = await call('/down-status', { authorization: 'Bearer alice' });
    assert.deepEqual([denied.status, denied.text], [503, 'external authorization failed\n']);
    assert.equal(up.seen.length, before);
    assert.equal((await call('/slow-open', { authorization: 'Bearer slow' })).status, 200);
    assert.equal((await call('/down-open', { authorization: 'Bearer alice' })).status, 200);
    assert.equal(up.seen.length, before + 2);
  });
});
