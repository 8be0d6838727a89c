import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, test } from 'node:test';
import { startUpstream, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { request } from 'undici';

let up: TestServer;
let proxy: TestProxy;
const hashed = createHash('sha256').update('hashed-key-2').digest('hex');
before(async () => {
  up = await startUpstream();
  proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - name: keys
      matches: [{path: {pathPrefix: /keys}}]
      policies:
        apiKey:
          keys:
            alice: {key: plain-key-1, metadata: {tier: gold, org: acme}}
            bob: {keyHash: "sha256:${hashed}", metadata: {tier: free}}
            carol: bare-key-3
        authorization:
          rules: ['apiKey.tier == "gold" || request.method == "GET"']
      backends: [{host: "127.0.0.1:${up.port}"}]
    - name: expression
      matches: [{path: {pathPrefix: /expression}}]
      policies:
        apiKey:
          location: {expression: 'request.headers["x-auth"].split(" ")[1]'}
          keys: [{key: k-expr}]
      backends: [{host: "127.0.0.1:${up.port}"}]
    - name: header
      matches: [{path: {pathPrefix: /header}}]
      policies:
        apiKey:
          mode: optional
          location: {header: {name: x-api-key}}
          keys: [{key: k-header}]
      backends: [{host: "127.0.0.1:${up.port}"}]
`);
});
after(async () => {
  await proxy.close();
  await up.close();
});

async function call(path: string, headers: Record<string, string>, method = 'GET') {
  const r = await request(proxy.url(path), { method, headers });
  const text = await r.body.text();
  return { status: r.statusCode, text };
}

test('plain, hashed and bare keys are accepted; the key is not forwarded', async () => {
  for (const key of ['plain-key-1', 'hashed-key-2', 'bare-key-3']) {
    const r = await call('/keys', { authorization: `Bearer ${key}` });
    assert.equal(r.status, 200, key);
    assert.equal(JSON.parse(r.text).headers.authorization, undefined);
  }
});

test('missing and unknown keys get 401', async () => {
  assert.equal((await call('/keys', {})).status, 401);
  const r = await call('/keys', { authorization: 'Bearer nope' });
  assert.equal(r.status, 401);
  assert.equal(r.text, 'invalid API key\n');
});

test('key metadata is apiKey.* in authorization rules', async () => {
  assert.equal((await call('/keys', { authorization: 'Bearer plain-key-1' }, 'POST')).status, 200);
  assert.equal((await call('/keys', { authorization: 'Bearer hashed-key-2' }, 'POST')).status, 403);
});

test('optional mode and a custom header location', async () => {
  assert.equal((await call('/header', {})).status, 200);
  assert.equal((await call('/header', { 'x-api-key': 'k-header' })).status, 200);
  assert.equal((await call('/header', { 'x-api-key': 'wrong' })).status, 401);
});

test('a CEL expression can locate the key', async () => {
  assert.equal((await call('/expression', { 'x-auth': 'Token k-expr' })).status, 200);
  assert.equal((await call('/expression', { 'x-auth': 'Token wrong' })).status, 401);
  assert.equal((await call('/expression', {})).status, 401, 'an expression that finds nothing means no key');
});
