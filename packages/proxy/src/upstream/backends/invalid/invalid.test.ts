// The invalid backend through a gateway: alone it answers every request 500 "backend does not exist"
// (as agentgateway does); weighted with a real backend it takes only its share.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startUpstream, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { request } from 'undici';

let up: TestServer;
let proxy: TestProxy;

before(async () => {
  up = await startUpstream('echo');
  proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - name: gone
      matches: [{path: {pathPrefix: /gone}}]
      backends: [{invalid: null}]
    - name: split
      matches: [{path: {pathPrefix: /split}}]
      backends:
      - invalid:
        weight: 1
      - host: 127.0.0.1:${up.port}
        weight: 3
`);
});
after(async () => {
  await proxy?.close();
  await up?.close();
});

test('alone: every request is answered 500 with the reason', async () => {
  for (let i = 0; i < 3; i++) {
    const r = await request(`http://127.0.0.1:${proxy.port()}/gone`);
    assert.equal(r.statusCode, 500);
    assert.equal(await r.body.text(), 'backend does not exist\n');
  }
});

test('weighted: it takes its share of the requests, the real backend the rest', async () => {
  const counts = new Map<number, number>();
  const n = 400;
  for (let i = 0; i < n; i++) {
    const r = await request(`http://127.0.0.1:${proxy.port()}/split`);
    await r.body.dump();
    counts.set(r.statusCode, (counts.get(r.statusCode) ?? 0) + 1);
  }
  assert.deepEqual([...counts.keys()].sort(), [200, 500]);
  // weight 1 of 4: about 100 of 400; far outside 60..140 would be a bias, not chance (p < 1e-5)
  const failed = counts.get(500) ?? 0;
  assert.ok(failed > 60 && failed < 140, `${failed} of ${n} answered 500`);
});
