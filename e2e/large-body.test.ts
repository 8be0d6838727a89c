// Large request bodies through bin/gw over one keep-alive connection, against an upstream that
// answers before it has read the body (nginx does so for a static file or an error): the answer
// reaches the client and the connection goes on serving, or closes, but never hangs.
import assert from 'node:assert/strict';
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

test('1 MiB POSTs on one connection to an upstream that answers early: every one is answered', async (t) => {
  const answer = Buffer.alloc(MiB, 98);
  const up = await earlyAnswering(answer);
  t.after(() => up.close());
  const gw = await startGw({
    yaml: `${configBlock()}binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes: [{backends: [{host: "127.0.0.1:${up.port}"}]}]
`,
  });
  const client = new Client(`http://127.0.0.1:${await gw.proxyPort()}`, { pipelining: 1 });
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
