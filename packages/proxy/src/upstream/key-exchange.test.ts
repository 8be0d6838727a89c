// backendTLS.keyExchangeGroups against real TLS servers each restricted to one group: the handshake
// succeeds when the group is offered and fails (502, a TLS error) when it is not; a group the TLS
// library lacks is a config error naming it.
import assert from 'node:assert/strict';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { createSecureContext } from 'node:tls';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { makeTestPki, type TestPki } from '@gw/testkit/tls';

let pki: TestPki;
const servers = new Map<string, https.Server>();
const proxies: TestProxy[] = [];
/** Node 24's OpenSSL 3.5 has the post-quantum hybrid; an older one does not. */
const hasMlkem = (() => {
  try {
    createSecureContext({ ecdhCurve: 'X25519MLKEM768' });
    return true;
  } catch {
    return false;
  }
})();

before(async () => {
  pki = await makeTestPki(['backend.internal']);
  const cert = pki.servers['backend.internal'];
  assert.ok(cert);
  for (const group of ['P-384', 'X25519', ...(hasMlkem ? ['X25519MLKEM768'] : [])]) {
    const s = https.createServer({ cert: cert.cert, key: cert.key, ecdhCurve: group }, (_req, res) =>
      res.end(`ok over ${group}`),
    );
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    servers.set(group, s);
  }
});
after(async () => {
  for (const p of proxies) await p.close();
  for (const s of servers.values()) await new Promise((r) => s.close(r));
  await pki.cleanup();
});

async function through(server: string, groups: string): Promise<Response> {
  const port = (servers.get(server)?.address() as AddressInfo | undefined)?.port;
  const p = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - backends:
      - host: "127.0.0.1:${port}"
        policies:
          backendTLS: {root: {file: ${JSON.stringify(pki.caFile)}}, hostname: backend.internal, keyExchangeGroups: ${groups}}
`);
  proxies.push(p);
  return fetch(p.url('/'));
}

test('the handshake succeeds with a group the server accepts', async () => {
  const r = await through('P-384', '[X25519, P-384]');
  assert.equal(r.status, 200);
  assert.equal(await r.text(), 'ok over P-384');
});

test('it fails with a TLS error when no offered group is the server’s', async () => {
  const r = await through('P-384', '[X25519, P-256]');
  assert.equal(r.status, 502);
  assert.match(await r.text(), /TLS/i);
});

test('X25519_MLKEM768 (the post-quantum hybrid) where the TLS library has it', {
  skip: !hasMlkem,
}, async () => {
  const r = await through('X25519MLKEM768', '[X25519_MLKEM768]');
  assert.equal(r.status, 200);
  assert.equal(await r.text(), 'ok over X25519MLKEM768');
  const refused = await through('X25519', '[X25519_MLKEM768]');
  assert.equal(refused.status, 502);
  await refused.text();
});

test('an unknown group is a config error naming the field', async () => {
  await assert.rejects(through('X25519', '[X448]'), /keyExchangeGroups\[0\]: Invalid option/);
});
