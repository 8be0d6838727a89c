// The policies on an OTLP collector (frontendPolicies.tracing, accessLog.otlp), against a real OTLP
// receiver that serves TLS and takes only clients with a certificate from the test CA: backendTLS
// (private CA, client certificate, the name checked), a backendAuth key and requestHeaderModifier
// headers on each export, over gRPC and OTLP/HTTP; the collector named by `backend`, whose policies
// then apply; and the config's refusals, by field.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { makeTestPki, startUpstream, type TestPki, type TestServer } from '@gw/testkit';
import { type OtlpReceiver, startOtlpReceiver } from '@gw/testkit/otlp-receiver';
import { startProxy } from '@gw/testkit/proxy';
import { loadConfigText } from '../config/load.ts';
import { configIssues } from '../config/test-support.ts';

// batches go out every 50 ms, so a test waits for its spans and records briefly
process.env.OTEL_BSP_SCHEDULE_DELAY = '50';
process.env.OTEL_BLRP_SCHEDULE_DELAY = '50';

let up: TestServer;
let pki: TestPki;
let otlp: OtlpReceiver;
before(async () => {
  up = await startUpstream('echo');
  pki = await makeTestPki(['otel.test']);
  const server = pki.servers['otel.test'];
  assert.ok(server);
  otlp = await startOtlpReceiver({ tls: { cert: server.cert, key: server.key, clientCa: pki.ca } });
});
after(async () => {
  await up?.close();
  await otlp?.close();
  await pki?.cleanup();
});

