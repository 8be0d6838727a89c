import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startUpstream, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { request } from 'undici';
import { CLOCK_SKEW_S } from './verifier.ts';

type Key = { kid: string; privateKey: Awaited<ReturnType<typeof generateKeyPair>>['privateKey']; jwk: JWK };
async function makeKey(kid: string): Promise<Key> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  return { kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' } };
}

async function sign(
  key: Key,
  claims: Record<string, unknown>,
  opts: { iss?: string; aud?: string; exp?: number | null; kid?: string | null } = {},
): Promise<string> {
  const header: { alg: string; kid?: string } = { alg: 'RS256' };
  if (opts.kid !== null) header.kid = opts.kid ?? key.kid;
  let jwt = new SignJWT(claims)
    .setProtectedHeader(header)
    .setIssuedAt()
    .setIssuer(opts.iss ?? 'https://idp.local');
  if (opts.aud) jwt = jwt.setAudience(opts.aud);
  if (opts.exp !== null) jwt = jwt.setExpirationTime(opts.exp ?? '5m');
  return await jwt.sign(key.privateKey);
}

let up: TestServer;
let proxy: TestProxy;
let inlineKey: Key;
let remoteKeys: Key[];
let jwksServer: http.Server;
let jwksFetches = 0;

before(async () => {
  up = await startUpstream();
  inlineKey = await makeKey('inline-1');
  remoteKeys = [await makeKey('remote-1')];
  jwksServer = http.createServer((_req, res) => {
    jwksFetches++;
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ keys: remoteKeys.map((k) => k.jwk) }));
  });
  await new Promise<void>((r) => jwksServer.listen(0, '127.0.0.1', r));
  const jwksPort = (jwksServer.address() as AddressInfo).port;
  const inline = JSON.stringify({ keys: [inlineKey.jwk] });
  const route = (name: string, prefix: string, policies: string) => `    - name: ${name}
      matches: [{path: {pathPrefix: ${prefix}}}]
      policies:
${policies}
      backends: [{host: "127.0.0.1:${up.port}"}]`;
  proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
