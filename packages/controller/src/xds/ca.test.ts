// The xDS CA's certificates as OpenSSL reads them (Node's X509Certificate) and as a TLS client checks
// them: a CA, a serving certificate it signed for DNS names and IP addresses, and a handshake that
// verifies against the CA alone.
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import tls from 'node:tls';
import { generateCa, issueServing, servingNames } from './ca.ts';

test('the CA is a CA; the serving certificate is not, carries its names and is signed by the CA', () => {
  const now = new Date('2026-03-01T00:00:00Z');
  const ca = generateCa(now);
  const caCert = new X509Certificate(ca.cert);
  assert.equal(caCert.ca, true);
  assert.equal(caCert.subject, 'CN=gw xDS CA');
  assert.ok(caCert.verify(caCert.publicKey), 'self-signed');
  assert.ok(new Date(caCert.validTo).getTime() - now.getTime() > 3600 * 86_400_000 * 0.99);

  const serving = issueServing(ca, ['gw.gw-system.svc', 'gw', '127.0.0.1', '::1'], now);
  const [leafPem] =
    serving.certChain.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n/g) ?? [];
  const leaf = new X509Certificate(leafPem as string);
  assert.equal(leaf.ca, false);
  assert.ok(leaf.checkIssued(caCert));
  assert.ok(leaf.verify(caCert.publicKey));
  assert.equal(leaf.checkHost('gw.gw-system.svc'), 'gw.gw-system.svc');
  assert.equal(leaf.checkHost('gw'), 'gw');
  assert.equal(leaf.checkHost('other.gw-system.svc'), undefined);
  assert.equal(leaf.checkIP('127.0.0.1'), '127.0.0.1');
  assert.equal(leaf.checkIP('::1'), '::1');
  assert.deepEqual(leaf.keyUsage, ['1.3.6.1.5.5.7.3.1']);
  assert.equal(new Date(leaf.validFrom).getTime(), now.getTime() - 3_600_000);
  // serial numbers differ
  assert.notEqual(
    leaf.serialNumber,
    new X509Certificate(issueServing(ca, ['a'], now).certChain).serialNumber,
  );
});

test('a TLS client that trusts only the CA completes a handshake with the serving certificate', async () => {
  const ca = generateCa();
  const serving = issueServing(ca, servingNames('https://127.0.0.1:9978', 'cluster.local'));
  const server = tls.createServer({ cert: serving.certChain, key: serving.key }, (s) => s.end('ok'));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  try {
    const socket = tls.connect({ host: '127.0.0.1', port, ca: ca.cert });
    await once(socket, 'secureConnect');
    assert.equal(socket.authorized, true);
    socket.destroy();
    // another CA is refused
    const stranger = tls.connect({ host: '127.0.0.1', port, ca: generateCa().cert });
    const [err] = (await once(stranger, 'error')) as [Error & { code?: string }];
    assert.match(String(err.code), /UNABLE_TO_VERIFY|SELF_SIGNED|CERT/);
  } finally {
    server.close();
  }
});

test('servingNames: a Service address gets its in-cluster spellings, anything else just its host', () => {
  assert.deepEqual(servingNames('https://gw.gw-system.svc:9978', 'cluster.local'), [
    'gw.gw-system.svc',
    'gw',
    'gw.gw-system',
    'gw.gw-system.svc.cluster.local',
  ]);
  assert.deepEqual(servingNames('https://gw.gw-system.svc.example.org:9978', 'example.org'), [
    'gw.gw-system.svc.example.org',
    'gw',
    'gw.gw-system',
    'gw.gw-system.svc',
  ]);
  assert.deepEqual(servingNames('https://127.0.0.1:9978', 'cluster.local'), ['127.0.0.1']);
  assert.deepEqual(servingNames('https://[::1]:9978', 'cluster.local'), ['::1']);
});