const hostPort = (url: string) => url.replace(/^https:\/\//, '');
const json = JSON.stringify;

/** backendTLS to the receiver: the test CA, the client certificate, the name on its certificate. */
const tlsPolicy = () =>
  `{root: ${json(pki.caFile)}, cert: ${json(pki.client.certFile)}, key: ${json(pki.client.keyFile)}, hostname: otel.test}`;

const config = (frontend: string, backends = '') => `frontendPolicies:
${frontend}
${backends}
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - name: echo
      backends: [{host: "127.0.0.1:${up.port}"}]
`;

/** Waits until `pick` finds something in the receiver, or fails after 10 s. */
async function until<T>(what: string, pick: () => T | undefined): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const got = pick();
    if (got !== undefined) return got;
    if (Date.now() > deadline) throw new Error(`no ${what} after 10 s`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('policies on an OTLP collector', () => {
  for (const protocol of ['grpc', 'http'] as const) {
    test(`tracing over ${protocol}: mTLS with a private CA, the key and headers on each export`, async () => {
      const url = protocol === 'grpc' ? otlp.grpcUrl : otlp.httpUrl;
      const proxy = await startProxy(
        config(`  tracing:
    host: ${hostPort(url)}
    protocol: ${protocol}
    randomSampling: true
    policies:
      backendTLS: ${tlsPolicy()}
      backendAuth: {key: trace-key-${protocol}}
      requestHeaderModifier: {add: {x-tenant: team-${protocol}}, set: {x-source: gw}}`),
      );
      try {
        const r = await fetch(proxy.url(`/traced/${protocol}`));
        assert.equal(r.status, 200);
        await r.arrayBuffer();
        const span = await until('span', () =>
          otlp.spans.find((s) => s.attributes['http.path'] === `/traced/${protocol}`),
        );
        assert.ok(span);
        const headers = await until('export with the key', () =>
          otlp.exportHeaders.find((h) => h.authorization === `Bearer trace-key-${protocol}`),
        );
        assert.equal(headers['x-tenant'], `team-${protocol}`);
        assert.equal(headers['x-source'], 'gw');
      } finally {
        await proxy.close();
      }
    });
  }

  test('accessLog.otlp by backend reference: the named backend’s TLS and key (in its own header) apply', async () => {
    const proxy = await startProxy(
      config(
        `  accessLog:
    otlp: {backend: otel, protocol: http}`,
        `backends:
- name: otel
  host: ${hostPort(otlp.httpUrl)}
  policies:
    backendTLS: ${tlsPolicy()}
    backendAuth: {key: {value: log-key, location: {header: {name: X-Api-Key}}}}`,
      ),
    );
    try {
      const r = await fetch(proxy.url('/logged/by-backend'));
      assert.equal(r.status, 200);
      await r.arrayBuffer();
      await until('record', () => otlp.logs.find((l) => l.attributes['http.path'] === '/logged/by-backend'));
      assert.ok(otlp.exportHeaders.some((h) => h['x-api-key'] === 'log-key'));
    } finally {
      await proxy.close();
    }
  });

  test('tracing and accessLog.otlp by service: exports go to its hostname and port, with the policies written beside it', async () => {
    // the receiver listens on 127.0.0.1: a Service whose hostname is that address
    const port = (url: string) => Number(url.slice(url.lastIndexOf(':') + 1));
    const proxy = await startProxy(
      config(`  tracing:
    service: {name: observability/127.0.0.1, port: ${port(otlp.grpcUrl)}}
    randomSampling: true
    policies:
      backendTLS: ${tlsPolicy()}
  accessLog:
    otlp:
      service: {name: observability/127.0.0.1, port: ${port(otlp.httpUrl)}}
      protocol: http
      policies:
        backendTLS: ${tlsPolicy()}`),
    );
    try {
      const r = await fetch(proxy.url('/by-service'));
      assert.equal(r.status, 200);
      await r.arrayBuffer();
      await until('span', () => otlp.spans.find((s) => s.attributes['http.path'] === '/by-service'));
      await until('record', () => otlp.logs.find((l) => l.attributes['http.path'] === '/by-service'));
    } finally {
      await proxy.close();
    }
  });

  test('the key stays out of the loaded config as printed', () => {
    const loaded = loadConfigText(
      'gw.yaml',
      config(`  tracing:
    host: "127.0.0.1:4317"
    policies:
      backendAuth: {key: very-secret-key}`),
      process.cwd(),
    );
    const t = loaded.ir.frontend.tracing;
    assert.ok(t?.credential);
    assert.equal(t.credential.header, 'authorization');
    assert.equal(t.credential.value.reveal(), 'Bearer very-secret-key');
    assert.doesNotMatch(json(loaded.ir.frontend), /very-secret-key/);
    // backendTLS makes the export https
    const tls = loadConfigText(
      'gw.yaml',
      config(`  tracing:
    host: "127.0.0.1:4318"
    protocol: http
    policies: {backendTLS: {insecure: true}}`),
      process.cwd(),
    );
    assert.equal(tls.ir.frontend.tracing?.endpoint, 'https://127.0.0.1:4318/v1/traces');
  });

  test('the config names what a collector does not take', () => {
    const tracing = (block: string, backends = '') => configIssues(config(`  tracing: ${block}`, backends));
    assert.match(
      tracing('{host: "127.0.0.1:4317", policies: {backendTLS: {alpn: [h2]}}}'),
      /tracing\.policies\.backendTLS\.alpn: alpn is set by the OTLP protocol/,
    );
    assert.match(
      tracing('{host: "127.0.0.1:4317", policies: {backendAuth: {passthrough: {}}}}'),
      /tracing\.policies\.backendAuth.*passthrough on the tracing collector is not supported/,
    );
    assert.match(
      tracing(
        '{host: "127.0.0.1:4317", policies: {backendAuth: {key: {value: k, location: {queryParameter: {name: k}}}}}}',
      ),
      /tracing\.policies\.backendAuth\.key\.location: a tracing collector takes its key in a header/,
    );
    assert.match(
      tracing('{host: "127.0.0.1:4317", policies: {requestHeaderModifier: {remove: [x]}}}'),
      /requestHeaderModifier\.remove on the tracing collector is not supported/,
    );
    assert.match(
      tracing('{host: "127.0.0.1:4317", policies: {tcp: {}}}'),
      /tcp on the tracing collector is not supported/,
    );
    assert.match(
      tracing('{host: "127.0.0.1:4317", backend: otel}', 'backends: [{name: otel, host: "127.0.0.1:4317"}]'),
      /tracing\.backend: the collector is host, service or backend: set one of them/,
    );
    assert.match(tracing('{backend: nope}'), /tracing\.backend: no backend named "nope"/);
    assert.match(
      tracing(
        '{backend: otel}',
        'backends: [{name: otel, host: "127.0.0.1:4317", policies: {http: {version: HTTP2}}}]',
      ),
      /tracing\.backend: backend "otel" sets http, which a tracing collector does not take/,
    );
    assert.match(
      configIssues(config('  accessLog: {otlp: {protocol: http}}')),
      /accessLog\.otlp\.host: the collector is required: host \(e\.g\. 127\.0\.0\.1:4317\), service or backend/,
    );
    assert.equal(
      tracing(
        '{backend: otel}',
        'backends: [{name: otel, host: "127.0.0.1:4317", policies: {backendTLS: {}}}]',
      ),
      '',
    );
  });
});
