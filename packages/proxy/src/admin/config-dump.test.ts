import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ConfigDump } from '@gw/api';
import { makeTestPki, type TestPki } from '@gw/testkit';
import { loadConfigText } from '../config/load.ts';
import { decodeSecrets, encodeSecrets, Secret } from '../secret.ts';
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

describe('credentials never appear in the dump', () => {
  const examples = join(import.meta.dirname, '../../../../examples');
  const env: Record<string, string> = {
    OPS_API_KEY: 'sk-ops-live-7f3a9c',
    EXPORT_API_KEY: 'sk-export-live-1b2d4e',
    REPORTS_TOKEN: 'upstream-live-token-5e6f',
  };
  const bcrypt = '$2y$05$bM7LpvyWozDYWUaGtsyRB.fAZIfJMjb498gcwbvX9z6WD0P1CcusW';
  const keyHash = 'ef64b764febd08947d7718639b201523033ce0dc0dc1310df92a0fbab72df9d7';

  const dumpOf = (e: Record<string, string | undefined>) => {
    const text = readFileSync(join(examples, 'policies.yaml'), 'utf8');
    const { ir, startup } = loadConfigText('policies.yaml', text, examples, (n) => e[n]);
    return JSON.stringify(configDump(supervisorWith(ir, [ir.version]), startup, undefined));
  };

  test('examples/policies.yaml: API keys (object and list form), key hashes, htpasswd hashes, upstream tokens', () => {
    for (const [name, e] of [
      ['from the environment', env],
      ['the defaults', {}],
    ] as const) {
      const text = dumpOf(e);
      const secrets = [
        ...Object.values(env),
        'example-ops-key',
        'example-export-key',
        'example-upstream-token',
        keyHash,
        keyHash.slice(0, 16),
        bcrypt,
        bcrypt.slice(7, 29),
      ];
      for (const s of secrets) assert.ok(!text.includes(s), `${name}: ${s} leaked into the dump`);
      const policies = (JSON.parse(text) as ConfigDump).policies;
      const byRoute = (suffix: string) =>
        policies.find((p) => 'route' in p.target && p.target.route.endsWith(suffix))?.policy;
      assert.deepEqual(byRoute('/files-admin')?.apiKey, {
        keys: {
          ops: { key: '[redacted]', metadata: { team: 'ops' } },
          ci: { keyHash: '[redacted]' },
        },
      });
      assert.deepEqual((byRoute('/export')?.apiKey as { keys: unknown } | undefined)?.keys, ['[redacted]']);
      assert.deepEqual((byRoute('/reports')?.basicAuth as { users: unknown } | undefined)?.users, [
        '[redacted]',
      ]);
      assert.deepEqual(byRoute('/reports')?.requestHeaderModifier, { set: { authorization: '<redacted>' } });
    }
  });

  test('an htpasswd text and a header modifier for x-api-key or cookie are redacted too', () => {
    const { ir, startup } = loadConfigText(
      'test.yaml',
      `binds:
- port: 0
  listeners:
  - routes:
    - policies:
        basicAuth: {htpasswd: "bob:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g="}
        requestHeaderModifier: {set: {x-api-key: upstream-key-1}, add: {cookie: "session=upstream-cookie-2"}}
      backends: [{host: "127.0.0.1:9"}]
`,
      process.cwd(),
    );
    const text = JSON.stringify(configDump(supervisorWith(ir, [ir.version]), startup, undefined));
    for (const s of ['W6ph5Mm5Pz8GgiULbPgzG37mj9g=', 'upstream-key-1', 'upstream-cookie-2'])
      assert.ok(!text.includes(s), `${s} leaked into the dump`);
  });

  test("a listener's gateway-phase policies are listed, before its routes', redacted", () => {
    const { ir, startup } = loadConfigText(
      'test.yaml',
      `binds:
- port: 0
  listeners:
  - gatewayName: edge
    name: main
    routes: [{name: r, policies: {cors: {allowOrigins: ["*"]}}, backends: [{host: "127.0.0.1:9"}]}]
policies:
- {phase: gateway, target: {listener: edge/main}, policy: {apiKey: {keys: [{key: gateway-key-1}]}}}
`,
      process.cwd(),
    );
    const dump = configDump(supervisorWith(ir, [ir.version]), startup, undefined);
    assert.ok(!JSON.stringify(dump).includes('gateway-key-1'));
    assert.deepEqual(
      dump.policies.map((p) => [p.target, 'phase' in p ? p.phase : 'route', Object.keys(p.policy)]),
      [
        [{ listener: 'edge/main' }, 'gateway', ['apiKey']],
        [{ route: 'edge/main/r' }, 'route', ['cors']],
      ],
    );
  });

  test('the IR still crosses worker threads: keys survive encodeSecrets/decodeSecrets and a structured clone', () => {
    const text = readFileSync(join(examples, 'policies.yaml'), 'utf8');
    const { ir } = loadConfigText('policies.yaml', text, examples, (n) => env[n]);
    const copy = decodeSecrets(structuredClone(encodeSecrets(ir))) as typeof ir;
    const route = copy.binds[0]?.listeners[0]?.routes.find((r) => r.name === 'files-admin');
    const keys = route?.policies.apiKey?.keys as Record<string, { key: Secret }>;
    assert.ok(keys.ops?.key instanceof Secret);
    assert.equal(keys.ops.key.reveal(), env.OPS_API_KEY);
  });
});
