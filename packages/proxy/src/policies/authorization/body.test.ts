// An authorization rule over the request body: the body is read (up to the buffer limit) before the
// rule runs, as agentgateway does, and still reaches the backend whole; a route whose rules do not
// read it streams its body as before.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type Echo, startUpstream, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { request } from 'undici';

let up: TestServer;
let proxy: TestProxy;

before(async () => {
  up = await startUpstream();
  proxy = await startProxy(`frontendPolicies:
  http: {maxBufferSize: 64}
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - matches: [{path: {pathPrefix: /body}}]
      policies:
        authorization: {rules: ['json(request.body).ok == true']}
      backends: [{host: "127.0.0.1:${up.port}"}]
`);
});

after(async () => {
  await proxy?.close();
  await up?.close();
});

const post = async (body: string) => {
  const r = await request(proxy.url('/body'), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  });
  return { status: r.statusCode, text: await r.body.text() };
};

test('a rule that reads request.body sees it; the backend gets it whole', async () => {
  const ok = await post('{"ok":true,"n":1}');
  assert.equal(ok.status, 200);
  const seen = up.seen[up.seen.length - 1] as Echo;
  assert.equal(seen.body, '{"ok":true,"n":1}');
  assert.equal((await post('{"ok":false}')).status, 403);
});

test('a body over the buffer limit is a 413, not a silent denial', async () => {
  const big = await post(JSON.stringify({ ok: true, pad: 'x'.repeat(100) }));
  assert.equal(big.status, 413);
  assert.match(big.text, /buffer limit/);
});
