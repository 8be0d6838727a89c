// The request target as a route sees it: every spelling of a protected path meets that path's auth,
// the upstream gets the normalised path, one Host only, and absolute-form targets route by authority.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import { after, before, describe, test } from 'node:test';
import { type Echo, rawRequest, startUpstream, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';

const KEY = 'k-admin';

function config(upstream: number, http = ''): string {
  return `${http ? `frontendPolicies:\n  http: {${http}}\n` : ''}binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - name: admin
      matches: [{path: {pathPrefix: /files/admin}}]
      policies: {apiKey: {keys: [${KEY}]}}
      backends: [{host: "127.0.0.1:${upstream}"}]
    - name: files
      matches: [{path: {pathPrefix: /files}}]
      backends: [{host: "127.0.0.1:${upstream}"}]
    - name: by-host
      hostnames: [b.example]
      policies: {directResponse: {status: 200, body: "b.example"}}
`;
}

/** GET `target` exactly as written, on its own connection. */
function get(p: TestProxy, target: string, headers: Record<string, string> = {}) {
  const lines = Object.entries({ host: 'a.example', ...headers }).map(([k, v]) => `${k}: ${v}\r\n`);
  return rawRequest(p.port(), `GET ${target} HTTP/1.1\r\n${lines.join('')}connection: close\r\n\r\n`);
}

let up: TestServer;
before(async () => {
  up = await startUpstream();
});
after(() => up.close());
const lastSeen = () => up.seen[up.seen.length - 1] as Echo;

describe('path normalisation (defaults)', () => {
  let p: TestProxy;
  before(async () => {
    p = await startProxy(config(up.port));
  });
  after(() => p.close());

  test('each spelling of /files/admin from the report meets the API key: 401', async () => {
    for (const target of [
      '/files/admin/secret.txt',
      '/files/public/../admin/secret.txt',
      '/files/public/%2e%2e/admin/secret.txt',
      '/files/public/%2E%2E/admin/secret.txt',
      '/files/%61dmin/secret.txt',
      '/files//admin/secret.txt',
      '/files/./admin/secret.txt',
      '/files\\admin\\secret.txt',
      '/files/public/..\\admin/secret.txt',
    ]) {
      const r = await get(p, target);
      assert.equal(r.status, 401, target);
    }
    assert.equal(up.seen.length, 0, 'nothing reached the upstream');
  });

  test('..%2F under KeepUnchanged is refused with 400, not forwarded to an upstream that may decode it', async () => {
    for (const target of ['/files/public/..%2fadmin/secret.txt', '/files/public%2F..%2Fadmin/secret.txt']) {
      const r = await get(p, target);
      assert.equal(r.status, 400, target);
      assert.match(r.body, /dot segment behind an escaped slash/);
    }
    assert.equal(up.seen.length, 0);
  });

  test('with the key, the upstream gets the normalised path and the query as sent', async () => {
    const r = await get(p, '/files/public/../%61dmin//secret.txt?x=%2e%2e/../y', {
      authorization: `Bearer ${KEY}`,
    });
    assert.equal(r.status, 200);
    assert.equal(lastSeen().url, '/files/admin/secret.txt?x=%2e%2e/../y');
  });

  test('an open route forwards the normalised path; kept escapes get upper-case hex', async () => {
    const r = await get(p, '/files/public/./docs/../a%2fb%7e%20c');
    assert.equal(r.status, 200);
    assert.equal(lastSeen().url, '/files/public/a%2Fb~%20c');
  });

  test('malformed targets get 400', async () => {
    for (const target of ['/files/a%zz', '/files/a#frag', '/files/a?b#frag']) {
      assert.equal((await get(p, target)).status, 400, target);
    }
  });

  test('HTTP/2 paths are normalised the same way', async () => {
    const client = http2.connect(p.url('/'));
    try {
      const status = (path: string) =>
        new Promise<number>((resolve, reject) => {
          const s = client.request({ ':path': path });
          s.on('response', (h) => resolve(Number(h[':status'])));
          s.on('error', reject);
          s.resume();
          s.end();
        });
      assert.equal(await status('/files/public/../admin/secret.txt'), 401);
      assert.equal(await status('/files/%61dmin/secret.txt'), 401);
      assert.equal(await status('/files//admin/secret.txt'), 401);
    } finally {
      client.close();
    }
  });
});

describe('path normalisation options', () => {
  test('pathWithEscapedSlashes: RejectRequest refuses %2F and %5C', async (t) => {
    const p = await startProxy(config(up.port, 'pathWithEscapedSlashes: RejectRequest'));
    t.after(() => p.close());
    assert.equal((await get(p, '/files/a%2Fb')).status, 400);
    assert.equal((await get(p, '/files/a%5cb')).status, 400);
    assert.equal((await get(p, '/files/a/b')).status, 200);
  });

  test('pathWithEscapedSlashes: UnescapeAndForward decodes, then normalises: ..%2F meets the key', async (t) => {
    const p = await startProxy(config(up.port, 'pathWithEscapedSlashes: UnescapeAndForward'));
    t.after(() => p.close());
    assert.equal((await get(p, '/files/public/..%2fadmin/secret.txt')).status, 401);
    assert.equal((await get(p, '/files%2Fadmin/secret.txt')).status, 401);
    assert.equal((await get(p, '/files/a%2Fb')).status, 200);
    assert.equal(lastSeen().url, '/files/a/b');
  });

  test('mergeSlashes: false keeps // (and so /files//admin is not under /files/admin)', async (t) => {
    const p = await startProxy(config(up.port, 'mergeSlashes: false'));
    t.after(() => p.close());
    assert.equal((await get(p, '/files//x/../y')).status, 200);
    assert.equal(lastSeen().url, '/files//y');
    assert.equal((await get(p, '/files/public/../admin/x')).status, 401, 'dot segments still go');
  });
});

describe('Host and absolute-form targets', () => {
  let p: TestProxy;
  before(async () => {
    p = await startProxy(config(up.port));
  });
  after(() => p.close());

  test('two Host headers get 400 (RFC 9112 §3.2)', async () => {
    const r = await rawRequest(
      p.port(),
      'GET /files/x HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\nconnection: close\r\n\r\n',
    );
    assert.equal(r.status, 400);
    assert.match(r.body, /more than one Host/);
  });

  test('a Host that is not host[:port] gets 400 and goes nowhere; valid ones of every form pass', async () => {
    const before = up.seen.length;
    for (const host of [
      'evil.example"><script>',
      'a b',
      'x/y',
      'user@a.example',
      'a.example:80:80',
      'a\\b',
    ]) {
      const r = await get(p, '/files/x', { host });
      assert.equal(r.status, 400, host);
      assert.match(r.body, /invalid Host header/, host);
    }
    assert.equal(up.seen.length, before, 'none reached the backend');
    for (const host of [
      'a.example',
      'a.example:8080',
      '127.0.0.1:1',
      '[::1]:80',
      '[fe80::1%25eth0]',
      'ex_ample.test',
    ]) {
      const r = await get(p, '/files/x', { host });
      assert.equal(r.status, 200, host);
    }
    // (over HTTP/2, nghttp2 refuses such an :authority itself: a stream error before any route)
  });

  test('an absolute-form target routes by its authority, not Host, and forwards its path', async () => {
    const r = await get(p, 'http://b.example/anything', { host: 'a.example' });
    assert.equal(r.status, 200);
    assert.equal(r.body, 'b.example');

    const before = up.seen.length;
    const f = await get(p, 'http://c.example:8080/files/x/../y?q=1', { host: 'a.example' });
    assert.equal(f.status, 200);
    assert.equal(up.seen.length, before + 1);
    assert.equal(lastSeen().url, '/files/y?q=1');
    assert.equal(lastSeen().headers.host, 'c.example:8080');
  });

  test('an absolute-form target is normalised too, and userinfo in it is refused', async () => {
    assert.equal((await get(p, 'http://a.example/files/public/../admin/secret.txt')).status, 401);
    assert.equal((await get(p, 'HTTP://a.example/files/%61dmin/')).status, 401);
    assert.equal((await get(p, 'http://user@a.example/files/x')).status, 400);
  });
});
