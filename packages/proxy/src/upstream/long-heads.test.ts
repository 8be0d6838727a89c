// Response heads from a backend are read up to 64 KiB, as request heads from clients are: a backend's
// long Set-Cookie passes; a longer head is a 502 naming the cause, never a crash.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';

let up: http.Server;
let proxy: TestProxy;
before(async () => {
  up = http.createServer((req, res) => {
    const n = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('n'));
    res.setHeader('set-cookie', `session=${'s'.repeat(n)}`);
    res.end('ok');
  });
  await new Promise<void>((r) => up.listen(0, '127.0.0.1', r));
  proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes: [{backends: [{host: "127.0.0.1:${(up.address() as AddressInfo).port}"}]}]
`);
});
after(async () => {
  await proxy.close();
  up.closeAllConnections();
  up.close();
});

/** GET through gw with a client that reads heads of any length. */
function get(n: number): Promise<{ status: number; cookie: number; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get(proxy.url(`/?n=${n}`), { maxHeaderSize: 1024 * 1024 }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          body += c;
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            cookie: String(res.headers['set-cookie'] ?? '').length,
            body,
          }),
        );
      })
      .on('error', reject);
  });
}

test('a 40 KB response head passes (over node’s 16 KiB); a 70 KB one is a 502 naming the cause', async () => {
  const long = await get(40_000);
  assert.equal(long.status, 200);
  assert.equal(long.cookie, 'session='.length + 40_000);
  const over = await get(70_000);
  assert.equal(over.status, 502);
  assert.match(over.body, /header/i);
});
