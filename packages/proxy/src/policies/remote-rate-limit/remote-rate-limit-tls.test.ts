// remoteRateLimit over TLS, against the real envoyproxy/ratelimit serving gRPC with TLS
// (GRPC_SERVER_USE_TLS) and requiring a client certificate (GRPC_CLIENT_TLS_CACERT): gw's
// `policies.backendTLS` (the CA, the client certificate, `hostname` for the name verified), or a
// named backend's, reaches it and the limit holds; without the client certificate the check fails,
// and failClosed answers 500.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type RateLimitService, startRateLimitService, startUpstream, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { makeTestPki, type TestPki } from '@gw/testkit/tls';
import { request } from 'undici';

const NAME = 'rls.internal';
const SERVICE_CONFIG = `
domain: gw
descriptors:
  - key: path
    value: /mutual
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: path
    value: /by-backend
    rate_limit: {unit: minute, requests_per_unit: 2}
`;

let pki: TestPki;
let service: RateLimitService;
let up: TestServer;
let proxy: TestProxy;

before(async () => {
  pki = await makeTestPki([NAME]);
  const cert = pki.servers[NAME];
  assert.ok(cert);
  service = await startRateLimitService({
    config: SERVICE_CONFIG,
    tls: { certFile: cert.certFile, keyFile: cert.keyFile, clientCaFile: pki.caFile },
  });
  up = await startUpstream();
  const client = `cert: {file: ${JSON.stringify(pki.client.certFile)}}, key: {file: ${JSON.stringify(pki.client.keyFile)}}`;
  const route = (name: string, policy: string) => `
    - name: ${name}
      matches: [{path: {pathPrefix: /${name}}}]
      policies:
        remoteRateLimit: ${policy}
      backends: [{host: "127.0.0.1:${up.port}"}]`;
  const limits = `domain: gw, timeout: 5s, failureMode: failClosed, descriptors: [{entries: [{key: path, value: request.path}]}]`;
  proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:${route('mutual', `{host: "${service.host}", ${limits}, policies: {backendTLS: {root: {file: ${JSON.stringify(pki.caFile)}}, ${client}, hostname: ${NAME}}}}`)}${route(
    'by-backend',
    `{backend: rls, ${limits}}`,
  )}${route('no-client-cert', `{host: "${service.host}", ${limits}, policies: {backendTLS: {root: ${JSON.stringify(pki.ca)}, hostname: ${NAME}}}}`)}
backends:
- name: rls
  host: "${service.host}"
  policies:
    backendTLS: {root: ${JSON.stringify(pki.ca)}, ${client}, hostname: ${NAME}}
`);
});

after(async () => {
  await proxy?.close();
  await service?.close();
  await up?.close();
  await pki?.cleanup();
});

async function statuses(path: string, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const r = await request(proxy.url(path));
    await r.body.text();
    out.push(r.statusCode);
  }
  return out;
}

/** The service counts in windows aligned to the clock's minutes: start where 5 s of one are left. */
async function sameWindow(): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < 5_000) await sleep(left + 100);
}

test('policies.backendTLS with a client certificate: the service is asked over TLS and its limit holds', async () => {
  await sameWindow();
  assert.deepEqual(await statuses('/mutual', 3), [200, 200, 429], service.logs());
});

test('a named backend’s backendTLS is the service’s', async () => {
  await sameWindow();
  assert.deepEqual(await statuses('/by-backend', 3), [200, 200, 429], service.logs());
});

test('without the client certificate the service requires, the check fails: failClosed answers 500', async () => {
  const seen = up.seen.length;
  assert.deepEqual(await statuses('/no-client-cert', 1), [500]);
  assert.equal(up.seen.length, seen);
});
