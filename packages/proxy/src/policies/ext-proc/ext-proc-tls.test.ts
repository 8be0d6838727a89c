// extProc over TLS: the processing service (the testkit's gRPC ext_proc server) listens with a
// certificate for a name other than the address dialled and requires a client certificate. gw
// reaches it with `policies.backendTLS` (the CA inline, the client certificate by file, `hostname`
// for SNI and the name verified) or through a named host backend's backendTLS; without the client
// certificate, or in plain text, the stream fails and failClosed answers 500. A Service of `services`
// is dialled at its workloads' addresses and verified by the Service's hostname.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type ExtProcServer, setRequestHeader, startExtProcServer } from '@gw/testkit/ext-proc-server';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { makeTestPki, type TestPki } from '@gw/testkit/tls';
import { startUpstream, type TestServer } from '@gw/testkit/upstream';
import { request } from 'undici';

const NAME = 'proc.internal';
let pki: TestPki;
let proc: ExtProcServer;
let up: TestServer;
let proxy: TestProxy;

before(async () => {
  pki = await makeTestPki([NAME]);
  const cert = pki.servers[NAME];
  assert.ok(cert);
  // every request gets x-processed from the service
  proc = await startExtProcServer((r) => setRequestHeader(r, 'x-processed', 'tls'), {
    cert: cert.cert,
    key: cert.key,
    clientCa: pki.ca,
  });
  up = await startUpstream();
  const client = `cert: {file: ${JSON.stringify(pki.client.certFile)}}, key: {file: ${JSON.stringify(pki.client.keyFile)}}`;
  const route = (name: string, extProc: string) => `
    - name: ${name}
      matches: [{path: {pathPrefix: /${name}}}]
      policies:
        extProc: ${extProc}
      backends: [{host: "127.0.0.1:${up.port}"}]`;
  const opts =
    'timeout: 5s, processingOptions: {requestBodyMode: none, responseBodyMode: none, responseHeaderMode: skip}';
  proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:${route('mutual', `{host: "${proc.host}", ${opts}, policies: {backendTLS: {root: ${JSON.stringify(pki.ca)}, ${client}, hostname: ${NAME}}}}`)}${route(
    'by-backend',
    `{backend: processor, ${opts}}`,
  )}${route('no-client-cert', `{host: "${proc.host}", ${opts}, policies: {backendTLS: {root: ${JSON.stringify(pki.ca)}, hostname: ${NAME}}}}`)}${route(
    'plain',
    `{host: "${proc.host}", ${opts}}`,
  )}${route(
    'by-service',
    `{service: {name: infra/${NAME}, port: 9001}, ${opts}, policies: {backendTLS: {root: ${JSON.stringify(pki.ca)}, ${client}}}}`,
  )}
services:
- {name: proc, namespace: infra, hostname: ${NAME}, vips: [], ports: {"9001": ${proc.port}}}
workloads:
- {name: proc-0, namespace: infra, workloadIps: [127.0.0.1], services: {"infra/${NAME}": {}}}
- {name: proc-1, namespace: infra, workloadIps: [127.0.0.1], services: {"infra/${NAME}": {}}}
backends:
- name: processor
  host: "${proc.host}"
  policies:
    backendTLS: {root: {file: ${JSON.stringify(pki.caFile)}}, ${client}, hostname: ${NAME}}
`);
});

after(async () => {
  await proxy?.close();
  await up?.close();
  await proc?.close();
  await pki?.cleanup();
});

async function get(path: string) {
  const r = await request(proxy.url(path));
  return { status: r.statusCode, text: await r.body.text() };
}

test('policies.backendTLS: the stream is TLS with the client certificate; the service processes the request', async () => {
  const n = proc.streams.length;
  const r = await get('/mutual');
  assert.equal(r.status, 200);
  assert.equal(up.seen.at(-1)?.headers['x-processed'], 'tls');
  assert.equal(proc.streams.length, n + 1);
  assert.equal(proc.clientCerts.at(-1), 'gw-test-client');
});

test('a named host backend brings its backendTLS (the CA by file)', async () => {
  const r = await get('/by-backend');
  assert.equal(r.status, 200);
  assert.equal(up.seen.at(-1)?.headers['x-processed'], 'tls');
  assert.equal(proc.clientCerts.at(-1), 'gw-test-client');
});

test("a Service of services: its workloads are dialled by address, TLS names and verifies the Service's hostname", async () => {
  for (let i = 0; i < 2; i++) {
    const r = await get('/by-service');
    assert.equal(r.status, 200, r.text);
    assert.equal(up.seen.at(-1)?.headers['x-processed'], 'tls');
    assert.equal(proc.clientCerts.at(-1), 'gw-test-client');
  }
});

test('without the client certificate the service requires, or in plain text, failClosed answers 500', async () => {
  const seen = up.seen.length;
  for (const path of ['/no-client-cert', '/plain']) {
    const r = await get(path);
    assert.equal(r.status, 500, path);
  }
  assert.equal(up.seen.length, seen, 'the upstream was not called');
});
