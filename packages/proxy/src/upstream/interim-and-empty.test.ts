// Answers an HTTP/1 upstream may give that carry no content, or come after an interim one: a 304 or
// 204 with the Content-Length a 200 would have had (RFC 9110 §8.6) is passed on, not a length
// mismatch that left the client an empty reply; a 100 (Continue) nobody asked for is skipped as other
// 1xx are (RFC 9110 §15.2), not a 502. Both are undici's parser (patches/undici@7.30.2.patch).
import assert from 'node:assert/strict';
import net, { type AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { httpGet } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';

const ANSWERS: Record<string, string> = {
  '/304': 'HTTP/1.1 304 Not Modified\r\nContent-Length: 1234\r\nETag: "v1"\r\n\r\n',
  '/204': 'HTTP/1.1 204 No Content\r\nContent-Length: 10\r\nX-Kind: empty\r\n\r\n',
  '/100': 'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok',
};

let upstream: net.Server;
let p: TestProxy;
before(async () => {
  // answers each request on a connection by its path, and keeps the connection
  upstream = net.createServer((c) => {
    c.on('data', (d: Buffer) => {
      const path = d.toString('latin1').split(' ')[1] ?? '';
      c.write(ANSWERS[path] ?? 'HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n');
    });
    c.on('error', () => {});
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const port = (upstream.address() as AddressInfo).port;
  p = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - backends: [{host: "127.0.0.1:${port}"}]
`);
});
after(async () => {
  await p.close();
  await new Promise((r) => upstream.close(r));
});

test("a 304 with a 200's Content-Length reaches the client as a 304, as does such a 204", async () => {
  for (let i = 0; i < 3; i++) {
    const r = await httpGet(p.port(), '/304', { headers: { 'if-none-match': '"v1"' } });
    assert.equal(r.status, 304, `round ${i}`);
    assert.equal(r.headers.etag, '"v1"');
    assert.equal(r.body, '');
    const e = await httpGet(p.port(), '/204');
    assert.equal(e.status, 204, `round ${i}`);
    assert.equal(e.headers['x-kind'], 'empty');
  }
});

test('an unasked-for 100 Continue before the answer is skipped: the client gets the 200', async () => {
  for (let i = 0; i < 3; i++) {
    const r = await httpGet(p.port(), '/100');
    assert.equal(r.status, 200, `round ${i}: ${r.body}`);
    assert.equal(r.body, 'ok');
  }
});
