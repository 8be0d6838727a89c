// accessLog.otlp against a real OTLP receiver (HTTP protobuf and gRPC, decoded with the official
// opentelemetry-proto definitions): each finished request's record arrives as a log record whose
// attributes are the access log's fields, shaped by the otlp block's own filter and fields or else by
// the access log's; credentials in the query stay redacted; a collector that is down does not hold up
// requests; the config names what it refuses.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startUpstream, type TestServer } from '@gw/testkit';
import { type OtlpReceiver, type ReceivedLog, startOtlpReceiver } from '@gw/testkit/otlp-receiver';
import { startProxy } from '@gw/testkit/proxy';
import { configIssues } from '../config/test-support.ts';

// batches go out every 50 ms rather than the SDK's 1 s, so a test waits for its records briefly
process.env.OTEL_BLRP_SCHEDULE_DELAY = '50';

let up: TestServer;
let otlp: OtlpReceiver;
before(async () => {
  up = await startUpstream('echo');
  otlp = await startOtlpReceiver();
});
after(async () => {
  await up?.close();
  await otlp?.close();
});

const config = (accessLog: string, extraRoute = '') => `frontendPolicies:
  accessLog:
${accessLog}
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - name: echo
      policies:
        apiKey: {keys: [k-1], location: {queryParameter: {name: api_key}}, mode: optional}
      backends: [{host: "127.0.0.1:${up.port}"}]
${extraRoute}`;

async function httpGet(url: string, headers: Record<string, string> = {}): Promise<{ status: number }> {
  const r = await fetch(url, { headers });
  await r.arrayBuffer();
  return { status: r.status };
}

