import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startUpstream, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { request } from 'undici';
import { loadConfigText } from '../../config/load.ts';

let up: TestServer;
let proxy: TestProxy;
before(async () => {
  up = await startUpstream();
  proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - name: prefix
      matches: [{path: {pathPrefix: /api/v1}}]
      policies: {urlRewrite: {path: {prefix: /v2}, authority: {full: "internal.svc:80"}}}
      backends: [{host: "127.0.0.1:${up.port}"}]
    - name: strip
      matches: [{path: {pathPrefix: /strip/}}]
      policies: {urlRewrite: {path: {prefix: /}}}
      backends: [{host: "127.0.0.1:${up.port}"}]
    - name: full
      matches: [{path: {pathPrefix: /full}}]
      policies: {urlRewrite: {path: {full: /fixed}, authority: auto}}
      backends: [{host: "127.0.0.1:${up.port}"}]
`);
});
after(async () => {
  await proxy.close();
  await up.close();
});

async function echo(path: string) {
  const res = await fetch(proxy.url(path));
  assert.equal(res.status, 200);
  return (await res.json()) as { url: string; headers: Record<string, string> };
}

test('prefix rewrite replaces the matched prefix and keeps the query; authority full sets Host', async () => {
  const e = await echo('/api/v1/users/7?x=1');
  assert.equal(e.url, '/v2/users/7?x=1');
  assert.equal(e.headers.host, 'internal.svc:80');
});

test('rewriting a prefix to / strips it', async () => {
  assert.equal((await echo('/strip/a/b')).url, '/a/b');
  assert.equal((await echo('/strip')).url, '/');
});

test('full path rewrite; authority auto uses the backend address', async () => {
  const e = await echo('/full/whatever?k=v');
  assert.equal(e.url, '/fixed?k=v');
  assert.equal(e.headers.host, `127.0.0.1:${up.port}`);
});

test('the access log shows the path the client sent', async () => {
  await echo('/api/v1/logged');
  const line = proxy.accessLog.findLast((l) => String(l['http.path']).includes('logged'));
  assert.equal(line?.['http.path'], '/api/v1/logged');
});

test('a backend named by DNS name sends its name as Host (as agentgateway); by IP, the client’s; hostRewrite and urlRewrite decide over both', async () => {
  const p = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - name: by-name
      matches: [{path: {pathPrefix: /name}}]
      backends: [{host: "localhost:${up.port}"}]
    - name: by-ip
      matches: [{path: {pathPrefix: /ip}}]
      backends: [{host: "127.0.0.1:${up.port}"}]
    - name: named-authority
      matches: [{path: {pathPrefix: /authority}}]
      policies: {urlRewrite: {authority: {full: "internal.svc"}}}
      backends: [{host: "localhost:${up.port}"}]
    - name: top-level
      matches: [{path: {pathPrefix: /top}}]
      backends: [{backend: api}]
    - name: none
      matches: [{path: {pathPrefix: /none}}]
      policies: {hostRewrite: {mode: none}}
      backends: [{host: "localhost:${up.port}"}]
    - name: auto
      matches: [{path: {pathPrefix: /auto}}]
      backends: [{host: "127.0.0.1:${up.port}", policies: {hostRewrite: {mode: auto}}}]
    - name: route-over-backend
      matches: [{path: {pathPrefix: /route}}]
      policies: {hostRewrite: {mode: none}}
      backends: [{host: "127.0.0.1:${up.port}", policies: {hostRewrite: {mode: auto}}}]
    - name: auto-then-authority
      matches: [{path: {pathPrefix: /both}}]
      policies: {hostRewrite: {mode: auto}, urlRewrite: {authority: {full: "internal.svc"}}}
      backends: [{host: "127.0.0.1:${up.port}"}]
backends:
- {name: api, host: "localhost:${up.port}"}
`);
  try {
    const host = async (path: string) => {
      // undici's request may set Host (fetch may not)
      const res = await request(p.url(path), { headers: { host: 'client.example' } });
      return ((await res.body.json()) as { headers: Record<string, string> }).headers.host;
    };
    assert.equal(await host('/name'), `localhost:${up.port}`);
    assert.equal(await host('/top'), `localhost:${up.port}`, 'a top-level backend too');
    assert.equal(await host('/ip'), 'client.example');
    assert.equal(await host('/authority'), 'internal.svc', 'a named authority wins');
    // hostRewrite (gw's form of GwPolicy traffic.hostRewrite) turns the default off or on
    assert.equal(await host('/none'), 'client.example');
    assert.equal(await host('/auto'), `127.0.0.1:${up.port}`);
    assert.equal(await host('/both'), 'internal.svc', 'urlRewrite wins over hostRewrite');
    assert.equal(await host('/route'), 'client.example', "the route's hostRewrite over the backend's");
  } finally {
    await p.close();
  }
});

test('hostRewrite on a backend that is not a host backend is a config error at its field', async () => {
  await assert.rejects(
    startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - backends: [{dynamic: {}, policies: {hostRewrite: {mode: auto}}}]
`),
    (err: Error) =>
      /backends\[0\]\.policies\.hostRewrite: hostRewrite applies to host backends, not to a dynamic forward proxy/.test(
        err.message,
      ),
  );
});

test('a prefix rewrite or redirect on a route matching an exact path or a regex is refused at load, naming the field', () => {
  const load = (match: string, policy: string) =>
    loadConfigText(
      'gw.yaml',
      `binds:
- port: 8080
  listeners:
  - routes:
    - matches: [{path: ${match}}]
      policies: ${policy}
      backends: [{host: 127.0.0.1:9}]
`,
      process.cwd(),
    );
  assert.throws(
    () => load('{exact: /ex/act}', '{urlRewrite: {path: {prefix: /y}}}'),
    /routes\[0\]\.policies\.urlRewrite\.path\.prefix: a prefix rewrite replaces what a pathPrefix match matched, and this route matches an exact path: use path\.full/,
  );
  assert.throws(
    () => load('{regex: "/r.*"}', '{requestRedirect: {path: {prefix: /y}}}'),
    /requestRedirect\.path\.prefix: a prefix redirect .* matches a regex/,
  );
  // a pathPrefix match, or a full path on an exact one, loads
  load('{pathPrefix: /p}', '{urlRewrite: {path: {prefix: /y}}}');
  load('{exact: /ex/act}', '{urlRewrite: {path: {full: /y}}}');
});
