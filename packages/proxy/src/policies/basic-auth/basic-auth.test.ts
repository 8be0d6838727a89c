import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { startUpstream, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { request } from 'undici';
import { hashFormat, verifyPassword } from './htpasswd.ts';

const fixture = readFileSync(new URL('./testdata/htpasswd', import.meta.url), 'utf8')
  .trim()
  .split('\n');
const PASSWORDS: Record<string, string> = {
  'bcrypt-user': 'b-secret',
  'md5-user': 'm-secret',
  'sha-user': 's-secret',
  'crypt-user': 'c-secret',
};

test('every htpasswd format written by Apache htpasswd verifies, and a wrong password does not', async () => {
  const formats = new Set<string>();
  for (const line of fixture) {
    const [user, hash] = line.split(/:(.*)/s) as [string, string];
    formats.add(hashFormat(hash) ?? 'unknown');
    assert.equal(await verifyPassword(PASSWORDS[user] as string, hash), true, user);
    assert.equal(await verifyPassword('wrong', hash), false, user);
  }
  assert.deepEqual([...formats].sort(), ['apr1', 'bcrypt', 'crypt', 'sha1']);
});

let up: TestServer;
let proxy: TestProxy;
before(async () => {
  up = await startUpstream();
  const users = fixture.map((l) => `          - '${l}'`).join('\n');
  proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - name: strict
      matches: [{path: {pathPrefix: /strict}}]
      policies:
        basicAuth:
          realm: Staff Only
          users:
${users}
      backends: [{host: "127.0.0.1:${up.port}"}]
    - name: optional
      matches: [{path: {pathPrefix: /optional}}]
      policies:
        basicAuth:
          mode: optional
          users:
${users}
        transformations: {request: {set: {x-user: 'default(basicAuth.username, "anonymous")'}}}
        authorization: {rules: [{deny: 'has(basicAuth.username) && basicAuth.username == "crypt-user"'}]}
      backends: [{host: "127.0.0.1:${up.port}"}]
`);
});
after(async () => {
  await proxy.close();
  await up.close();
});

const basic = (u: string, p: string) => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`;

test('valid credentials of each format pass, and the backend is not sent them', async () => {
  for (const [user, pw] of Object.entries(PASSWORDS)) {
    const r = await request(proxy.url('/strict'), {
      headers: { authorization: basic(user, pw), 'x-other': 'kept' },
    });
    assert.equal(r.statusCode, 200, user);
    const seen = (await r.body.json()) as { headers: Record<string, string> };
    assert.equal(seen.headers.authorization, undefined, user);
    assert.equal(seen.headers['x-other'], 'kept');
  }
  const optional = await request(proxy.url('/optional'), {
    headers: { authorization: basic('sha-user', 's-secret') },
  });
  assert.equal(
    ((await optional.body.json()) as { headers: Record<string, string> }).headers.authorization,
    undefined,
  );
});

test('missing or wrong credentials get 401 with WWW-Authenticate naming the realm', async () => {
  for (const headers of [
    {},
    { authorization: basic('md5-user', 'nope') },
    { authorization: basic('ghost', 'x') },
  ]) {
    const r = await request(proxy.url('/strict'), { headers });
    assert.equal(r.statusCode, 401);
    assert.equal(r.headers['www-authenticate'], 'Basic realm="Staff Only"');
    await r.body.dump();
  }
});

test('optional mode lets requests without credentials through, but not wrong ones', async () => {
  const none = await request(proxy.url('/optional'));
  assert.equal(none.statusCode, 200);
  await none.body.dump();
  const wrong = await request(proxy.url('/optional'), {
    headers: { authorization: basic('sha-user', 'bad') },
  });
  assert.equal(wrong.statusCode, 401);
  assert.equal(wrong.headers['www-authenticate'], 'Basic realm="Restricted"');
  await wrong.body.dump();
});

test('plain-text passwords are refused when the config loads', async () => {
  await assert.rejects(
    startProxy(`binds:
- port: 0
  listeners: [{routes: [{policies: {basicAuth: {users: ["bob:plaintext"]}}}]}]
`),
    /basicAuth\.users\[0\]: must be an htpasswd line <user>:<hash> .*; plain passwords are not accepted/,
  );
});

test('the user basicAuth let in is basicAuth.username in CEL (empty without credentials), as in agentgateway', async () => {
  const seen = async (headers: Record<string, string>) => {
    const r = await request(proxy.url('/optional'), { headers });
    if (r.statusCode !== 200) {
      await r.body.dump();
      return r.statusCode;
    }
    return ((await r.body.json()) as { headers: Record<string, string> }).headers['x-user'];
  };
  assert.equal(await seen({ authorization: basic('sha-user', 's-secret') }), 'sha-user');
  assert.equal(await seen({}), 'anonymous');
  assert.equal(await seen({ authorization: basic('crypt-user', 'c-secret') }), 403);
});
