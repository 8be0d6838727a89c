import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startUpstream } from '@gw/testkit';
import { startProxy } from '@gw/testkit/proxy';
import { Client } from 'undici';

const config = (port: number, rule: string) => `frontendPolicies:
  networkAuthorization:
    rules: [{require: '${rule}'}]
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes: [{backends: [{host: "127.0.0.1:${port}"}]}]
`;

async function get(url: string) {
  const c = new Client(url);
  try {
    const r = await c.request({ path: '/', method: 'GET' });
    await r.body.dump();
    return r.statusCode;
  } finally {
    await c.close().catch(() => {});
  }
}

test('a connection from outside the allowed range is closed before any HTTP; an allowed one is served', async (t) => {
  const up = await startUpstream();
  t.after(() => up.close());
  const p = await startProxy(config(up.port, 'cidr("10.0.0.0/8").containsIP(source.address)'));
  t.after(() => p.close());
  await assert.rejects(get(p.url('')), /other side closed|ECONNRESET|socket/i);
  assert.equal(up.seen.length, 0);
  const counted = (await p.metrics.registry.getMetricsAsJSON()).find(
    (m) => m.name === 'gw_downstream_connections_total',
  );
  assert.deepEqual(
    counted?.values.filter((v) => v.value > 0).map((v) => v.labels.outcome),
    ['denied'],
    'the refused connection is counted as denied',
  );

  await p.reload(config(up.port, 'cidr("127.0.0.0/8").containsIP(source.address)'));
  assert.equal(await get(p.url('')), 200);
});

test('an invalid network rule is a config error naming the field', async () => {
  await assert.rejects(
    startProxy(config(1, 'cidr(')),
    /frontendPolicies\.networkAuthorization\.rules\[0\]\.require: invalid CEL expression/,
  );
});
