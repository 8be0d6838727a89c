// `service` route backends (agentgateway's local `services` and `workloads`): each request goes to one
// of the healthy workloads that name the Service, by capacity, at the port the workload maps the
// Service's to (else the Service's target port); HTTP/2 by prior knowledge where the Service says the
// port speaks it; no endpoint is a 503 saying so; a Service or port that is not declared is a config
// error naming what is.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { ConfigError } from '@gw/api';
import { startUpstream, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { request } from 'undici';
import { loadConfigText } from '../config/load.ts';

const load = (yaml: string) => loadConfigText('agw.yaml', yaml, process.cwd());

let a: TestServer;
let b: TestServer;
let c: TestServer;
let h2: http2.Http2Server;
let h2Port: number;
before(async () => {
  a = await startUpstream('echo');
  b = await startUpstream('echo');
  c = await startUpstream('echo');
  h2 = http2.createServer((req, res) => res.end(`h2 upstream saw HTTP/${req.httpVersion}`));
  h2.listen(0, '127.0.0.1');
  await once(h2, 'listening');
  h2Port = (h2.address() as AddressInfo).port;
});
after(async () => {
  await Promise.all([a.close(), b.close(), c.close()]);
  h2.close();
});

describe('a Service and its workloads', () => {
  let proxy: TestProxy;
  before(async () => {
    proxy = await startProxy(`services:
- {name: api, namespace: default, hostname: api.default.svc.cluster.local, vips: [], ports: {"80": 0}}
- {name: fixed, namespace: default, hostname: fixed, vips: [], ports: {"8080": ${c.port}}}
- {name: grpc, namespace: default, hostname: grpc, vips: [], ports: {"9000": ${h2Port}}, appProtocols: {"9000": Http2}}
- {name: empty, namespace: default, hostname: empty, vips: [], ports: {"80": 80}}
workloads:
- {name: api-a, namespace: default, workloadIps: [127.0.0.1], services: {"default/api.default.svc.cluster.local": {"80": ${a.port}}}}
- {name: api-b, namespace: default, workloadIps: [127.0.0.1], capacity: 3, services: {"default/api.default.svc.cluster.local": {"80": ${b.port}}}}
- {name: api-down, namespace: default, workloadIps: [127.0.0.1], status: Unhealthy, services: {"default/api.default.svc.cluster.local": {"80": ${c.port}}}}
- {name: api-none, namespace: default, workloadIps: [127.0.0.1], capacity: 0, services: {"default/api.default.svc.cluster.local": {"80": ${c.port}}}}
- {name: fixed-1, namespace: default, workloadIps: [127.0.0.1], services: {"default/fixed": {}}}
- {name: grpc-1, namespace: default, workloadIps: [127.0.0.1], services: {"default/grpc": {}}}
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - matches: [{path: {pathPrefix: /api}}]
      backends: [{service: {name: default/api.default.svc.cluster.local, port: 80}}]
    - matches: [{path: {pathPrefix: /fixed}}]
      backends: [{service: {name: default/fixed, port: 8080}}]
    - matches: [{path: {pathPrefix: /grpc}}]
      backends: [{service: {name: default/grpc, port: 9000}}]
    - matches: [{path: {pathPrefix: /empty}}]
      backends: [{service: {name: default/empty, port: 80}}]
`);
  });
  after(() => proxy.close());

  test('requests spread over the healthy workloads by capacity; unhealthy and capacity 0 get none', async () => {
    const before = { a: a.seen.length, b: b.seen.length, c: c.seen.length };
    for (let i = 0; i < 60; i++) {
      const res = await request(proxy.url(`/api/${i}`));
      assert.equal(res.statusCode, 200);
      await res.body.dump();
    }
    const got = { a: a.seen.length - before.a, b: b.seen.length - before.b, c: c.seen.length - before.c };
    assert.equal(got.a + got.b, 60);
    assert.equal(got.c, 0, 'the unhealthy and the capacity-0 workload got nothing');
    // capacity 3 against 1: b gets about three quarters (60 draws: well past chance either way)
    assert.ok(got.b > got.a && got.a > 0, JSON.stringify(got));
  });

  test("a workload that maps no port for it is reached at the Service's target port", async () => {
    const res = await request(proxy.url('/fixed/x'));
    assert.equal(res.statusCode, 200);
    assert.equal(((await res.body.json()) as { url: string }).url, '/fixed/x');
  });

  test('a port whose appProtocol is Http2 is spoken to in HTTP/2 (h2c)', async () => {
    const res = await request(proxy.url('/grpc/x'));
    assert.equal(res.statusCode, 200);
    assert.equal(await res.body.text(), 'h2 upstream saw HTTP/2.0');
  });

  test('a Service without a workload to send to: 503 saying so', async () => {
    const res = await request(proxy.url('/empty'));
    assert.equal(res.statusCode, 503);
    assert.match(
      await res.body.text(),
      /service default\/empty has no endpoint: no healthy workload in workloads names it with a port for 80/,
    );
  });
});

test('a retry goes to a workload the request has not tried: one of two down, every request answered', async () => {
  const closed = await startUpstream('echo');
  const deadPort = closed.port;
  await closed.close();
  const proxy = await startProxy(`services:
- {name: pair, namespace: default, hostname: pair, vips: [], ports: {"80": 0}}
workloads:
- {namespace: default, workloadIps: [127.0.0.1], services: {"default/pair": {"80": ${deadPort}}}}
- {namespace: default, workloadIps: [127.0.0.1], services: {"default/pair": {"80": ${a.port}}}}
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - policies: {retry: {attempts: 1, codes: [503]}}
      backends: [{service: {name: default/pair, port: 80}}]
`);
  try {
    // without the tried endpoint left out, each request would fail with probability 1/4
    for (let i = 0; i < 24; i++) {
      const res = await request(proxy.url(`/r${i}`));
      assert.equal(res.statusCode, 200, `request ${i}`);
      await res.body.dump();
    }
  } finally {
    await proxy.close();
  }
});

describe('config', () => {
  const base = (backend: string) => `services:
- {name: api, namespace: default, hostname: api, vips: [], ports: {"80": 8080}}
binds:
- port: 3000
  listeners:
  - routes:
    - backends: [{service: ${backend}}]
`;
  test('a Service not in services, or a port it does not have, is an error naming what there is', () => {
    assert.throws(
      () => load(base('{name: default/nope, port: 80}')),
      (e: unknown) =>
        e instanceof ConfigError &&
        /backends\[0\]\.service\.name: no service "default\/nope" in services \(services: default\/api\)/.test(
          e.message,
        ),
    );
    assert.throws(
      () => load(base('{name: default/api, port: 81}')),
      (e: unknown) =>
        e instanceof ConfigError &&
        /backends\[0\]\.service\.port: service default\/api has no port 81 \(ports: 80\)/.test(e.message),
    );
    assert.throws(
      () => load(base('{name: api, port: 80}')),
      (e: unknown) => e instanceof ConfigError && /expected "<namespace>\/<hostname>"/.test(e.message),
    );
  });
  test('a Service with no workload loads with a warning; a workload address that is not an IP is an error', () => {
    const { warnings } = load(base('{name: default/api, port: 80}'));
    assert.ok(
      warnings.some((w) => /service default\/api has no workload to send requests to/.test(w.message)),
      JSON.stringify(warnings),
    );
    assert.throws(
      () =>
        load(
          `${base('{name: default/api, port: 80}')}workloads:\n- {namespace: default, workloadIps: [api.local], services: {"default/api": {}}}\n`,
        ),
      (e: unknown) => e instanceof ConfigError && /workloads\[0\]\.workloadIps\[0\]/.test(e.message),
    );
  });
});

// agentgateway's `policies: [{target: {backend: {service: {hostname, namespace, port}}}}]`: a policy
// for the calls to a Service, on one port or (port unset) all of them, whichever route sends them.
describe('a policy that targets a Service', () => {
  let proxy: TestProxy;
  before(async () => {
    proxy = await startProxy(`services:
- {name: api, namespace: default, hostname: api.local, vips: [], ports: {"80": ${a.port}, "8080": ${b.port}}}
- {name: other, namespace: default, hostname: other.local, vips: [], ports: {"80": ${c.port}}}
workloads:
- {name: api-1, namespace: default, workloadIps: [127.0.0.1], services: {"default/api.local": {}}}
- {name: other-1, namespace: default, workloadIps: [127.0.0.1], services: {"default/other.local": {}}}
policies:
- name: {name: every-port, namespace: default}
  target: {backend: {service: {hostname: api.local, namespace: default}}}
  policy: {requestHeaderModifier: {set: {x-service: api}}, backendAuth: {key: every-port-key}}
- name: {name: port-80, namespace: default}
  target: {backend: {service: {hostname: api.local, namespace: default, port: 80}}}
  policy: {backendAuth: {key: port-80-key}}
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - matches: [{path: {pathPrefix: /p80}}]
      backends: [{service: {name: default/api.local, port: 80}}]
    - matches: [{path: {pathPrefix: /p8080}}]
      backends: [{service: {name: default/api.local, port: 8080}}]
    - matches: [{path: {pathPrefix: /other}}]
      backends: [{service: {name: default/other.local, port: 80}}]
`);
  });
  after(() => proxy.close());

  const headersAt = async (path: string, up: TestServer) => {
    const res = await request(proxy.url(path));
    assert.equal(res.statusCode, 200);
    await res.body.dump();
    const seen = up.seen.at(-1);
    assert.equal(seen?.url, path);
    return { service: seen?.headers['x-service'], auth: seen?.headers.authorization };
  };

  test("a port's own policy wins over the Service-wide one it also sets; the other ports take the Service-wide one", async () => {
    assert.deepEqual(await headersAt('/p80', a), { service: 'api', auth: 'Bearer port-80-key' });
    assert.deepEqual(await headersAt('/p8080', b), { service: 'api', auth: 'Bearer every-port-key' });
  });

  test('another Service takes neither', async () => {
    assert.deepEqual(await headersAt('/other', c), { service: undefined, auth: undefined });
  });

  test("a problem in the targeting policy is named where it is written, not at the route's backend", () => {
    const yaml = `services:
- {name: api, namespace: default, hostname: api.local, vips: [], ports: {"80": 80}}
policies:
- name: {name: tls, namespace: default}
  target: {backend: {service: {hostname: api.local, namespace: default}}}
  policy: {backendTLS: {root: /nonexistent/ca.pem}}
binds:
- port: 3000
  listeners:
  - routes:
    - backends: [{service: {name: default/api.local, port: 80}}]
`;
    assert.throws(
      () => load(yaml),
      (e: unknown) =>
        e instanceof ConfigError &&
        e.issues.some((i) => i.path.startsWith('policies[0].policy.backendTLS.root')) &&
        !e.issues.some((i) => i.path.startsWith('binds')),
    );
  });
});
