// authorization and extAuthz as backend policies (agentgateway's backend authorization and extAuthz):
// checked for the backend a request goes to, after the route's policies, whether set on the route's
// backend, on a top-level backend, or by a policy that targets the backend. A denied request never
// reaches the upstream; a route with two backends denies on one and not the other. A plain HTTP
// authorization service decides by a header; the upstream records what reached it.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { startUpstream, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { configIssues } from '../config/test-support.ts';

let up: TestServer;
let other: TestServer;
let authz: http.Server;
let authzCalls = 0;
let proxy: TestProxy;

before(async () => {
  up = await startUpstream('up');
  other = await startUpstream('other');
  // allows a request carrying x-ticket: ok, and tells the upstream who it was
  authz = http.createServer((req, res) => {
    authzCalls++;
    if (req.headers['x-ticket'] === 'ok') res.writeHead(200, { 'x-auth-user': 'alice' }).end();
    else res.writeHead(403, { 'content-type': 'text/plain' }).end('no ticket\n');
  });
  await new Promise<void>((r) => authz.listen(0, '127.0.0.1', r));
  const authzHost = `127.0.0.1:${(authz.address() as AddressInfo).port}`;
  proxy = await startProxy(
    `backends:
- name: guarded
  host: "127.0.0.1:${up.port}"
  policies:
    authorization: {rules: ['request.headers["x-role"] == "admin"']}
policies:
- target: {backend: targeted}
  policy:
    authorization: {rules: ['request.method == "GET"']}
- target: {backend: other-named}
  policy: {}
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - name: own
      matches: [{path: {pathPrefix: /own}}]
      backends:
      - host: "127.0.0.1:${up.port}"
        policies:
          extAuthz:
            host: "${authzHost}"
            timeout: 5s
            includeRequestHeaders: [x-ticket]
            protocol: {http: {includeResponseHeaders: [x-auth-user]}}
          authorization: {rules: ['request.headers["x-auth-user"] == "alice"']}
    - name: named
      matches: [{path: {pathPrefix: /named}}]
      backends: [{backend: guarded}]
    - name: targeted
      matches: [{path: {pathPrefix: /targeted}}]
      backends: [{backend: targeted}]
    - name: split
      matches: [{path: {pathPrefix: /split}}]
      backends:
      - host: "127.0.0.1:${up.port}"
        weight: 1
        policies: {authorization: {rules: ['false']}}
      - host: "127.0.0.1:${other.port}"
        weight: 1
`.replace(
      'backends:\n- name: guarded',
      `backends:\n- name: targeted\n  host: "127.0.0.1:${up.port}"\n- name: guarded`,
    ),
  );
});

after(async () => {
  await proxy?.close();
  await Promise.all([up?.close(), other?.close()]);
  await new Promise((r) => authz?.close(r));
});

async function send(path: string, init: RequestInit = {}): Promise<{ status: number; body: string }> {
  const r = await fetch(proxy.url(path), init);
  return { status: r.status, body: await r.text() };
}

describe('authorization and extAuthz on a backend', () => {
  test("on the route's backend: the external check, then the rules reading what it added", async () => {
    const before = { seen: up.seen.length, calls: authzCalls };
    assert.equal((await send('/own/a')).status, 403, 'the service denies without a ticket');
    assert.equal(up.seen.length, before.seen, 'the upstream never saw it');
    const ok = await send('/own/b', { headers: { 'x-ticket': 'ok' } });
    assert.equal(ok.status, 200, ok.body);
    assert.equal(JSON.parse(ok.body).headers['x-auth-user'], 'alice');
    assert.equal(authzCalls, before.calls + 2);
  });

  test('on a top-level backend, and by a policy that targets one', async () => {
    assert.equal((await send('/named/x')).status, 403);
    assert.equal((await send('/named/x', { headers: { 'x-role': 'admin' } })).status, 200);
    assert.equal((await send('/targeted/x')).status, 200);
    assert.equal((await send('/targeted/x', { method: 'POST', body: 'b' })).status, 403);
  });

  test("a route's backends each decide: one denies, the other serves", async () => {
    const statuses = new Set<number>();
    const before = other.seen.length;
    for (let i = 0; i < 40 && statuses.size < 2; i++) statuses.add((await send('/split')).status);
    assert.deepEqual([...statuses].sort(), [200, 403]);
    assert.ok(other.seen.length > before);
  });

  test('refused where it would not run, checked where it does', () => {
    const load = (backend: string) =>
      configIssues(`binds:\n- port: 8080\n  listeners:\n  - routes:\n    - backends:\n      - ${backend}\n`);
    assert.match(
      load("ai: {name: a, provider: {openAI: {}}, policies: {authorization: {rules: ['true']}}}"),
      /ai\.policies\.authorization: authorization on an ai provider is not supported by this build of gw yet \(set it on the ai backend's policies or the route\)/,
    );
    assert.match(
      load("host: 127.0.0.1:1\n        policies: {authorization: {rules: ['request.(']}}"),
      /backends\[0\]\.policies\.authorization\.rules\[0\]/,
    );
    assert.match(
      load('host: 127.0.0.1:1\n        policies: {extAuthz: {http: {host: "a:1"}, failureMode: sometimes}}'),
      /backends\[0\]\.policies\.extAuthz/,
    );
  });
});
