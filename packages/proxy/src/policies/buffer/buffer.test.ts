import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { after, before, test } from 'node:test';
import { startUpstream, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { request } from 'undici';

let up: TestServer;
let proxy: TestProxy;
before(async () => {
  up = await startUpstream('big', (req, res, echo) => {
    const size = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('size') ?? 0);
    if (size > 0) {
      // No content-length: the proxy finds out the size only by reading.
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.end(Buffer.alloc(size, 97));
      return;
    }
    res.end(`got ${echo.body.length} bytes`);
  });
  proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - name: closed
      matches: [{path: {pathPrefix: /closed}}]
      policies: {buffer: {request: {maxBytes: 1Ki}, response: {maxBytes: 2Ki}}}
      backends: [{host: "127.0.0.1:${up.port}"}]
    - name: open
      matches: [{path: {pathPrefix: /open}}]
      policies: {buffer: {request: {maxBytes: 1Ki, failureMode: failOpen}, response: {maxBytes: 2Ki, failureMode: failOpen}}}
      backends: [{host: "127.0.0.1:${up.port}"}]
    - name: default
      matches: [{path: {pathPrefix: /default}}]
      policies: {buffer: {request: {}}}
      backends: [{host: "127.0.0.1:${up.port}"}]
`);
});
after(async () => {
  await proxy.close();
  await up.close();
});

async function send(path: string, body?: Buffer | Readable) {
  const r = await request(proxy.url(path), { method: body ? 'POST' : 'GET', body: body ?? null });
  return { status: r.statusCode, text: await r.body.text(), headers: r.headers };
}

function chunked(total: number): Readable {
  return Readable.from(
    (function* () {
      for (let sent = 0; sent < total; sent += 256) yield Buffer.alloc(Math.min(256, total - sent), 98);
    })(),
  );
}

test('a request body within the limit is buffered and forwarded with its length', async () => {
  const r = await send('/closed/in', Buffer.alloc(1000, 97));
  assert.equal(r.status, 200);
  assert.equal(r.text, 'got 1000 bytes');
});

test('over the limit: 413 under failClosed, for declared and for chunked lengths', async () => {
  const before = up.seen.length;
  const declared = await send('/closed/in', Buffer.alloc(5000, 97));
  assert.equal(declared.status, 413);
  assert.match(declared.text, /larger than the buffer limit \(1024 bytes\)/);
  const streamed = await send('/closed/in', chunked(5000));
  assert.equal(streamed.status, 413);
  assert.equal(up.seen.length, before, 'nothing was forwarded');
});

test('over the limit under failOpen: the whole body is streamed on', async () => {
  const r = await send('/open/in', chunked(5000));
  assert.equal(r.status, 200);
  assert.equal(r.text, 'got 5000 bytes');
});

test('response over the limit: 502 under failClosed, passed through under failOpen', async () => {
  const small = await send('/closed/out?size=2000');
  assert.equal(small.status, 200);
  assert.equal(small.text.length, 2000);
  assert.equal(small.headers['content-length'], '2000');
  const big = await send('/closed/out?size=10000');
  assert.equal(big.status, 502);
  assert.match(big.text, /response body is larger than the buffer limit/);
  const open = await send('/open/out?size=10000');
  assert.equal(open.status, 200);
  assert.equal(open.text.length, 10000);
});

test('the default limit is 2Mi', async () => {
  assert.equal((await send('/default', Buffer.alloc(2 * 1024 * 1024, 97))).status, 200);
  assert.equal((await send('/default', Buffer.alloc(2 * 1024 * 1024 + 1, 97))).status, 413);
});
