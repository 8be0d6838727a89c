// The dynamic backend with `target`: CEL over the request gives the host:port each request is dialled
// at (here from a header a policy before it set, and from the path), the Host the upstream sees stays
// the client's, a value that is not host:port is a 503 saying so (in the client's protocol), and the
// trace names the dialled endpoint. Without `target` the request's own Host is dialled, as before.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { startUpstream, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { configIssues } from '../config/test-support.ts';

let a: TestServer;
let b: TestServer;
let proxy: TestProxy;
before(async () => {
  a = await startUpstream('echo');
  b = await startUpstream('echo');
  proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - name: by-header
      matches: [{path: {pathPrefix: /h}}]
      policies:
        requestHeaderModifier: {set: {x-pool: "${b.port}"}}
      backends:
      - dynamic:
          target: '"127.0.0.1:" + request.headers["x-pool"]'
    - name: by-path
      matches: [{path: {pathPrefix: /p/}}]
      backends:
      - backend: picker
backends:
- name: picker
  dynamic:
    target: 'request.path.split("/")[2]'
`);
});
after(async () => {
  await proxy?.close();
  await a?.close();
  await b?.close();
});

/** A GET with the client's own Host (fetch would not let the test set one). */
function get(path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      { host: '127.0.0.1', port: proxy.port(), path, headers: { host: 'client.example' }, agent: false },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          body += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
  });
}

describe('dynamic.target', () => {
  test('the dial target comes from CEL over the request (after the policies); Host stays the client’s', async () => {
    const before = b.seen.length;
    const r = await get('/h/x');
    assert.equal(r.status, 200);
    assert.equal(b.seen.length, before + 1, 'dialled the port the header named');
    assert.equal(b.seen.at(-1)?.headers.host, 'client.example');
  });

  test('a named dynamic backend: each request to its own target', async () => {
    const seenA = a.seen.length;
    const seenB = b.seen.length;
    assert.equal((await get(`/p/127.0.0.1:${a.port}/one`)).status, 200);
    assert.equal((await get(`/p/127.0.0.1:${b.port}/two`)).status, 200);
    assert.equal(a.seen.length, seenA + 1);
    assert.equal(b.seen.length, seenB + 1);
    assert.equal(a.seen.at(-1)?.url, `/p/127.0.0.1:${a.port}/one`);
  });

  test('a value that is not host:port is a 503 naming what the CEL gave', async () => {
    const r = await get('/p/not-a-target/x');
    assert.equal(r.status, 503);
    assert.match(r.body, /dynamic\.target gave "not-a-target", not host:port/);
    // the CEL fails (no such list element): no value
    const missing = await get('/p');
    assert.equal(missing.status, 503);
    assert.match(missing.body, /dynamic\.target gave no value/);
    const trace = proxy.trace();
    const traced = await get(`/p/127.0.0.1:${a.port}/traced`);
    assert.equal(traced.status, 200);
    const events = await trace;
    assert.ok(
      events.some((e) => JSON.stringify(e).includes(`127.0.0.1:${a.port}`)),
      'the trace names the dialled endpoint',
    );
  });

  test('bad CEL is a config error at the target', () => {
    assert.match(
      configIssues(`binds:
- port: 0
  listeners:
  - routes:
    - backends: [{dynamic: {target: 'request.('}}]
`),
      /routes\[0\]\.backends\[0\]\.dynamic\.target: .*CEL/i,
    );
    assert.equal(
      configIssues(`binds:
- port: 0
  listeners:
  - routes:
    - backends: [{dynamic: {}}]
`),
      '',
    );
  });
});
