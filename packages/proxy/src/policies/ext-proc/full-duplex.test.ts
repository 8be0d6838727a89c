// extProc FULL_DUPLEX_STREAMED against a real Envoy ext_proc v3 server (grpc-js with the generated
// Envoy messages): request and response bodies go to the processor chunk by chunk while the client and
// the upstream are still sending, the processor's streamed_response chunks are what arrives on the
// other side, headers are not timed, an immediate response cuts a streaming body short, and
// allowModeOverride lets a headers answer turn on a body phase.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { create } from '@bufbuild/protobuf';
import { startUpstream, type TestServer } from '@gw/testkit';
import { type ExtProcServer, type ProcessingAnswer, startExtProcServer } from '@gw/testkit/ext-proc-server';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import {
  ProcessingMode_BodySendMode,
  ProcessingModeSchema,
} from '@gw/xds-proto/envoy/extensions/filters/http/ext_proc/v3/processing_mode';
import type {
  HttpBody,
  HttpHeaders,
  ProcessingRequest,
} from '@gw/xds-proto/envoy/service/ext_proc/v3/external_processor';
import { request } from 'undici';

const header = (h: HttpHeaders | undefined, key: string) => {
  const v = h?.headers?.headers.find((x) => x.key === key);
  return v ? Buffer.from(v.rawValue).toString('latin1') || v.value : undefined;
};

const deferred = <T = void>() => {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
};

/** A streamed body chunk as the processor answers it. */
const chunk = (
  phase: 'requestBody' | 'responseBody',
  body: string,
  endOfStream: boolean,
): ProcessingAnswer => ({
  response: {
    case: phase,
    value: {
      response: {
        bodyMutation: {
          mutation: { case: 'streamedResponse', value: { body: Buffer.from(body), endOfStream } },
        },
      },
    },
  },
});

const headersAnswer = (phase: 'requestHeaders' | 'responseHeaders', key: string, value: string) =>
  ({
    response: {
      case: phase,
      value: {
        response: { headerMutation: { setHeaders: [{ header: { key, rawValue: Buffer.from(value) } }] } },
      },
    },
  }) satisfies ProcessingAnswer;

// Hooks the tests set: the first request body chunk reaching the processor, and the first response
// body chunk reaching it.
let firstRequestChunk = deferred<string>();
let firstResponseChunk = deferred<string>();

/** The processor: by the request's path (first message of the stream). */
async function answer(
  req: ProcessingRequest,
  earlier: readonly ProcessingRequest[],
): Promise<ProcessingAnswer | ProcessingAnswer[] | undefined> {
  const first = earlier[0] ?? req;
  const path = first.request.case === 'requestHeaders' ? (header(first.request.value, ':path') ?? '') : '';
  const r = req.request;
  if (path.startsWith('/override')) {
    if (r.case === 'requestHeaders')
      return {
        ...headersAnswer('requestHeaders', 'x-seen', 'yes'),
        modeOverride: create(ProcessingModeSchema, {
          responseBodyMode: ProcessingMode_BodySendMode.BUFFERED,
        }),
      };
    if (r.case === 'responseHeaders') return headersAnswer('responseHeaders', 'x-seen', 'yes');
    if (r.case === 'responseBody')
      return {
        response: {
          case: 'responseBody',
          value: {
            response: { bodyMutation: { mutation: { case: 'body', value: Buffer.from('overridden') } } },
          },
        },
      };
    return undefined;
  }
  switch (r.case) {
    case 'requestHeaders':
      // /hold: the processor keeps the headers' answer until it has the whole body (Envoy's option 2),
      // longer than the message timeout, which full duplex does not apply.
      if (path.startsWith('/hold')) return undefined;
      return headersAnswer('requestHeaders', 'x-duplex', 'yes');
    case 'requestBody': {
      const b = r.value as HttpBody;
      const text = Buffer.from(b.body).toString();
      if (text) firstRequestChunk.resolve(text);
      // /hold/refuse: the headers' answer held, then an immediate response once the body is in (an
      // endpoint picker shedding load)
      if (path.startsWith('/hold/refuse'))
        return b.endOfStream
          ? {
              response: {
                case: 'immediateResponse',
                value: { status: { code: 429 }, body: Buffer.from('shed\n') },
              },
            }
          : undefined;
      if (path.startsWith('/deny') && text)
        return {
          response: {
            case: 'immediateResponse',
            value: { status: { code: 403 }, body: Buffer.from(`refused at "${text}"\n`) },
          },
        };
      const out = chunk('requestBody', text.toUpperCase(), b.endOfStream);
      if (path.startsWith('/hold')) {
        if (!b.endOfStream) return undefined;
        await new Promise((r) => setTimeout(r, 400));
        // Everything at once, in order: the headers' answer, then the body (held chunks joined).
        const all = earlier
          .slice(1)
          .map((m) => Buffer.from((m.request.value as HttpBody).body).toString())
          .join('');
        return [headersAnswer('requestHeaders', 'x-held', 'yes'), chunk('requestBody', `${all}!`, true)];
      }
      return out;
    }
    case 'responseHeaders':
      return headersAnswer('responseHeaders', 'x-processed', header(r.value, ':status') ?? '');
    case 'responseBody': {
      const b = r.value as HttpBody;
      const text = Buffer.from(b.body).toString();
      if (text) firstResponseChunk.resolve(text);
      return chunk('responseBody', text ? `<${text}>` : '', b.endOfStream);
    }
    default:
      return undefined;
  }
}

