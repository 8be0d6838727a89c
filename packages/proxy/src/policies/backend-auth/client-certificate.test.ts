// privateKeyJwt with a certificate (certificate credentials, as Microsoft Entra takes them): the
// client assertion's header carries the certificate chain (x5c) or the leaf's SHA-256 thumbprint
// (x5t#S256). A stand-in token endpoint on that documented behaviour trusts one certificate: it
// verifies the assertion with the key of the certificate the header names, and answers a token only
// then; the upstream gets that token. The config names a chain that does not fit the signing key.
import assert from 'node:assert/strict';
import { createHash, X509Certificate } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { makeTestPki, startUpstream, type TestPki, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { decodeProtectedHeader, jwtVerify } from 'jose';
import { configIssues } from '../../config/test-support.ts';

let pki: TestPki;
let up: TestServer;
let tokenEndpoint: http.Server;
let proxy: TestProxy;
const seen: { header: Record<string, unknown>; verified: boolean }[] = [];

before(async () => {
  pki = await makeTestPki(['gw.test']);
  const trusted = new X509Certificate(pki.client.cert);
  const thumbprint = createHash('sha256').update(trusted.raw).digest('base64url');
  up = await startUpstream('up');
  tokenEndpoint = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const form = new URLSearchParams(Buffer.concat(chunks).toString());
      const assertion = form.get('client_assertion') ?? '';
      let verified = false;
      let header: Record<string, unknown> = {};
      try {
        header = decodeProtectedHeader(assertion) as Record<string, unknown>;
        const x5c = header.x5c as string[] | undefined;
        // the certificate the header names must be the one trusted for this client
        const named = x5c?.[0] ? new X509Certificate(Buffer.from(x5c[0], 'base64')) : undefined;
        const ok = named ? named.raw.equals(trusted.raw) : header['x5t#S256'] === thumbprint;
        if (ok) {
          await jwtVerify(assertion, trusted.publicKey, { issuer: 'gw-cert', subject: 'gw-cert' });
          verified = true;
        }
      } catch {
        verified = false;
      }
      seen.push({ header, verified });
      if (!verified) {
        res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"invalid_client"}');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          access_token: `tok-${header.x5c ? 'x5c' : 'x5t'}`,
          issued_token_type: 'urn:ietf:params:oauth:token-type:access_token',
          token_type: 'Bearer',
          expires_in: 60,
        }),
      );
    });
  });
  await new Promise<void>((r) => tokenEndpoint.listen(0, '127.0.0.1', r));
  const host = `127.0.0.1:${(tokenEndpoint.address() as AddressInfo).port}`;
  const route = (name: string, header: string) => `    - matches: [{path: {pathPrefix: /${name}}}]
      backends:
      - host: 127.0.0.1:${up.port}
        policies:
          backendAuth:
            oauthTokenExchange:
              host: ${host}
              path: /token
              cache: {maxEntries: 0}
              clientAuth:
                method: privateKeyJwt
                clientId: gw-cert
                signingKey: {file: ${JSON.stringify(pki.client.keyFile)}}
                certificate: {file: ${JSON.stringify(pki.client.certFile)}}
                certificateHeader: ${header}
                alg: ES256
                assertionAudience: https://login.example/token`;
  proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
${route('x5c', 'x5c')}
${route('x5t', '"x5t#S256"')}
`);
});

after(async () => {
  await proxy?.close();
  await up?.close();
  await new Promise((r) => tokenEndpoint?.close(r));
  await pki?.cleanup();
});

async function get(path: string): Promise<{ status: number; body: string }> {
  const r = await fetch(proxy.url(path), { headers: { authorization: 'Bearer the-user' } });
  return { status: r.status, body: await r.text() };
}

describe('privateKeyJwt with a certificate', () => {
  test('x5c: the chain in the header; the token endpoint verifies with its leaf and answers', async () => {
    const r = await get('/x5c');
    assert.equal(r.status, 200, r.body);
    assert.equal(JSON.parse(r.body).headers.authorization, 'Bearer tok-x5c');
    const last = seen.at(-1);
    assert.equal(last?.verified, true);
    assert.equal((last?.header.x5c as string[] | undefined)?.length, 1);
    assert.equal(last?.header['x5t#S256'], undefined);
  });

  test("x5t#S256: the leaf's thumbprint in the header", async () => {
    const r = await get('/x5t');
    assert.equal(r.status, 200, r.body);
    assert.equal(JSON.parse(r.body).headers.authorization, 'Bearer tok-x5t');
    assert.equal(seen.at(-1)?.header.x5c, undefined);
  });

  test('the config: a chain whose leaf is another key, a header without a certificate', () => {
    const other = pki.servers['gw.test'];
    assert.ok(other);
    const issues = (clientAuth: string) =>
      configIssues(
        `binds:\n- port: 8080\n  listeners:\n  - routes:\n    - backends:\n      - host: 127.0.0.1:1\n        policies:\n          backendAuth:\n            oauthTokenExchange: {host: "127.0.0.1:2", clientAuth: ${clientAuth}}\n`,
      );
    const base = `method: privateKeyJwt, clientId: c, assertionAudience: a, alg: ES256, signingKey: {file: ${JSON.stringify(pki.client.keyFile)}}`;
    assert.match(
      issues(`{${base}, certificate: {file: ${JSON.stringify(other.certFile)}}, certificateHeader: x5c}`),
      /clientAuth\.certificate\.file: the leaf certificate's key is not signingKey's/,
    );
    // a key that cannot sign with alg (RS256 by default; this one is P-256) is named at load
    assert.match(
      issues(`{${base.replace(', alg: ES256', '')}}`),
      /clientAuth\.signingKey: signingKey is an EC key on prime256v1; RS256 needs an RSA private key/,
    );
    assert.match(
      issues(`{${base}, certificateHeader: x5c}`),
      /clientAuth\.certificate: certificateHeader names a certificate: set certificate/,
    );
    assert.match(
      issues(`{${base}, certificate: {file: ${JSON.stringify(pki.client.certFile)}}}`),
      /clientAuth\.certificateHeader: certificate is sent in a header: set certificateHeader/,
    );
  });
});
