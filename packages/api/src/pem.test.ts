// A client CA file (tls.root) must hold a certificate: one without any, or with one that does not
// parse, is refused (Node would take it, and the listener would then refuse every client).
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { makeTestPki } from '@gw/testkit';
import { caCertificatesProblem } from './pem.ts';

test('CA certificate files', async () => {
  const pki = await makeTestPki(['gw.test']);
  try {
    const ca = await readFile(pki.caFile, 'utf8');
    const key = await readFile(pki.servers['gw.test']?.keyFile as string, 'utf8');
    assert.equal(caCertificatesProblem(ca), undefined);
    assert.equal(caCertificatesProblem(`# bundle\n${ca}${ca}`), undefined);
    const none = 'no CA certificate in it (PEM "-----BEGIN CERTIFICATE-----" blocks)';
    assert.equal(caCertificatesProblem(''), none);
    assert.equal(caCertificatesProblem('garbage\n'), none);
    assert.equal(caCertificatesProblem(key), none);
    assert.match(
      caCertificatesProblem(`${ca}-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n`) ?? '',
      /^certificate 2 in it does not parse/,
    );
  } finally {
    await pki.cleanup();
  }
});
