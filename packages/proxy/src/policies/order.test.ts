// The consequences of POLICY_ORDER, tested through a route that has every policy involved: moving a
// policy in order.ts changes an answer here.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startUpstream, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { request } from 'undici';

let up: TestServer;
let proxy: TestProxy;
let sign: (claims: Record<string, unknown>) => Promise<string>;

before(async () => {
  up = await startUpstream();
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  const jwks = JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256' }] });
  sign = (claims) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
      .setIssuer('https://idp.local')
      .setExpirationTime('5m')
      .sign(privateKey);
  const route = (name: string, policies: string) => `- name: ${name}
  matches: [{path: {pathPrefix: /${name}}}]
  policies:
${policies
  .trim()
  .split('\n')
  .map((l) => `    ${l}`)
  .join('\n')}
  backends: [{host: "127.0.0.1:${up.port}"}]`;
  proxy = await startProxy(`gateways:
  default:
    port: 0
    address: 127.0.0.1
    policies:
      authorization:
        rules: [{deny: 'request.path.startsWith("/accumulate/blocked")'}]
routes:
${route(
  'chain',
  `cors: {allowOrigins: ["https://app.example"], allowMethods: [GET, POST]}
jwtAuth: {issuer: https://idp.local, jwks: {inline: '${jwks}'}}
authorization:
  rules: ['jwt.role != "banned"']
localRateLimit: [{maxTokens: 1, tokensPerFill: 1, fillInterval: 1h}]
csrf: {}`,
)}
${route('accumulate', `authorization: {rules: ['true']}`)}
`);
});
after(async () => {
  await proxy.close();
  await up.close();
});

async function call(path: string, init: { method?: string; headers?: Record<string, string> } = {}) {
  const r = await request(proxy.url(path), {
    method: (init.method ?? 'GET') as 'GET',
    headers: init.headers ?? {},
  });
  const text = await r.body.text();
  return { status: r.statusCode, headers: r.headers, text };
}

test('CORS before authentication: a preflight on a JWT route is answered without credentials', async () => {
  const seen = up.seen.length;
  const r = await call('/chain', {
    method: 'OPTIONS',
    headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' },
  });
  assert.equal(r.status, 200);
  assert.equal(r.headers['access-control-allow-origin'], 'https://app.example');
  assert.equal(up.seen.length, seen, 'the preflight is not forwarded');
});

test('authentication before CSRF: an unauthenticated cross-site POST gets 401, not a CSRF 403', async () => {
  const r = await call('/chain', {
    method: 'POST',
    headers: { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
  });
  assert.equal(r.status, 401);
});

test('admission before rate limiting: rejected requests spend no token of the limit', async () => {
  // Unauthenticated (401) and unauthorized (403) requests first: none may take the one token.
  for (let i = 0; i < 3; i++) assert.equal((await call('/chain')).status, 401);
  const banned = await sign({ role: 'banned' });
  for (let i = 0; i < 3; i++)
    assert.equal((await call('/chain', { headers: { authorization: `Bearer ${banned}` } })).status, 403);
  const ok = await sign({ role: 'user' });
  assert.equal((await call('/chain', { headers: { authorization: `Bearer ${ok}` } })).status, 200);
  assert.equal((await call('/chain', { headers: { authorization: `Bearer ${ok}` } })).status, 429);
});

test('authorization rules accumulate: a gateway Deny survives a route Allow', async () => {
  assert.equal((await call('/accumulate/open')).status, 200);
  const r = await call('/accumulate/blocked');
  assert.equal(r.status, 403);
});
