import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ConfigDump } from '@gw/api';
import { makeTestPki, type TestPki } from '@gw/testkit';
import { loadConfigText } from '../config/load.ts';
import type { Supervisor } from '../server/supervisor.ts';
import { configDump } from './config-dump.ts';

let pki: TestPki;
before(async () => {
  pki = await makeTestPki(['secure.test']);
});
after(async () => {
  await pki?.cleanup();
});

const file = (path: string) => `{ file: ${JSON.stringify(path)} }`;

function yaml(): string {
  const server = pki.servers['secure.test'];
  assert.ok(server);
  return `config:
  adminAddr: 127.0.0.1:0
frontendPolicies:
  accessLog: { filter: 'request.path != "/quiet"' }
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - name: plain
    routes:
    - name: up
      hostnames: [a.example]
      matches: [{ path: { pathPrefix: /up }, headers: [{ name: x-v, value: { exact: "1" } }] }]
      policies:
        requestHeaderModifier: { set: { authorization: secret-value } }
        localRateLimit: [{ maxTokens: 5, tokensPerFill: 1, fillInterval: 1s }]
      backends:
      - host: 127.0.0.1:9
        weight: 3
        policies:
          backendTLS: { cert: ${file(pki.client.certFile)}, key: ${file(pki.client.keyFile)}, root: ${file(pki.caFile)} }
    - name: quiet
      policies:
        directResponse: { status: 200, body: "shh" }
- port: 0
  address: 127.0.0.1
  listeners:
  - name: secure
    protocol: HTTPS
    tls: { cert: ${file(server.certFile)}, key: ${file(server.keyFile)} }
    routes:
    - name: hello
      policies:
        directResponse: { status: 200 }
`;
}

/** The parts of a Supervisor the dump reads. */
const supervisorWith = (ir: Supervisor['ir'], versions: (string | undefined)[]) =>
  ({
    ir,
    ports: {},
    workers: versions.map((version, index) => ({ index, version })),
  }) as unknown as Supervisor;

test('the dump is exactly what the shared ConfigDump schema describes, nothing more or less', () => {
  const { ir, startup } = loadConfigText('test.yaml', yaml(), process.cwd());
  const dump = configDump(supervisorWith(ir, [ir.version, undefined]), startup, 'bad reload');
  assert.deepEqual(ConfigDump.parse(dump), dump);
  assert.equal(dump.lastReloadError, 'bad reload');
  assert.equal(dump.binds[1]?.listeners[0]?.tls?.key, '[redacted]');
  assert.equal(dump.backends[0]?.target.kind, 'host');
  assert.deepEqual(dump.workers, [{ index: 0, version: ir.version }, { index: 1 }]);
});

test('before the first config the dump still has the shared shape', () => {
  const { startup } = loadConfigText('test.yaml', yaml(), process.cwd());
  const dump = configDump(supervisorWith(undefined, [undefined]), startup, undefined);
  assert.deepEqual(ConfigDump.parse(dump), dump);
  assert.equal(dump.version, undefined);
  assert.deepEqual(dump.routes, []);
});
