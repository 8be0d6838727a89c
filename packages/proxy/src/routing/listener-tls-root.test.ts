// A listener's client CA file (tls.root) with no certificate in it: Node would take it, and every
// client's handshake would then fail, certificate or not. The config is refused when it is compiled,
// which --validate-only, the start and every reload do first.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { makeTestPki, type TestPki } from '@gw/testkit';
import { loadAndCompile } from '../config/load-and-compile.ts';

let pki: TestPki;

before(async () => {
  pki = await makeTestPki(['gw.test']);
});
after(async () => {
  await pki?.cleanup();
});

async function configWithRoot(root: string): Promise<string> {
  const server = pki.servers['gw.test'];
  const file = join(pki.dir, `cfg-${Math.random().toString(36).slice(2)}.yaml`);
  await writeFile(
    file,
    `binds:
- port: 0
  listeners:
  - protocol: HTTPS
    tls: {cert: ${JSON.stringify(server?.certFile)}, key: ${JSON.stringify(server?.keyFile)}, root: ${JSON.stringify(root)}}
    routes: [{policies: {directResponse: {status: 200, body: x}}}]
`,
  );
  return file;
}

test('a tls.root with no certificate in it is refused; one with the CA loads', async () => {
  const empty = join(pki.dir, 'no-cert.pem');
  await writeFile(empty, 'not a certificate\n');
  await assert.rejects(
    loadAndCompile(await configWithRoot(empty)),
    /cfg-\w+\.yaml:5:\d+: binds\[0\]\.listeners\[0\]\.tls\.root: no CA certificate in it \(PEM "-----BEGIN CERTIFICATE-----" blocks\)/,
  );
  const keyOnly = pki.servers['gw.test']?.keyFile as string;
  await assert.rejects(loadAndCompile(await configWithRoot(keyOnly)), /tls\.root: no CA certificate/);
  const loaded = await loadAndCompile(await configWithRoot(pki.caFile));
  assert.ok(loaded.ir.binds[0]?.listeners[0]?.tls?.root?.includes('BEGIN CERTIFICATE'));
});