${route(
  'strict',
  '/strict',
  `        jwtAuth:
          providers:
          - issuer: https://idp.local
            audiences: [api]
            jwks: {inline: '${inline}'}
        authorization:
          rules: ['jwt.role == "admin" || request.method == "GET"']`,
)}
${route(
  'optional',
  '/optional',
  `        jwtAuth: {mode: optional, issuer: https://idp.local, jwks: {inline: '${inline}'}, preserveToken: true}`,
)}
${route(
  'permissive',
  '/permissive',
  `        jwtAuth: {mode: permissive, issuer: https://idp.local, jwks: {inline: '${inline}'}}
        requestHeaderModifier: {set: {x-has-claims: "no"}}`,
)}
${route(
  'claims',
  '/permissive-claims',
  `        jwtAuth: {mode: permissive, issuer: https://idp.local, jwks: {inline: '${inline}'}}
        authorization: {rules: ['jwt.sub == "u1"']}`,
)}
${route(
  'anonymous-denied',
  '/deny-anonymous',
  `        jwtAuth: {mode: optional, issuer: https://idp.local, jwks: {inline: '${inline}'}}
        authorization: {rules: [{deny: '!has(jwt.sub)'}, {deny: 'request.headers["X-Blocked"] == "1"'}]}`,
)}
${route(
  'no-exp',
  '/no-exp',
  `        jwtAuth:
          mode: strict
          providers:
          - issuer: https://idp.local
            jwks: {inline: '${inline}'}
            jwtValidationOptions: {requiredClaims: []}`,
)}
${route(
  'needs-sub',
  '/needs-sub',
  `        jwtAuth: {mode: strict, issuer: https://idp.local, jwks: {inline: '${inline}'}, jwtValidationOptions: {requiredClaims: [sub, jti]}}`,
)}
${route(
  'remote',
  '/remote',
  `        jwtAuth:
          providers:
          - issuer: https://idp.local
            jwks: {url: "http://127.0.0.1:${jwksPort}/jwks.json"}
          location: {queryParameter: {name: token}}`,
)}
`);
});
after(async () => {
  await proxy.close();
  await up.close();
  jwksServer.close();
});

async function call(path: string, token?: string, method = 'GET') {
  const r = await request(proxy.url(path), {
    method,
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });
  const text = await r.body.text();
  return { status: r.statusCode, text, headers: r.headers };
}

test('a valid token passes; the token is removed before forwarding', async () => {
  const r = await call('/strict', await sign(inlineKey, { sub: 'u1' }, { aud: 'api' }));
  assert.equal(r.status, 200);
  assert.equal(JSON.parse(r.text).headers.authorization, undefined);
});

test('Strict: missing, malformed, expired, wrong issuer, wrong audience, no kid, no exp, bad signature → 401', async () => {
  const other = await makeKey('inline-1');
  const cases: [string, string | undefined, RegExp][] = [
    ['missing', undefined, /JWT is missing/],
    ['malformed', 'not.a.jwt', /invalid JWT/],
    [
      'expired',
      await sign(inlineKey, {}, { aud: 'api', exp: Math.floor(Date.now() / 1000) - CLOCK_SKEW_S - 5 }),
      /expired/,
    ],
    [
      'issuer',
      await sign(inlineKey, {}, { aud: 'api', iss: 'https://evil' }),
      /issuer "https:\/\/evil" is not trusted/,
    ],
    ['audience', await sign(inlineKey, {}, { aud: 'other' }), /claim aud is not valid/],
    ['no kid', await sign(inlineKey, {}, { aud: 'api', kid: null }), /invalid JWT/],
    ['no exp', await sign(inlineKey, {}, { aud: 'api', exp: null }), /claim exp/],
    ['signature', await sign(other, {}, { aud: 'api' }), /signature does not verify/],
  ];
  for (const [name, token, reason] of cases) {
    const r = await call('/strict', token);
    assert.equal(r.status, 401, name);
    assert.match(r.text, reason, name);
    assert.equal(r.headers['www-authenticate'], 'Bearer', name);
  }
  assert.equal(
    up.seen.filter((s) => s.url.startsWith('/strict')).length,
    1,
    'only the valid request reached the upstream',
  );
});

test("jwtValidationOptions.requiredClaims: a provider's own list, exactly ([] requires no exp; jti is ignored)", async () => {
  const noExp = await sign(inlineKey, { sub: 'u1' }, { exp: null });
  assert.equal((await call('/no-exp', noExp)).status, 200);
  assert.equal((await call('/no-exp', noExp)).status, 200, 'checked again, not cached without exp');
  const expired = await sign(inlineKey, {}, { exp: Math.floor(Date.now() / 1000) - CLOCK_SKEW_S - 5 });
  assert.match((await call('/no-exp', expired)).text, /expired/, 'an exp present is still checked');
  const noSub = await call('/needs-sub', await sign(inlineKey, {}));
  assert.equal(noSub.status, 401);
  assert.match(noSub.text, /claim sub/);
  assert.equal((await call('/needs-sub', await sign(inlineKey, { sub: 'u1' }))).status, 200);
  // the default still requires exp
  assert.match(
    (await call('/strict', await sign(inlineKey, {}, { aud: 'api', exp: null }))).text,
    /claim exp/,
  );
});

test('claims are jwt.* in authorization: 403 when the rule does not hold, after 401 checks', async () => {
  const user = await sign(inlineKey, { sub: 'u2', role: 'viewer' }, { aud: 'api' });
  const admin = await sign(inlineKey, { sub: 'u3', role: 'admin' }, { aud: 'api' });
  assert.equal((await call('/strict', user, 'POST')).status, 403);
  assert.equal((await call('/strict', admin, 'POST')).status, 200);
  assert.equal((await call('/strict', undefined, 'POST')).status, 401);
});

test('Optional: no token passes, a bad one does not; preserveToken keeps it', async () => {
  assert.equal((await call('/optional')).status, 200);
  assert.equal((await call('/optional', 'garbage')).status, 401);
  const token = await sign(inlineKey, {});
  const r = await call('/optional', token);
  assert.equal(JSON.parse(r.text).headers.authorization, `Bearer ${token}`);
});

test('Permissive: never rejects', async () => {
  assert.equal((await call('/permissive')).status, 200);
  assert.equal((await call('/permissive', 'garbage')).status, 200);
});

test('Permissive: a valid token is still validated and its claims reach the request; others carry none', async () => {
  assert.equal((await call('/permissive-claims', await sign(inlineKey, { sub: 'u1' }))).status, 200);
  assert.equal((await call('/permissive-claims', await sign(inlineKey, { sub: 'u2' }))).status, 403);
  const other = await makeKey('inline-1');
  assert.equal(
    (await call('/permissive-claims', await sign(other, { sub: 'u1' }))).status,
    403,
    'bad signature: no claims',
  );
  assert.equal((await call('/permissive-claims')).status, 403);
});

test('remote JWKS: fetched, cached, and a rotated key is picked up', async () => {
  const first = await sign(remoteKeys[0] as Key, { sub: 'r' });
  let r = await request(proxy.url(`/remote?token=${first}&keep=1`));
  assert.equal(r.statusCode, 200);
  const echoed = (await r.body.json()) as { url: string };
  assert.equal(echoed.url, '/remote?keep=1', 'the token query parameter is removed');
  const fetchesAfterFirst = jwksFetches;
  r = await request(proxy.url(`/remote?token=${first}`));
  await r.body.dump();
  assert.equal(jwksFetches, fetchesAfterFirst, 'cached, not fetched again');

  const rotated = await makeKey('remote-2');
  remoteKeys = [rotated];
  const second = await sign(rotated, { sub: 'r' });
  await sleep(5_100); // the refetch cooldown
  r = await request(proxy.url(`/remote?token=${second}`));
  assert.equal(r.statusCode, 200, await r.body.text());
  assert.ok(jwksFetches > fetchesAfterFirst, 'the JWKS was fetched again for the new kid');
});

test('a token a little past its exp (clock skew) passes; a verified one is reused until then, then rejected as expired', async () => {
  const now = Math.floor(Date.now() / 1000);
  const skewed = await sign(inlineKey, { sub: 'skewed' }, { aud: 'api', exp: now - 30 });
  assert.equal((await call('/strict', skewed)).status, 200, '30 s past exp is within the skew');
  // 3 to 4 s of skew left: room for the two calls on a busy machine
  const exp = now - CLOCK_SKEW_S + 4;
  const token = await sign(inlineKey, { sub: 'short' }, { aud: 'api', exp });
  assert.equal((await call('/strict', token)).status, 200);
  assert.equal((await call('/strict', token)).status, 200, 'served from the cache');
  await sleep((exp + CLOCK_SKEW_S) * 1000 - Date.now() + 100);
  const late = await call('/strict', token);
  assert.equal(late.status, 401);
  assert.match(late.text, /expired/);
});

test('a deny rule on a missing claim or a header by any spelling holds: has(jwt.sub) is false without a token', async () => {
  const get = async (headers: Record<string, string> = {}) =>
    (await request(`http://127.0.0.1:${proxy.port()}/deny-anonymous`, { headers })).statusCode;
  // optional lets a request without a token in; the deny rule takes it out (it let it through when
  // jwt was not there at all: the rule failed, and a failing deny rule matches nothing)
  assert.equal(await get(), 403);
  const token = await sign(inlineKey, { sub: 'u1' });
  assert.equal(await get({ authorization: `Bearer ${token}` }), 200);
  // header names are case-insensitive in CEL as on the wire
  assert.equal(await get({ authorization: `Bearer ${token}`, 'x-blocked': '1' }), 403);
});
