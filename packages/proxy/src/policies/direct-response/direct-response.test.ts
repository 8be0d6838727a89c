import assert from 'node:assert/strict';
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
