// Large request bodies through bin/gw against an upstream that answers before it has read the body
// (nginx does so for a static file or an error): the answer reaches the client and the connection
// goes on serving, or closes, but is never reset under the answer and never hangs, over HTTP/1.1
// and HTTP/2.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import http from 'node:http';
import http2 from 'node:http2';
import { createServer } from 'node:net';
import { after, test } from 'node:test';
import { Client } from 'undici';
import { cleanupGw, configBlock, startGw } from './support/gw-process.ts';

after(cleanupGw);

const MiB = 1024 * 1024;

/** Sends its whole answer as soon as a request head is in, then reads and drops the body. */
async function earlyAnswering(answer: Buffer): Promise<{ port: number; close: () => void }> {
  const server = createServer((socket) => {
    let head = Buffer.alloc(0);
    let bodyLeft = 0;
    socket.on('data', (chunk: Buffer) => {
      let rest = chunk;
      while (rest.length > 0) {
        if (bodyLeft > 0) {
          const n = Math.min(bodyLeft, rest.length);
          bodyLeft -= n;
          rest = rest.subarray(n);
          continue;
        }
        head = Buffer.concat([head, rest]);
        rest = Buffer.alloc(0);
        const end = head.indexOf('\r\n\r\n');
        if (end === -1) break;
        const length = /content-length: *(\d+)/i.exec(head.subarray(0, end).toString('latin1'));
        bodyLeft = Number(length?.[1] ?? 0);
        rest = head.subarray(end + 4);
        head = Buffer.alloc(0);
        socket.write(`HTTP/1.1 200 OK\r\ncontent-length: ${answer.length}\r\nconnection: keep-alive\r\n\r\n`);
        // Like nginx, the body is read only once the answer is out.
        socket.pause();
        socket.write(answer, () => socket.resume());
      }
    });
    socket.on('error', () => socket.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as { port: number }).port, close: () => server.close() };
}

/** bin/gw with one route to `upstreamPort`; its proxy port. */
async function gwTo(upstreamPort: number): Promise<number> {
  const gw = await startGw({
    yaml: `${configBlock()}binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes: [{backends: [{host: "127.0.0.1:${upstreamPort}"}]}]
`,
  });
  return gw.proxyPort();
}

/** An upstream that answers "early" the moment a request's head is in, then reads its body. */
async function answersAtOnce(): Promise<{ port: number; close: () => void }> {
  const server = http.createServer((req, res) => {
    res.end('early');
    req.resume();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as { port: number }).port, close: () => server.close() };
}

test('1 MiB POSTs on one connection to an upstream that answers early: every one is answered', async (t) => {
  const answer = Buffer.alloc(MiB, 98);
  const up = await earlyAnswering(answer);
  t.after(() => up.close());
  const port = await gwTo(up.port);
  const client = new Client(`http://127.0.0.1:${port}`, { pipelining: 1 });
  t.after(() => client.close());
  const body = Buffer.alloc(MiB, 97);
  // Before the fix every second request waited for good: node stopped reading the connection once
  // the body stream of the answered request had been destroyed.
  for (let i = 0; i < 8; i++) {
    const r = await client.request({
      method: 'POST',
      path: '/',
      body,
      headersTimeout: 3000,
      bodyTimeout: 3000,
    });
    assert.equal(r.statusCode, 200, `request ${i}`);
    assert.equal((await r.body.arrayBuffer()).byteLength, answer.length, `request ${i}`);
  }
});

test('20 uploads at once to an upstream that answers before reading them: each client gets the answer, none is reset', async (t) => {
  // undici destroys the request body it was still sending once the answer is complete; the client's
  // connection must not go with it (gw's request class, see pipeline/body-churn.ts).
  const up = await answersAtOnce();
  t.after(() => up.close());
  const port = await gwTo(up.port);
  const body = Buffer.alloc(4 * MiB, 'x');
  // Keep-alive connections, as wrk's were when a third of them were reset: with `Connection: close`
  // node's server closes the socket right after the answer, and a client still sending may read the
  // kernel's RST before the answer (node does no lingering close), whatever gw does.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 20 });
  t.after(() => agent.destroy());
  const answers = await Promise.all(
    Array.from({ length: 20 }, async () => {
      const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/', agent });
      try {
        // The whole body is handed over at once: the answer is read however much of it gw takes.
        req.end(body);
        const [res] = (await once(req, 'response')) as [http.IncomingMessage];
        let text = '';
        for await (const c of res) text += c;
        return `${res.statusCode} ${text}`;
      } catch (err) {
        return (err as Error).message;
      } finally {
        req.destroy();
      }
    }),
  );
  assert.deepEqual(answers, Array(20).fill('200 early'));
});

test('HTTP/2: an upload the upstream answered early completes and its stream closes', async (t) => {
  // Before the fix gw stopped reading the stream once undici had dropped the body: the client had
  // the answer but waited for flow-control credit for the rest of its upload, for good.
  const up = await answersAtOnce();
  t.after(() => up.close());
  const port = await gwTo(up.port);
  const session = http2.connect(`http://127.0.0.1:${port}`);
  t.after(() => session.destroy());
  for (let i = 0; i < 3; i++) {
    const stream = session.request({ ':method': 'POST', ':path': '/', 'content-length': String(4 * MiB) });
    stream.end(Buffer.alloc(4 * MiB, 'x'));
    const [headers] = (await once(stream, 'response')) as [http2.IncomingHttpHeaders];
    let text = '';
    stream.on('data', (c: Buffer) => {
      text += c;
    });
    const closed = once(stream, 'close');
    const timeout = AbortSignal.timeout(5000);
    await Promise.race([
      closed,
      once(timeout, 'abort').then(() => assert.fail(`upload ${i}: the stream did not close within 5 s`)),
    ]);
    assert.equal(headers[':status'], 200, `upload ${i}`);
    assert.equal(text, 'early', `upload ${i}`);
    assert.equal(stream.rstCode, http2.constants.NGHTTP2_NO_ERROR, `upload ${i}`);
  }
});