let proc: ExtProcServer;
let echo: TestServer;
let slow: Server;
/** The slow upstream sends its second chunk when this resolves. */
let sendSecond = deferred();
let proxy: TestProxy;

before(async () => {
  proc = await startExtProcServer(answer);
  echo = await startUpstream();
  // An upstream that answers in two chunks, the second only once the test says so.
  slow = createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '12' });
    res.write('first,');
    void sendSecond.promise.then(() => res.end('second'));
  });
  await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
  const slowPort = (slow.address() as AddressInfo).port;
  const route = (name: string, extProc: string, port = echo.port) => `
    - name: ${name}
      matches: [{path: {pathPrefix: /${name}}}]
      policies:
        extProc: ${extProc}
      backends: [{host: "127.0.0.1:${port}"}]`;
  proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:${route('duplex', `{host: "${proc.host}", processingOptions: {responseBodyMode: none}}`)}${route(
    'response',
    `{host: "${proc.host}", processingOptions: {requestBodyMode: none, responseBodyMode: fullDuplexStreamed}}`,
    slowPort,
  )}${route('hold', `{host: "${proc.host}", timeout: 100ms, processingOptions: {responseBodyMode: none}}`)}${route(
    'deny',
    `{host: "${proc.host}", processingOptions: {responseBodyMode: none}}`,
  )}${route(
    'override',
    `{host: "${proc.host}", processingOptions: {requestBodyMode: none, responseBodyMode: none, allowModeOverride: true}}`,
  )}${route(
    'override-off',
    `{host: "${proc.host}", processingOptions: {requestBodyMode: none, responseBodyMode: none}}`,
  )}
