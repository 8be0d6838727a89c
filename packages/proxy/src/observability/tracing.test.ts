// OpenTelemetry tracing against a real OTLP receiver (HTTP protobuf and gRPC, decoded with the
// official opentelemetry-proto definitions): the spans of a request, their parent/child links and
// attributes, the traceparent the upstream receives, sampling, and the config rules.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ConfigError } from '@gw/api';
import {
  FAKE_USAGE,
  type FakeOpenAI,
  httpGet,
  startFakeOpenAI,
  startUpstream,
  type TestServer,
} from '@gw/testkit';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from '@gw/testkit/otlp-receiver';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { loadConfigText } from '../config/load.ts';

// batches go out every 50 ms rather than the SDK's 5 s, so a test waits for its spans briefly
process.env.OTEL_BSP_SCHEDULE_DELAY = '50';

const SERVER = 2;
const CLIENT = 3;
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';

let up: TestServer;
let otlp: OtlpReceiver;
before(async () => {
  up = await startUpstream('echo');
  otlp = await startOtlpReceiver();
});
after(async () => {
  await up.close();
  await otlp.close();
});

const route = (extra = '') => `binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - name: echo
      backends: [{host: "127.0.0.1:${up.port}"}]
${extra}`;

/** Spans of one trace, once `n` of them have arrived. */
async function trace(traceId: string, n: number): Promise<ReceivedSpan[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const spans = otlp.spans.filter((s) => s.traceId === traceId);
    if (spans.length >= n) return spans;
    if (Date.now() > deadline) throw new Error(`${spans.length} spans of trace ${traceId}, wanted ${n}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function parseTraceparent(h: unknown): { traceId: string; spanId: string; flags: string } {
  const m = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(String(h));
  assert.ok(m, `a traceparent, got ${String(h)}`);
  return { traceId: m[1] as string, spanId: m[2] as string, flags: m[3] as string };
}

describe('config.tracing over OTLP/HTTP', () => {
  let p: TestProxy;
  before(async () => {
    p = await startProxy(
      route(`config:
  tracing:
    otlpEndpoint: ${otlp.httpUrl}
    otlpProtocol: http
    headers: {authorization: "Bearer collector-token"}
    randomSampling: true
    fields:
      remove: [src.addr]
      add:
        user: 'request.headers["x-user"]'
`),
    );
  });
  after(() => p.close());

  test('a request without a trace starts one: a server span and its upstream call as a child, the upstream gets the child as parent', async () => {
    const r = await httpGet(p.port(), '/hello?x=1', { headers: { 'x-user': 'alice' } });
    assert.equal(r.status, 200);
    const seen = up.seen.at(-1);
    const tp = parseTraceparent(seen?.headers.traceparent);
    assert.equal(tp.flags, '01');
    const spans = await trace(tp.traceId, 2);
    const server = spans.find((s) => s.kind === SERVER);
    const client = spans.find((s) => s.kind === CLIENT);
    assert.ok(server && client);
    assert.equal(server.parentSpanId, '', 'the server span is the root');
    assert.equal(client.parentSpanId, server.spanId);
    assert.equal(client.spanId, tp.spanId, 'the upstream is told the upstream call span');
    assert.equal(server.name, 'GET echo');
    assert.match(client.name, /^GET \S+/);
    assert.equal(client.attributes.backend, server.attributes.backend ?? client.attributes.backend);
    assert.equal(server.attributes['http.method'], 'GET');
    assert.equal(server.attributes['http.path'], '/hello?x=1');
    assert.equal(server.attributes['http.status'], 200);
    assert.equal(server.attributes.user, 'alice', 'fields.add by CEL');
    assert.equal(server.attributes['src.addr'], undefined, 'fields.remove');
    assert.equal(client.attributes['http.status'], 200);
    assert.equal(client.attributes.endpoint, `127.0.0.1:${up.port}`);
    assert.equal(server.resource['service.name'], 'gw');
    assert.ok(
      client.startNs >= server.startNs && client.endNs <= server.endNs,
      'the call lies within the request',
    );
    const headers = otlp.exportHeaders.at(-1);
    assert.equal(headers?.authorization, 'Bearer collector-token');
    assert.equal(headers?.['content-type'], 'application/x-protobuf');
  });

  test("a client's sampled trace is continued, its tracestate passed on", async () => {
    const r = await httpGet(p.port(), '/continued', {
      headers: { traceparent: `00-${TRACE_ID}-${CLIENT_SPAN}-01`, tracestate: 'vendor=abc' },
    });
    assert.equal(r.status, 200);
    const seen = up.seen.at(-1);
    const tp = parseTraceparent(seen?.headers.traceparent);
    assert.equal(tp.traceId, TRACE_ID);
    assert.notEqual(tp.spanId, CLIENT_SPAN);
    assert.equal(seen?.headers.tracestate, 'vendor=abc');
    const spans = await trace(TRACE_ID, 2);
    const server = spans.find((s) => s.kind === SERVER);
    assert.equal(server?.parentSpanId, CLIENT_SPAN);
    assert.equal(server?.traceState, 'vendor=abc');
    assert.equal(spans.find((s) => s.kind === CLIENT)?.spanId, tp.spanId);
  });

  test("a client's trace marked not sampled is not traced; its traceparent reaches the upstream as sent", async () => {
    const traceId = 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa';
    const sent = `00-${traceId}-${CLIENT_SPAN}-00`;
    await httpGet(p.port(), '/unsampled', { headers: { traceparent: sent } });
    assert.equal(up.seen.at(-1)?.headers.traceparent, sent);
    await httpGet(p.port(), '/after', { headers: { traceparent: `00-${'b'.repeat(32)}-${CLIENT_SPAN}-01` } });
    await trace('b'.repeat(32), 2);
    assert.equal(otlp.spans.filter((s) => s.traceId === traceId).length, 0);
  });

  test('parentNotSampled: a trace marked not sampled is traced anyway when it holds, and sent on sampled', async () => {
    const q = await startProxy(`config:
  tracing:
    otlpEndpoint: ${otlp.httpUrl}
    otlpProtocol: http
    parentNotSampled: 'request.headers["x-debug"] == "1"'
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - backends: [{host: "127.0.0.1:${up.port}"}]
`);
    try {
      const forced = 'd'.repeat(32);
      await httpGet(q.port(), '/forced', {
        headers: { traceparent: `00-${forced}-${CLIENT_SPAN}-00`, 'x-debug': '1' },
      });
      const tp = String(up.seen.at(-1)?.headers.traceparent);
      assert.match(tp, new RegExp(`^00-${forced}-[0-9a-f]{16}-01$`), 'sent on marked sampled');
      const spans = await trace(forced, 2);
      assert.equal(spans.find((s) => s.kind === SERVER)?.parentSpanId, CLIENT_SPAN);
      // without the header the client's choice stands
      const left = 'e'.repeat(32);
      await httpGet(q.port(), '/left', { headers: { traceparent: `00-${left}-${CLIENT_SPAN}-00` } });
      assert.equal(up.seen.at(-1)?.headers.traceparent, `00-${left}-${CLIENT_SPAN}-00`);
      await httpGet(q.port(), '/after', {
        headers: { traceparent: `00-${'f'.repeat(32)}-${CLIENT_SPAN}-00`, 'x-debug': '1' },
      });
      await trace('f'.repeat(32), 2);
      assert.equal(otlp.spans.filter((s) => s.traceId === left).length, 0);
    } finally {
      await q.close();
    }
  });

  test('a failed upstream call: both spans are errors', async () => {
    const q = await startProxy(`config:
  tracing:
    otlpEndpoint: ${otlp.httpUrl}
    otlpProtocol: http
    randomSampling: true
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - name: down
      backends: [{host: "127.0.0.1:1"}]
`);
    try {
      const r = await httpGet(q.port(), '/down', {
        headers: { traceparent: `00-${'c'.repeat(32)}-${CLIENT_SPAN}-01` },
      });
      assert.equal(r.status, 503);
      const spans = await trace('c'.repeat(32), 2);
      for (const s of spans) assert.equal(s.status.code, 2, `${s.name} is an error`);
      assert.equal(spans.find((s) => s.kind === SERVER)?.attributes['http.status'], 503);
    } finally {
      await q.close();
    }
  });
});

describe('frontendPolicies.tracing over OTLP/gRPC', () => {
  let p: TestProxy;
  before(async () => {
    p = await startProxy(
      route(`frontendPolicies:
  tracing:
    host: ${otlp.grpcUrl.replace('http://', '')}
    randomSampling: '!request.path.startsWith("/other")'
    clientSampling: false
    filter: 'response.code != 404'
    remove: [http.version]
    attributes:
      environment: '"test"'
      route.path: request.path
      answer.method: 'json(response.body).method'
    resources:
      service.name: '"edge-gateway"'
      service.version: '"1.2.3"'
`),
    );
  });
  after(() => p.close());

  test('spans carry the policy attributes and resources; sampling by CEL', async () => {
    await httpGet(p.port(), '/sampled/one');
    const tp = parseTraceparent(up.seen.at(-1)?.headers.traceparent);
    const spans = await trace(tp.traceId, 2);
    const server = spans.find((s) => s.kind === SERVER);
    assert.equal(server?.attributes.environment, 'test');
    assert.equal(server?.attributes['route.path'], '/sampled/one');
    // the answer's bytes as they passed to the client (no policy buffered it)
    assert.equal(server?.attributes['answer.method'], 'GET');
    assert.equal(server?.attributes['http.version'], undefined);
    assert.equal(server?.resource['service.name'], 'edge-gateway');
    assert.equal(server?.resource['service.version'], '1.2.3');

    await httpGet(p.port(), '/other');
    assert.equal(up.seen.at(-1)?.headers.traceparent, undefined, 'not sampled: no traceparent added');
  });

  test('clientSampling false: a sampled client trace is not continued, and passes unchanged', async () => {
    const sent = `00-${'d'.repeat(32)}-${CLIENT_SPAN}-01`;
    await httpGet(p.port(), '/sampled/client', { headers: { traceparent: sent } });
    assert.equal(up.seen.at(-1)?.headers.traceparent, sent);
  });

  test('the filter drops the spans of requests it does not keep', async () => {
    await httpGet(p.port(), '/status/404');
    const dropped = parseTraceparent(up.seen.at(-1)?.headers.traceparent).traceId;
    await httpGet(p.port(), '/status/201');
    const kept = parseTraceparent(up.seen.at(-1)?.headers.traceparent).traceId;
    await trace(kept, 2);
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(otlp.spans.filter((s) => s.traceId === dropped).length, 0);
  });
});

describe('LLM requests', () => {
  let openai: FakeOpenAI;
  let p: TestProxy;
  before(async () => {
    openai = await startFakeOpenAI();
    p = await startProxy(`config:
  tracing:
    otlpEndpoint: ${otlp.grpcUrl}
    randomSampling: true
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - name: llm
      backends:
      - ai:
          name: openai
          provider: {openAI: {}}
          hostOverride: "127.0.0.1:${openai.port}"
`);
  });
  after(async () => {
    await p.close();
    await openai.close();
  });

  test('the span has the model and the tokens; the provider gets the traceparent', async () => {
    const res = await fetch(p.url('/v1/chat/completions'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(res.status, 200);
    await res.text();
    const tp = parseTraceparent(openai.seen.at(-1)?.headers.traceparent);
    const spans = await trace(tp.traceId, 2);
    const server = spans.find((s) => s.kind === SERVER);
    assert.equal(server?.attributes['llm.requestModel'], 'gpt-4o-mini');
    assert.equal(server?.attributes['llm.inputTokens'], FAKE_USAGE.chat.prompt_tokens);
    assert.equal(server?.attributes['llm.outputTokens'], FAKE_USAGE.chat.completion_tokens);
    assert.equal(spans.find((s) => s.kind === CLIENT)?.spanId, tp.spanId);
  });
});

describe('tracing config', () => {
  const BINDS = 'binds: [{port: 0, listeners: [{routes: [{backends: [{host: "127.0.0.1:9"}]}]}]}]';
  const load = (text: string, env: Record<string, string> = {}) =>
    loadConfigText('t.yaml', text.replace('binds: []', BINDS), '.', (n) => env[n]);
  const errors = (text: string, env: Record<string, string> = {}) => {
    try {
      load(text, env);
    } catch (err) {
      if (err instanceof ConfigError) return err.message;
      throw err;
    }
    assert.fail('expected a config error');
  };

  test('config.tracing and frontendPolicies.tracing together are refused', () => {
    assert.match(
      errors(`config: {tracing: {otlpEndpoint: "http://127.0.0.1:4317"}}
frontendPolicies: {tracing: {host: "127.0.0.1:4317"}}
binds: []`),
      /config\.tracing is the older form of frontendPolicies\.tracing: set one of them/,
    );
  });

  test('config.tracing needs an endpoint, from the file or the environment', () => {
    assert.match(
      errors('config: {tracing: {randomSampling: true}}\nbinds: []'),
      /config\.tracing needs otlpEndpoint/,
    );
    const { ir } = load('config: {tracing: {randomSampling: true, otlpProtocol: http}}\nbinds: []', {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
    });
    assert.equal(ir.frontend.tracing?.endpoint, 'http://collector:4318/v1/traces');
    assert.equal(ir.frontend.tracing?.randomSampling, true);
    assert.equal(ir.frontend.tracing?.clientSampling, true);
  });

  test('bad CEL and bad endpoints are named by field', () => {
    const msg = errors(`frontendPolicies:
  tracing:
    host: "127.0.0.1:4317"
    randomSampling: 'request.path.('
    attributes: {a: 'nope('}
binds: []`);
    assert.match(msg, /frontendPolicies\.tracing\.randomSampling.*invalid CEL/);
    assert.match(msg, /frontendPolicies\.tracing\.attributes\.a.*invalid CEL/);
    assert.match(
      errors('config: {tracing: {otlpEndpoint: "ftp://x"}}\nbinds: []'),
      /config\.tracing\.otlpEndpoint.*http:\/\/ or https:\/\//,
    );
    assert.match(
      errors('frontendPolicies: {tracing: {randomSampling: true}}\nbinds: []'),
      /tracing\.host.*required/,
    );
    // a collector by backend reference loads (otlp-collector.test.ts); one that is not there is named
    assert.match(
      errors('frontendPolicies: {tracing: {backend: otel}}\nbinds: []'),
      /frontendPolicies\.tracing\.backend: no backend named "otel"/,
    );
  });

  test('sampling written as text is a constant when it is one', () => {
    const { ir } = load(`frontendPolicies:
  tracing: {host: "127.0.0.1:4318", protocol: http, randomSampling: "0.25", clientSampling: "false"}
binds: []`);
    assert.equal(ir.frontend.tracing?.endpoint, 'http://127.0.0.1:4318/v1/traces');
    assert.equal(ir.frontend.tracing?.randomSampling, 0.25);
    assert.equal(ir.frontend.tracing?.clientSampling, false);
  });
});
