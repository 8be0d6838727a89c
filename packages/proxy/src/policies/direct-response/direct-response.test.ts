import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { oneRoute, startUpstream, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';

let up: TestServer;
let proxy: TestProxy;
before(async () => {
  up = await startUpstream();
  proxy = await startProxy(
    oneRoute(
      up.port,
      'directResponse: {status: 418, body: "short and stout\\n", headers: {x-teapot: \'"yes"\'}}',
    ),
  );
});
after(async () => {
  await proxy.close();
  await up.close();
});

test('the gateway answers itself and forwards nothing', async () => {
  const res = await fetch(proxy.url('/anything'), { method: 'POST', body: 'ignored' });
  assert.equal(res.status, 418);
  assert.equal(await res.text(), 'short and stout\n');
  assert.equal(res.headers.get('x-teapot'), 'yes');
  assert.equal(up.seen.length, 0);
});

test('headers and bodyExpression are CEL over the request; a header that fails or is not a string is left out', async () => {
  const p = await startProxy(
    oneRoute(
      up.port,
      `directResponse:
          status: 200
          bodyExpression: '{"path": request.path, "n": 1 + 2}'
          headers:
            x-from: 'request.headers["x-in"]'
            x-const: '"c"'
            x-number: '1 + 2'
            x-broken: 'request.headers["x-absent"] + "!"'`,
    ),
  );
  try {
    const res = await fetch(p.url('/abc'), { headers: { 'x-in': 'yo' } });
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { path: '/abc', n: 3 });
    assert.equal(res.headers.get('x-from'), 'yo');
    assert.equal(res.headers.get('x-const'), 'c');
    assert.equal(res.headers.get('x-number'), null);
    assert.equal(res.headers.get('x-broken'), null);
    const bare = await fetch(p.url('/abc'));
    assert.equal(bare.headers.get('x-from'), null);
    await p.reload(oneRoute(up.port, `directResponse: {status: 200, bodyExpression: 'request.path + "!"'}`));
    assert.equal(await (await fetch(p.url('/x'))).text(), '/x!');
    await p.reload(
      oneRoute(up.port, `directResponse: {status: 200, bodyExpression: 'request.headers["x-absent"] + "!"'}`),
    );
    assert.equal((await fetch(p.url('/x'))).status, 500);
  } finally {
    await p.close();
  }
  assert.equal(up.seen.length, 0);
});

test('the answer goes with its length, not chunked: an HTTP/1.0 client keeps its connection', async () => {
  const raw = (head: string) =>
    new Promise<string>((resolve, reject) => {
      const s = net.connect(proxy.port(), '127.0.0.1', () => s.write(head));
      let text = '';
      s.setEncoding('latin1');
      s.on('data', (c: string) => {
        text += c;
        // the whole answer is in: its head and the 16 bytes of body
        if (/\r\n\r\nshort and stout\n$/.test(text)) {
          s.destroy();
          resolve(text);
        }
      });
      s.on('error', reject);
      s.on('close', () => resolve(text));
    });
  const one = await raw('GET /x HTTP/1.1\r\nHost: a\r\n\r\n');
  assert.match(one, /^content-length: 16\r$/im);
  assert.doesNotMatch(one, /transfer-encoding/i);
  const old = await raw('GET /x HTTP/1.0\r\nHost: a\r\nConnection: keep-alive\r\n\r\n');
  assert.match(old, /^content-length: 16\r$/im);
  assert.match(old, /^connection: keep-alive\r$/im);
});