/** The records whose http.path starts with `prefix`, once `n` have arrived. */
async function records(prefix: string, n: number): Promise<ReceivedLog[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const got = otlp.logs.filter((l) => String(l.attributes['http.path']).startsWith(prefix));
    if (got.length >= n) return got;
    if (Date.now() > deadline) throw new Error(`${got.length} records for ${prefix}, wanted ${n}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('accessLog.preset', () => {
  test("otel: the log and its otlp export carry OpenTelemetry's field names, credentials still redacted", async () => {
    const host = otlp.httpUrl.replace('http://', '');
    const proxy = await startProxy(
      config(`    preset: otel
    remove: [network.protocol.version]
    add: {tenant: 'request.headers["x-tenant"]'}
    otlp: {host: "${host}", protocol: http}`),
    );
    try {
      const r = await httpGet(proxy.url('/otel/a?api_key=k-1&x=1'), { 'x-tenant': 'acme' });
      assert.equal(r.status, 200);
      const port = Number(new URL(proxy.url()).port);
      const want = {
        'client.address': '127.0.0.1',
        'http.request.method': 'GET',
        'server.address': '127.0.0.1',
        'server.port': port,
        'url.scheme': 'http',
        'url.path': '/otel/a',
        'url.query': 'api_key=[redacted]&x=1',
        'http.response.status_code': 200,
        tenant: 'acme',
      };
      const deadline = Date.now() + 10_000;
      const exportedFor = () => otlp.logs.find((l) => l.attributes['url.path'] === '/otel/a');
      while (!exportedFor()) {
        if (Date.now() > deadline) throw new Error('no otlp record for /otel/a');
        await new Promise((res) => setTimeout(res, 20));
      }
      const exported = exportedFor() as ReceivedLog;
      const line = proxy.accessLog.find((l) => l['url.path'] === '/otel/a');
      for (const rec of [line, exported.attributes]) {
        assert.ok(rec);
        assert.equal(typeof rec['client.port'], 'number');
        for (const [k, v] of Object.entries(want)) assert.equal(rec[k], v, k);
        // gw's own names are not there, nor the removed field
        for (const k of ['src.addr', 'http.method', 'http.path', 'http.status', 'network.protocol.version'])
          assert.equal(rec[k], undefined, k);
      }
      // without a query there is no url.query
      await httpGet(proxy.url('/otel/b'));
      for (let i = 0; i < 50 && !proxy.accessLog.some((l) => l['url.path'] === '/otel/b'); i++)
        await new Promise((res) => setTimeout(res, 10));
      const plain = proxy.accessLog.find((l) => l['url.path'] === '/otel/b');
      assert.ok(plain);
      assert.equal('url.query' in plain, false);
    } finally {
      await proxy.close();
    }
  });

  test('an unknown preset is a config error naming the field', () => {
    assert.match(configIssues(config('    preset: ecs')), /frontendPolicies\.accessLog\.preset/);
  });
});

describe('accessLog.otlp', () => {
  for (const protocol of ['grpc', 'http'] as const) {
    test(`${protocol}: each request is a log record carrying the access log's fields`, async () => {
      const host = protocol === 'grpc' ? otlp.grpcUrl : otlp.httpUrl.replace('http://', '');
      const proxy = await startProxy(
        config(`    add: {tenant: 'request.headers["x-tenant"]'}
    otlp: {host: "${host}", protocol: ${protocol}}`),
      );
      try {
        const r = await httpGet(proxy.url(`/${protocol}/a?api_key=k-1&x=1`), { 'x-tenant': 'acme' });
        assert.equal(r.status, 200);
        const [rec] = await records(`/${protocol}/a`, 1);
        assert.ok(rec);
        assert.equal(rec.severityText, 'INFO');
        assert.equal(rec.body, 'request');
        assert.equal(rec.scope, 'gw.access');
        assert.equal(rec.resource['service.name'], 'gw');
        assert.equal(rec.attributes['http.method'], 'GET');
        assert.equal(rec.attributes['http.status'], 200);
        assert.equal(rec.attributes['http.path'], `/${protocol}/a?api_key=[redacted]&x=1`);
        assert.match(String(rec.attributes.route), /\/echo$/);
        assert.equal(rec.attributes.tenant, 'acme', "the access log's fields, with no fields of its own");
        assert.match(String(rec.attributes.duration), /^\d+(\.\d)?ms$/);
        const ms = Number(rec.timeNs / 1_000_000n);
        assert.ok(Math.abs(ms - Date.now()) < 10_000, 'stamped when the request ended');
      } finally {
        await proxy.close();
      }
    });
  }

  test('its own filter and fields replace the access log’s for the exported records', async () => {
    const proxy = await startProxy(
      config(`    filter: 'false'
    add: {tenant: 'request.headers["x-tenant"]'}
    otlp:
      host: "${otlp.grpcUrl}"
      filter: 'response.code >= 400'
      fields: {add: {reason: '"failed"'}, remove: [src.addr]}`),
    );
    try {
      await httpGet(proxy.url('/own/ok'));
      await httpGet(proxy.url('/own/denied?api_key=wrong'));
      const [rec] = await records('/own/', 1);
      // the 200 was not exported; the 401 was, with the otlp block's fields only
      await new Promise((r) => setTimeout(r, 200));
      assert.deepEqual(
        (await records('/own/', 1)).map((l) => l.attributes['http.status']),
        [401],
      );
      assert.equal(rec?.attributes.reason, 'failed');
      assert.equal(rec?.attributes.tenant, undefined);
      assert.equal(rec?.attributes['src.addr'], undefined);
    } finally {
      await proxy.close();
    }
  });

  test('a collector that is down does not hold up requests', async () => {
    const proxy = await startProxy(config('    otlp: {host: "127.0.0.1:1", protocol: http}'));
    try {
      const started = Date.now();
      for (let i = 0; i < 5; i++) assert.equal((await httpGet(proxy.url(`/down/${i}`))).status, 200);
      assert.ok(Date.now() - started < 5000);
    } finally {
      // the last records are flushed on the way out, for a bounded time
      const closing = Date.now();
      await proxy.close();
      assert.ok(Date.now() - closing < 6000, `closed in ${Date.now() - closing} ms`);
    }
  });

  test('the config names what it refuses', () => {
    const issues = (otlpBlock: string): string => configIssues(config(`    otlp: ${otlpBlock}`));
    assert.match(
      issues('{host: "127.0.0.1:4317", filter: "request.("}'),
      /frontendPolicies\.accessLog\.otlp\.filter/,
    );
    assert.match(
      issues('{host: "127.0.0.1:4317", path: /logs}'),
      /accessLog\.otlp\.path: path is the OTLP\/HTTP path: set protocol http/,
    );
    assert.match(
      issues('{host: "ftp://x:1"}'),
      /accessLog\.otlp\.host: expected an http:\/\/ or https:\/\/ URL/,
    );
    assert.match(
      issues('{host: "127.0.0.1:4317", service: {name: ns/otel, port: 4317}}'),
      /accessLog\.otlp\.service: the collector is host, service or backend: set one of them/,
    );
    assert.equal(issues('{host: "127.0.0.1:4318", protocol: http, path: /custom/logs}'), '');
  });
});
