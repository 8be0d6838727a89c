// The head of an event-stream answer (SSE: an LLM stream, an MCP stream). It must not wait for the
// first event, which may be long in coming; but when the first event came with the head, as it
// usually does (one read of the upstream holds both), the two go to the client in one write: a
// separate write for the head cost a system call and a wake-up of the client before the first event.
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { watchAccepted } from './accepted-test-support.ts';

let upstream: http.Server;
let proxy: TestProxy;
/** How long the upstream waits between the head and the first event, by path. */
const firstEventAfterMs: Record<string, number> = { '/together': 0, '/later': 600 };
const accepted = watchAccepted(() => proxy?.port() ?? 0);

before(async () => {
  upstream = http.createServer((req, res) => {
    const wait = firstEventAfterMs[req.url ?? ''] ?? 0;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const events = () => {
      res.write('data: one\n\n');
      setTimeout(() => res.end('data: two\n\n'), 100);
    };
    if (wait === 0)
      events(); // node writes the head with the first event: one segment
    else {
      res.flushHeaders();
      setTimeout(events, wait);
    }
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const port = (upstream.address() as net.AddressInfo).port;
  proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes: [{backends: [{host: "127.0.0.1:${port}"}]}]
`);
});
after(async () => {
  accepted.close();
  await proxy?.close();
  upstream.closeAllConnections();
  await new Promise((r) => upstream.close(r));
});

/** Each write gw hands to the client's socket (one system call each), as text. */
function recordWrites(socket: net.Socket): string[] {
  const writes: string[] = [];
  const s = socket as unknown as {
    _write: (chunk: Buffer, enc: BufferEncoding, cb: () => void) => void;
    _writev: ((chunks: { chunk: Buffer | string }[], cb: () => void) => void) | null;
  };
  const write = s._write.bind(socket);
  const writev = s._writev?.bind(socket);
  s._write = (chunk, enc, cb) => {
    writes.push(Buffer.isBuffer(chunk) ? chunk.toString('latin1') : String(chunk));
    write(chunk, enc, cb);
  };
  if (writev) {
    s._writev = (chunks, cb) => {
      writes.push(
        chunks.map((c) => (Buffer.isBuffer(c.chunk) ? c.chunk.toString('latin1') : c.chunk)).join(''),
      );
      writev(chunks, cb);
    };
  }
  return writes;
}

async function exchange(
  path: string,
): Promise<{ writes: string[]; headAtMs: number; firstEventAtMs: number }> {
  const client = net.connect(proxy.port(), '127.0.0.1');
  await new Promise<void>((r, j) => client.once('connect', r).once('error', j));
  const writes = recordWrites(await accepted.serverSide(client));
  const start = performance.now();
  let got = '';
  let headAtMs = Number.NaN;
  let firstEventAtMs = Number.NaN;
  client.setEncoding('latin1');
  const done = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no whole answer; got ${JSON.stringify(got)}`)), 5000);
    client.on('data', (d: string) => {
      got += d;
      if (Number.isNaN(headAtMs) && got.includes('\r\n\r\n')) headAtMs = performance.now() - start;
      if (Number.isNaN(firstEventAtMs) && got.includes('data: one'))
        firstEventAtMs = performance.now() - start;
      if (got.includes('data: two')) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  client.write(`GET ${path} HTTP/1.1\r\nhost: example.test\r\n\r\n`);
  await done;
  client.destroy();
  return { writes, headAtMs, firstEventAtMs };
}

test('an event that came with the head goes to the client in the same write as the head', {
  timeout: 10_000,
}, async () => {
  const { writes } = await exchange('/together');
  const first = writes[0] ?? '';
  assert.match(first, /^HTTP\/1\.1 200 /);
  assert.match(first, /content-type: text\/event-stream/i);
  assert.ok(first.includes('data: one'), `the head went alone: ${JSON.stringify(writes)}`);
});

test('an event stream whose first event is late: the head goes without waiting for it', {
  timeout: 10_000,
}, async () => {
  const { writes, headAtMs, firstEventAtMs } = await exchange('/later');
  assert.match(writes[0] ?? '', /^HTTP\/1\.1 200 /);
  assert.equal((writes[0] ?? '').includes('data:'), false, 'the head waited for the first event');
  // the upstream holds the first event back 600 ms after its head
  assert.ok(headAtMs < 400, `the head came after ${headAtMs.toFixed(0)} ms`);
  assert.ok(firstEventAtMs >= 500, `the first event came after ${firstEventAtMs.toFixed(0)} ms`);
});
