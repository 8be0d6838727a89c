import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { oneRoute, startUpstream, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { request } from 'undici';

let up: TestServer;
let proxy: TestProxy;
before(async () => {
  up = await startUpstream();
  proxy = await startProxy(oneRoute(up.port, 'csrf: {additionalOrigins: ["https://partner.example"]}'));
});
after(async () => {
  await proxy.close();
  await up.close();
});

async function post(headers: Record<string, string>, method = 'POST') {
  const r = await request(proxy.url('/form'), { method, headers, body: 'a=1' });
  return { status: r.statusCode, body: await r.body.text() };
}

test('cross-site POST is rejected with 403 and a reason', async () => {
  const r = await post({ origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' });
  assert.equal(r.status, 403);
  assert.match(r.body, /CSRF/);
});

test('same-origin, trusted origins, safe methods and non-browser clients pass', async () => {
  const host = `127.0.0.1:${proxy.port()}`;
  assert.equal((await post({ origin: `http://${host}` })).status, 200);
  assert.equal((await post({ 'sec-fetch-site': 'same-origin', origin: 'https://whatever' })).status, 200);
  assert.equal((await post({ origin: 'https://partner.example' })).status, 200);
  assert.equal((await post({ origin: 'https://evil.example' }, 'GET')).status, 200);
  assert.equal((await post({})).status, 200);
});

test('a cross-site browser request without Origin is rejected', async () => {
  assert.equal((await post({ 'sec-fetch-site': 'cross-site' })).status, 403);
});
