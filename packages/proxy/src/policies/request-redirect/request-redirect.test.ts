import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startUpstream, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { request } from 'undici';

let up: TestServer;
let proxy: TestProxy;
before(async () => {
  up = await startUpstream();
  proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - name: https
      matches: [{path: {pathPrefix: /secure}}]
      policies: {requestRedirect: {scheme: https, status: 301}}
    - name: moved
      matches: [{path: {pathPrefix: /old}}]
      policies: {requestRedirect: {authority: {host: new.example}, path: {prefix: /new}}}
    - name: full
      matches: [{path: {exact: /x}}]
      policies: {requestRedirect: {authority: {full: "other.example:8443"}, path: {full: /landing}, status: 307}}
    - name: port
      matches: [{path: {exact: /p}}]
      policies: {requestRedirect: {authority: {port: 9090}}}
`);
});
after(async () => {
  await proxy.close();
  await up.close();
});

async function location(path: string, host = 'shop.example:8080') {
  const res = await request(proxy.url(path), { headers: { host } });
  await res.body.dump();
  return { status: res.statusCode, location: res.headers.location };
}

test('scheme change drops the old port, keeps path and query', async () => {
  assert.deepEqual(await location('/secure/a?b=1'), {
    status: 301,
    location: 'https://shop.example/secure/a?b=1',
  });
});

test('prefix replacement and host replacement keep the port', async () => {
  assert.deepEqual(await location('/old/item/7'), {
    status: 302,
    location: 'http://new.example:8080/new/item/7',
  });
  assert.deepEqual(await location('/old'), { status: 302, location: 'http://new.example:8080/new' });
});

test('full authority, full path, status', async () => {
  assert.deepEqual(await location('/x?q=2'), {
    status: 307,
    location: 'http://other.example:8443/landing?q=2',
  });
});

test('port only', async () => {
  assert.deepEqual(await location('/p'), { status: 302, location: 'http://shop.example:9090/p' });
  assert.equal(up.seen.length, 0);
});
