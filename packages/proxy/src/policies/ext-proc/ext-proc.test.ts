// extProc against a real Envoy ext_proc v3 server (grpc-js with the generated Envoy messages): header
// mutations, Buffered body replacement, immediate responses, the failure modes, and the trace.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ConfigError } from '@gw/api';
import { CLOSED_PORT, startUpstream, type TestServer } from '@gw/testkit';
import {
  type ExtProcServer,
  type ProcessingAnswer,
  setHeaderAnswer,
  startExtProcServer,
} from '@gw/testkit/ext-proc-server';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import type {
  HttpHeaders,
  ProcessingRequest,
} from '@gw/xds-proto/envoy/service/ext_proc/v3/external_processor';
import { request } from 'undici';
import { loadConfigText } from '../../config/load.ts';

const header = (h: HttpHeaders | undefined, key: string) => {
  const v = h?.headers?.headers.find((x) => x.key === key);
  return v ? Buffer.from(v.rawValue).toString('latin1') || v.value : undefined;
};

/** The processor: what it does depends on the request's path (first message of the stream). */
function answer(req: ProcessingRequest, earlier: readonly ProcessingRequest[]): ProcessingAnswer | undefined {
  const first = earlier[0] ?? req;
  const path = first.request.case === 'requestHeaders' ? (header(first.request.value, ':path') ?? '') : '';
  const r = req.request;
  // No answer to the response headers: the message timeout fails the request on the way back.
  if (path.startsWith('/mute-response') && r.case === 'responseHeaders') return undefined;
  if (path.startsWith('/deny') && r.case === 'requestHeaders')
    return {
      response: {
        case: 'immediateResponse',
        value: {
          status: { code: 403 },
          headers: { setHeaders: [{ header: { key: 'x-denied-by', rawValue: Buffer.from('ext-proc') } }] },
          body: Buffer.from('blocked by processor\n'),
        },
      },
    };
  switch (r.case) {
    case 'requestHeaders':
      return {
        response: {
          case: 'requestHeaders',
          value: {
            response: {
              headerMutation: {
                setHeaders: [{ header: { key: 'x-added', rawValue: Buffer.from('yes') } }],
                removeHeaders: ['x-secret'],
              },
            },
          },
        },
      };
    case 'requestBody':
      return {
        response: {
          case: 'requestBody',
          value: {
            response: {
              bodyMutation: {
                mutation: {
                  case: 'body',
                  value: Buffer.from(Buffer.from(r.value.body).toString().toUpperCase()),
                },
              },
            },
          },
        },
      };
    case 'responseHeaders':
      return setHeaderAnswer('responseHeaders', 'x-processed', header(r.value, ':status') ?? '');
    case 'responseBody':
      return {
        response: {
          case: 'responseBody',
          value: {
            response: { bodyMutation: { mutation: { case: 'body', value: Buffer.from('replaced') } } },
          },
        },
      };
    default:
      return undefined;
  }
}

