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
      'directResponse: {status: 418, body: "short and stout\\n", headers: {x-teapot: "yes"}}',
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