`);
});
after(async () => {
  await proxy.close();
  await echo.close();
  await new Promise((r) => slow.close(r));
  await proc.close();
});

describe('extProc fullDuplexStreamed against a real ext_proc v3 server', () => {
  test('an immediate response while the headers answer is held is the answer, and the gateway serves on', async () => {
    const before = echo.seen.length;
    const res = await request(proxy.url('/hold/refuse'), { method: 'POST', body: 'a body to decide on' });
    assert.equal(res.statusCode, 429);
    assert.equal(await res.body.text(), 'shed\n');
    assert.equal(echo.seen.length, before, 'nothing went upstream');
    // the streamed-back body that never got a reader failed without taking the process down
    const ok = await request(proxy.url('/duplex/after'), { method: 'POST', body: 'x' });
    assert.equal(ok.statusCode, 200);
    await ok.body.dump();
  });

  test('the request body streams to the processor and its chunks go upstream, not buffered', async () => {
    firstRequestChunk = deferred<string>();
    const body = new PassThrough();
    const t = proxy.trace();
    const pending = request(proxy.url('/duplex/up'), {
      method: 'POST',
      headers: { 'content-type': 'text/plain', 'content-length': '11' },
      body,
    });
    body.write('hello ');
    // The processor has the first chunk while the client has not sent the rest.
    assert.equal(await firstRequestChunk.promise, 'hello ');
    body.end('world');
    const r = await pending;
    assert.equal(r.statusCode, 200);
    const seen = JSON.parse(await r.body.text()) as { body: string; headers: Record<string, string> };
    // The upstream got the processor's chunks (upper-cased), with the request header mutation, and
    // no content-length (the processed length is known only at the end).
    assert.equal(seen.body, 'HELLO WORLD');
    assert.equal(seen.headers['x-duplex'], 'yes');
    assert.equal(seen.headers['content-length'], undefined);
    assert.equal(seen.headers['transfer-encoding'], 'chunked');
    const s = proc.streams.at(-1) as ProcessingRequest[];
    const bodies = s.filter((m) => m.request.case === 'requestBody').map((m) => m.request.value as HttpBody);
    assert.deepEqual(
      bodies.map((b) => Buffer.from(b.body).toString()),
      ['hello ', 'world', ''],
    );
    assert.deepEqual(
      bodies.map((b) => b.endOfStream),
      [false, false, true],
    );
    assert.equal((s[0]?.request.value as HttpHeaders | undefined)?.endOfStream, false);
    const events = (await t).map((e) => e.message).filter((m) => m.type === 'extProc');
    const streamed = events.find((m) => m.phase === 'requestBody');
    assert.equal(streamed?.result, 'streamed');
    assert.equal(streamed?.chunksSent, 2);
    assert.equal(streamed?.chunksReceived, 3);
  });

  test('the response body streams through the processor while the upstream is still sending', async () => {
    firstResponseChunk = deferred<string>();
    sendSecond = deferred();
    const r = await request(proxy.url('/response'));
    assert.equal(r.statusCode, 200);
    assert.equal(r.headers['x-processed'], '200');
    assert.equal(r.headers['content-length'], undefined);
    const it = r.body[Symbol.asyncIterator]();
    // The client reads the processed first chunk before the upstream sent its second.
    const first = await it.next();
    assert.equal(Buffer.from(first.value as Buffer).toString(), '<first,>');
    assert.equal(await firstResponseChunk.promise, 'first,');
    sendSecond.resolve();
    let rest = '';
    for (let x = await it.next(); !x.done; x = await it.next())
      rest += Buffer.from(x.value as Buffer).toString();
    assert.equal(rest, '<second>');
  });

  test('headers are not timed: the processor may answer them after the whole body', async () => {
    const r = await request(proxy.url('/hold'), { method: 'POST', body: 'abc' });
    assert.equal(r.statusCode, 200);
    const seen = JSON.parse(await r.body.text()) as { body: string; headers: Record<string, string> };
    assert.equal(seen.body, 'abc!');
    assert.equal(seen.headers['x-held'], 'yes');
  });

  test('an immediate response while the body streams is the answer; the upstream gets nothing', async () => {
    const before = echo.seen.length;
    const r = await request(proxy.url('/deny'), { method: 'POST', body: 'secret' });
    assert.equal(r.statusCode, 403);
    assert.equal(await r.body.text(), 'refused at "secret"\n');
    assert.equal(echo.seen.length, before);
  });

  test('allowModeOverride: a request headers answer turns on the response body phase', async () => {
    const on = await request(proxy.url('/override'));
    assert.equal(on.statusCode, 200);
    assert.equal(await on.body.text(), 'overridden');
    const s = proc.streams.at(-1) as ProcessingRequest[];
    assert.deepEqual(
      s.map((m) => m.request.case),
      ['requestHeaders', 'responseHeaders', 'responseBody'],
    );
    // Without allowModeOverride the processor's mode_override is ignored.
    const off = await request(proxy.url('/override-off'));
    assert.equal(off.statusCode, 200);
    assert.match(await off.body.text(), /"url":"\/override-off"/);
    assert.deepEqual(
      (proc.streams.at(-1) as ProcessingRequest[]).map((m) => m.request.case),
      ['requestHeaders', 'responseHeaders'],
    );
  });
});