let proc: ExtProcServer;
let up: TestServer;
let proxy: TestProxy;
before(async () => {
  proc = await startExtProcServer(answer);
  up = await startUpstream();
  const dead = `127.0.0.1:${CLOSED_PORT}`;
  const route = (name: string, extProc: string) => `
    - name: ${name}
      matches: [{path: {pathPrefix: /${name}}}]
      policies:
        extProc: ${extProc}
      backends: [{host: "127.0.0.1:${up.port}"}]`;
  const modes = (req: string, res: string) => `{requestBodyMode: ${req}, responseBodyMode: ${res}}`;
  proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:${route('headers', `{host: "${proc.host}", timeout: 5s, processingOptions: ${modes('none', 'none')}}`)}${route(
    'body',
    `{host: "${proc.host}", timeout: 5s, processingOptions: ${modes('buffered', 'buffered')}}`,
  )}${route('deny', `{host: "${proc.host}", timeout: 5s, processingOptions: ${modes('none', 'none')}}`)}${route(
    'down-closed',
    `{host: "${dead}", processingOptions: ${modes('none', 'none')}}`,
  )}${route('mute-response', `{host: "${proc.host}", timeout: 200ms, processingOptions: ${modes('none', 'none')}}`)}${route('down-open', `{host: "${dead}", failureMode: failOpen, processingOptions: ${modes('none', 'none')}}`)}${route(
    'by-backend',
    `{backend: processor, timeout: 5s, processingOptions: ${modes('none', 'none')}}`,
  )}${route(
    'extras',
    [
      `{host: "${proc.host}", timeout: 5s, processingOptions: ${modes('buffered', 'none')}`,
      `requestAttributes: {request.path: request.path, user: 'request.headers["x-user"]', absent: 'request.headers["x-none"]', source.address: '"spoofed"', request.protocol: '"HTTP/0.9"', destination.port: '1'}`,
      'responseAttributes: {status: response.code, path: request.path}',
      `metadataContext: {acme.tenant: {tenant: 'request.headers["x-tenant"]', status: response.code}, agentgateway.dev.grpc_initial_metadata: {x-tenant: 'request.headers["x-tenant"]', x-try: '1 + 1', x-list: '[1]'}}}`,
    ].join(', '),
  )}
backends:
- {name: processor, host: "${proc.host}"}
`);
});
after(async () => {
  await proxy.close();
  await up.close();
  await proc.close();
});

async function call(path: string, headers: Record<string, string> = {}, body?: string) {
  const r = await request(proxy.url(path), {
    method: body === undefined ? 'GET' : 'POST',
    headers,
    body: body ?? null,
  });
  return { status: r.statusCode, headers: r.headers, text: await r.body.text() };
}

describe('extProc against a real ext_proc v3 server', () => {
  test('request and response header mutations; the processor sees the pseudo-headers', async () => {
    const r = await call('/headers/a?x=1', { 'x-secret': 's', 'x-keep': 'k' });
    assert.equal(r.status, 200);
    const echo = JSON.parse(r.text) as { headers: Record<string, string> };
    assert.equal(echo.headers['x-added'], 'yes');
    assert.equal(echo.headers['x-secret'], undefined);
    assert.equal(echo.headers['x-keep'], 'k');
    assert.equal(r.headers['x-processed'], '200');
    const s = proc.streams.at(-1) as ProcessingRequest[];
    assert.deepEqual(
      s.map((m) => m.request.case),
      ['requestHeaders', 'responseHeaders'],
    );
    const h = s[0]?.request.value as HttpHeaders;
    assert.equal(header(h, ':method'), 'GET');
    assert.equal(header(h, ':path'), '/headers/a?x=1');
    assert.equal(header(h, 'x-keep'), 'k');
    assert.equal(h.endOfStream, true);
  });

  test('attributes on the first message of each side, the metadata context on every message, gRPC metadata on the stream', async () => {
    const r = await call('/extras/a', { 'x-user': 'alice', 'x-tenant': 'acme' }, 'body');
    assert.equal(r.status, 200);
    const s = proc.streams.at(-1) as ProcessingRequest[];
    assert.deepEqual(
      s.map((m) => m.request.case),
      ['requestHeaders', 'requestBody', 'responseHeaders'],
    );
    const NS = 'envoy.filters.http.ext_proc';
    const [reqHeaders, reqBody, resHeaders] = s as [ProcessingRequest, ProcessingRequest, ProcessingRequest];
    const first = reqHeaders.attributes[NS] as Record<string, unknown>;
    assert.equal(first['request.path'], '/extras/a');
    assert.equal(first.user, 'alice');
    assert.equal('absent' in first, false, 'a failed evaluation is left out');
    // The connection's own attributes win over what an expression says.
    assert.match(String(first['source.address']), /^127\.0\.0\.1:\d+$/);
    assert.equal(first['request.protocol'], 'HTTP/1.1');
    assert.equal(first['destination.port'], Number(new URL(proxy.url('/')).port));
    assert.deepEqual(reqBody.attributes, {}, 'only the first message of a side');
    assert.deepEqual(resHeaders.attributes, { [NS]: { status: 200, path: '/extras/a' } });
    // The metadata context goes with every message; the response side's sees the response.
    for (const m of [reqHeaders, reqBody])
      assert.deepEqual(m.metadataContext?.filterMetadata, { 'acme.tenant': { tenant: 'acme' } });
    assert.deepEqual(resHeaders.metadataContext?.filterMetadata, {
      'acme.tenant': { tenant: 'acme', status: 200 },
    });
    // The reserved namespace is gRPC metadata, scalars only; it is not in the metadata context.
    const md = proc.metadata.at(-1) as Record<string, string>;
    assert.equal(md['x-tenant'], 'acme');
    assert.equal(md['x-try'], '2');
    assert.equal(md['x-list'], undefined);
  });

  test('without attributes or a metadata context, the messages carry none', async () => {
    await call('/headers/plain');
    const s = proc.streams.at(-1) as ProcessingRequest[];
    for (const m of s) {
      assert.deepEqual(m.attributes, {});
      assert.equal(m.metadataContext, undefined);
    }
    assert.equal(proc.metadata.at(-1)?.['x-tenant'], undefined);
  });

  test('a service by named backend (agentgateway’s backend: <name>) is called at its address', async () => {
    const n = proc.streams.length;
    const r = await call('/by-backend/a', { 'x-secret': 's' });
    assert.equal(r.status, 200);
    assert.equal(r.headers['x-processed'], '200');
    assert.equal(proc.streams.length, n + 1);
  });

  test('Buffered bodies: the processor replaces the request body and the response body', async () => {
    const r = await call('/body', { 'content-type': 'text/plain' }, 'hello processor');
    assert.equal(r.status, 200);
    assert.equal(r.text, 'replaced');
    assert.equal(r.headers['content-length'], '8');
    // The upstream got the upper-cased body (its echo was then replaced on the way back).
    assert.equal(up.seen.at(-1)?.body, 'HELLO PROCESSOR');
    const s = proc.streams.at(-1) as ProcessingRequest[];
    assert.deepEqual(
      s.map((m) => m.request.case),
      ['requestHeaders', 'requestBody', 'responseHeaders', 'responseBody'],
    );
    const body = s[1]?.request.value as { body: Uint8Array; endOfStream: boolean };
    assert.equal(Buffer.from(body.body).toString(), 'hello processor');
    assert.equal(body.endOfStream, true);
  });

  test('an immediate response ends the request: status, headers and body from the processor', async () => {
    const before = up.seen.length;
    const r = await call('/deny', {}, 'not sent');
    assert.equal(r.status, 403);
    assert.equal(r.headers['x-denied-by'], 'ext-proc');
    assert.equal(r.text, 'blocked by processor\n');
    assert.equal(up.seen.length, before);
  });

  test('processor unavailable: failClosed answers 500, failOpen passes unprocessed', async () => {
    const closed = await call('/down-closed');
    assert.equal(closed.status, 500);
    assert.doesNotMatch(
      closed.text,
      /ECONNREFUSED|127\.0\.0\.1/,
      'the client is not told where the service is',
    );
    // the access log says why: the phase and the service's error
    const line = proxy.accessLog.findLast((l) => String(l['http.path']).startsWith('/down-closed'));
    assert.match(String(line?.error), /^external processing failed: requestHeaders: .*ECONNREFUSED/);
    const open = await call('/down-open', { 'x-secret': 's' });
    assert.equal(open.status, 200);
    const echo = JSON.parse(open.text) as { headers: Record<string, string> };
    assert.equal(echo.headers['x-secret'], 's');
    assert.equal(echo.headers['x-added'], undefined);
  });

  test('no answer to the response headers under failClosed: 500 instead of the upstream answer', async () => {
    const r = await call('/mute-response');
    assert.equal(r.status, 500);
    assert.doesNotMatch(r.text, /"path"/);
  });

  test('the trace shows each phase', async () => {
    const t = proxy.trace();
    await call('/body', {}, 'abc');
    const events = (await t).map((e) => e.message).filter((m) => m.type === 'extProc');
    assert.deepEqual(
      events.map((m) => [m.phase, m.result]),
      [
        ['requestHeaders', 'continue'],
        ['requestBody', 'continue'],
        ['responseHeaders', 'continue'],
        ['responseBody', 'continue'],
      ],
    );
    assert.equal(events[1]?.bodyMutation, 'body');
  });
});

describe('extProc config', () => {
  const load = (extProc: string) =>
    loadConfigText(
      't.yaml',
      `binds: [{port: 8080, listeners: [{routes: [{policies: {extProc: ${extProc}}, backends: [{host: "127.0.0.1:1"}]}]}]}]`,
      process.cwd(),
    );
  test('fullDuplexStreamed (also as the default) and allowModeOverride load; a missing host is named', () => {
    for (const ok of [
      '{host: "127.0.0.1:9"}',
      '{host: "127.0.0.1:9", processingOptions: {requestBodyMode: fullDuplexStreamed, responseBodyMode: none}}',
      '{host: "127.0.0.1:9", processingOptions: {requestBodyMode: none, responseBodyMode: none, allowModeOverride: true}}',
    ])
      assert.doesNotThrow(() => load(ok), ok);
    assert.throws(
      () => load('{processingOptions: {requestBodyMode: none}}'),
      (e: unknown) => e instanceof ConfigError && /extProc\.host: set host/.test(e.message),
    );
    assert.throws(
      () => load('{host: "127.0.0.1:9", processingOptions: {requestBodyMode: streamed}}'),
      (e: unknown) =>
        e instanceof ConfigError &&
        /processingOptions\.requestBodyMode: .*fullDuplexStreamed/.test(e.message),
    );
  });

  test('by backend: an unknown one, one with policies it does not take, host beside it', () => {
    const withBackends = (extProc: string, backends: string) => {
      try {
        loadConfigText(
          't.yaml',
          `binds: [{port: 8080, listeners: [{routes: [{policies: {extProc: ${extProc}}, backends: [{host: "127.0.0.1:1"}]}]}]}]\nbackends:\n${backends}`,
          process.cwd(),
        );
        return [];
      } catch (err) {
        assert.ok(err instanceof ConfigError);
        return err.issues.map((i) => `${i.path}: ${i.message}`);
      }
    };
    const A = 'binds[0].listeners[0].routes[0].policies.extProc';
    assert.deepEqual(withBackends('{backend: nope}', '- {name: p, host: "127.0.0.1:2"}'), [
      `${A}.backend: no backend named "nope" (backends: p)`,
    ]);
    assert.deepEqual(
      withBackends('{backend: p}', '- {name: p, host: "127.0.0.1:2", policies: {backendTLS: {}, http: {}}}'),
      [`${A}.backend: backend "p" sets http, which the extProc call does not take (it takes backendTLS)`],
    );
    assert.match(
      withBackends('{backend: p, host: "127.0.0.1:3"}', '- {name: p, host: "127.0.0.1:2"}').join('\n'),
      /extProc\.backend: set one of host, backend and service, not host and backend/,
    );
    assert.deepEqual(withBackends('{backend: p}', '- {name: p, host: "127.0.0.1:2"}'), []);
  });

  test('attributes and metadata context: bad CEL and a key gRPC metadata cannot carry are named by field', () => {
    let issues: string[] = [];
    try {
      load(
        `{host: "127.0.0.1:9", requestAttributes: {a: "request.path =="}, responseAttributes: {b: "1 +"}, metadataContext: {ns: {k: "("}, agentgateway.dev.grpc_initial_metadata: {Bad Key: '"v"', grpc-timeout: '"1"'}}}`,
      );
    } catch (err) {
      assert.ok(err instanceof ConfigError);
      issues = err.issues.map((i) => `${i.path}: ${i.message}`);
    }
    const A = 'binds[0].listeners[0].routes[0].policies.extProc';
    for (const at of [
      `${A}.requestAttributes.a: invalid CEL`,
      `${A}.responseAttributes.b: invalid CEL`,
      `${A}.metadataContext.ns.k: invalid CEL`,
      `${A}.metadataContext["agentgateway.dev.grpc_initial_metadata"]["Bad Key"]: a gRPC metadata key`,
      `${A}.metadataContext["agentgateway.dev.grpc_initial_metadata"].grpc-timeout: a gRPC metadata key`,
    ])
      assert.ok(
        issues.some((i) => i.startsWith(at)),
        `${at} in:\n${issues.join('\n')}`,
      );
  });
});
