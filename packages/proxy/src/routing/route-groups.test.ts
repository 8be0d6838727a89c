// routeGroups (agentgateway's route delegation) against a real echo upstream: a route whose backend is
// `{routeGroup: name}` hands the request, once it matches, to the group's routes (their own matches,
// hostnames and precedence); the delegating route's policies apply under the group route's own; no
// group route matching is a 404; groups nest; the trace names the delegation; config errors.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ConfigError } from '@gw/api';
import { startUpstream, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { request } from 'undici';
import { loadConfigText } from '../config/load.ts';

let a: TestServer;
let b: TestServer;
let proxy: TestProxy;

before(async () => {
  [a, b] = await Promise.all([startUpstream('a'), startUpstream('b')]);
  proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - name: api
      matches: [{path: {pathPrefix: /api}}]
      policies:
        requestHeaderModifier: {add: {x-parent: p}}
        urlRewrite: {path: {prefix: /rewritten}}
      backends: [{routeGroup: api-routes}]
    - name: nest
      matches: [{path: {pathPrefix: /nest}}]
      backends: [{routeGroup: outer}]
    - name: catch-all
      policies: {directResponse: {status: 200, body: catch-all}}
routeGroups:
- name: api-routes
  routes:
  - name: v1
    matches: [{path: {pathPrefix: /api/v1}}]
    backends: [{host: "127.0.0.1:${a.port}"}]
  - name: v1-deeper
    matches: [{path: {pathPrefix: /api/v1/deeper}}]
    policies:
      requestHeaderModifier: {add: {x-child: c}}
    backends: [{host: "127.0.0.1:${b.port}"}]
  - name: by-host
    hostnames: [foo.example]
    matches: [{path: {pathPrefix: /api/h}}]
    backends: [{host: "127.0.0.1:${a.port}"}]
  - name: by-header
    matches: [{headers: [{name: x-h, value: {exact: "1"}}]}]
    policies: {directResponse: {status: 200, body: by-header}}
- name: outer
  routes:
  - name: o1
    matches: [{path: {pathPrefix: /nest/a}}]
    backends: [{routeGroup: inner}]
- name: inner
  routes:
  - name: i1
    backends: [{host: "127.0.0.1:${b.port}"}]
`);
});

after(async () => {
  await proxy?.close();
  await Promise.all([a?.close(), b?.close()]);
});

async function send(path: string, headers: Record<string, string> = {}) {
  const r = await request(proxy.url(path), { headers });
  const text = await r.body.text();
  const json = r.headers['content-type'] === 'application/json' ? JSON.parse(text) : undefined;
  return {
    status: r.statusCode,
    text,
    seen: json as { url: string; server: string; headers: Record<string, string> },
  };
}

describe('routeGroups', () => {
  test("the group's routes are matched by precedence, with the delegating route's policies", async () => {
    const v1 = await send('/api/v1/z');
    assert.equal(v1.seen.server, 'a');
    assert.equal(v1.seen.headers['x-parent'], 'p', "the delegating route's header modifier applies");
    assert.equal(v1.seen.url, '/rewritten/z', "the prefix rewrite replaces the group route's matched prefix");
    const deeper = await send('/api/v1/deeper/q');
    assert.equal(deeper.seen.server, 'b', 'the longer prefix wins inside the group');
    assert.equal(deeper.seen.headers['x-child'], 'c');
    assert.equal(
      deeper.seen.headers['x-parent'],
      undefined,
      "the group route's own modifier replaces the parent's",
    );
    assert.equal(deeper.seen.url, '/rewritten/q', 'the policy the group route leaves out is inherited');
  });

  test('group routes keep their hostnames and header matches; none matching is a 404, not the next route', async () => {
    assert.equal((await send('/api/h')).status, 404, 'by-host wants foo.example');
    assert.equal((await send('/api/h', { host: 'foo.example' })).seen.server, 'a');
    assert.equal((await send('/api/q', { 'x-h': '1' })).text, 'by-header');
    const miss = await send('/api/q');
    assert.equal(miss.status, 404, 'the catch-all route is not tried once /api delegated');
    assert.equal(
      (await send('/q', { 'x-h': '1' })).text,
      'catch-all',
      'the group is reached only through /api',
    );
  });

  test('groups nest', async () => {
    assert.equal((await send('/nest/a/x')).seen.server, 'b');
    assert.equal((await send('/nest/b')).status, 404);
  });

  test('the trace shows the group route selected and the routes that delegated to it', async () => {
    const t = proxy.trace();
    await send('/nest/a');
    const sel = (await t).map((e) => e.message).find((m) => m.type === 'routeSelection') as Record<
      string,
      unknown
    >;
    const selected = sel.selectedRoute as { name: string; delegatedFrom: string[]; definedAt: string };
    assert.equal(selected.name, 'i1');
    assert.equal(selected.definedAt, 'routeGroups[2].routes[0]');
    assert.equal(selected.delegatedFrom.length, 2);
    assert.match(selected.delegatedFrom[0] as string, /\/nest$/);
    assert.match(selected.delegatedFrom[1] as string, /\/nest\/o1$/);
    const evaluated = sel.evaluatedRoutes as { route: string; selected: boolean }[];
    assert.ok(
      evaluated.find((e) => e.route.endsWith('/nest'))?.selected,
      'the delegating route counts as selected',
    );
  });
});

describe('routeGroups: config', () => {
  const load = (routes: string, groups: string) =>
    loadConfigText(
      't.yaml',
      `binds: [{port: 8080, listeners: [{routes: ${routes}}]}]\nrouteGroups: ${groups}`,
      process.cwd(),
    );
  const rejects = (routes: string, groups: string, re: RegExp) =>
    assert.throws(
      () => load(routes, groups),
      (e: unknown) => e instanceof ConfigError && re.test(e.message),
      String(re),
    );
  const host = '{host: "127.0.0.1:1"}';

  test('a delegating route has no policies or backends of its own; its group routes follow it', () => {
    const { ir } = load(
      `[{name: p, policies: {cors: {allowOrigins: ["*"]}}, backends: [{routeGroup: g}]}]`,
      `[{name: g, routes: [{name: c, backends: [${host}]}]}]`,
    );
    const routes = ir.binds[0]?.listeners[0]?.routes ?? [];
    assert.deepEqual(
      routes.map((r) => [r.name, r.routeGroup, r.delegatedFrom, Object.keys(r.policies), r.backends.length]),
      [
        ['p', 'g', undefined, [], 0],
        ['c', undefined, routes[0]?.key, ['cors'], 1],
      ],
    );
  });

  test('an unknown group, a cycle, a second group of one name are errors naming the field', () => {
    rejects(
      '[{backends: [{routeGroup: nope}]}]',
      `[{name: g, routes: []}]`,
      /routes\[0\]\.backends\[0\]\.routeGroup: no routeGroup named "nope" \(routeGroups: g\)/,
    );
    rejects(
      '[{backends: [{routeGroup: a}]}]',
      `[{name: a, routes: [{backends: [{routeGroup: b}]}]}, {name: b, routes: [{backends: [{routeGroup: a}]}]}]`,
      /routeGroups\[1\]\.routes\[0\]\.backends\[0\]\.routeGroup: route delegation cycle: a → b → a/,
    );
    rejects(
      '[{backends: [{routeGroup: a}]}]',
      `[{name: a, routes: [{backends: [{routeGroup: a}]}]}]`,
      /route delegation cycle: a → a/,
    );
    rejects(
      '[{backends: [{routeGroup: a}]}]',
      `[{name: a, routes: []}, {name: a, routes: []}]`,
      /routeGroups\[1\]\.name: a second routeGroup named "a"/,
    );
  });

  test('a routeGroup beside other backends, or with backend policies, is refused', () => {
    rejects(
      `[{backends: [{routeGroup: a}, ${host}]}]`,
      `[{name: a, routes: []}]`,
      /routes\[0\]\.backends: a route with a routeGroup backend has no other backends/,
    );
    rejects(
      `[{backends: [{routeGroup: a, policies: {requestHeaderModifier: {add: {x: y}}}}]}]`,
      `[{name: a, routes: []}]`,
      /backends\[0\]\.policies: policies on a routeGroup backend are not used/,
    );
  });

  test("a group route's mistakes are reported at its place in routeGroups, once", () => {
    assert.throws(
      () =>
        load(
          '[{backends: [{routeGroup: a}]}, {backends: [{routeGroup: a}]}]',
          `[{name: a, routes: [{policies: {directResponse: {status: 200, headers: {x: "1 +"}}}}]}]`,
        ),
      (e: unknown) =>
        e instanceof ConfigError &&
        (
          e.message.match(
            /routeGroups\[0\]\.routes\[0\]\.policies\.directResponse\.headers\.x: invalid CEL/g,
          ) ?? []
        ).length === 1,
    );
  });
});
