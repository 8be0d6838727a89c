// The config loader process (config/loader.ts): what the main thread gets back for a good file, a bad
// one and the embedded default, across the process boundary.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { Secret } from '../secret.ts';
import type { ApiKeyIR } from './ir.ts';
import { buildXdsInChild, LoadError, loadInChild } from './loader.ts';

const dir = mkdtempSync(join(tmpdir(), 'gw-loader-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, text: string): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}

test('a file comes back as its IR, start-up settings, warnings and the memory its policies share', async () => {
  const p = file(
    'good.yaml',
    `config:
  adminAddr: 127.0.0.1:0
  workerThreads: 3
binds:
- port: 0
  listeners:
  - routes:
    - name: limited
      policies:
        apiKey: {keys: [k-secret-1]}
        localRateLimit: [{maxTokens: 5, tokensPerFill: 1, fillInterval: 1s}]
        directResponse: {status: 200, body: "$UNSET_BARE"}
`,
  );
  const loaded = await loadInChild(p);
  assert.equal(loaded.startup.workerThreads, 3);
  assert.equal(loaded.startup.adminAddr, '127.0.0.1:0');
  const route = loaded.ir.binds[0]?.listeners[0]?.routes[0];
  assert.ok(route);
  assert.equal(route.name, 'limited');
  // A credential crosses as a Secret again, not as the wire form it travelled in.
  const keys = (route.policies.apiKey as ApiKeyIR).keys as Secret[];
  assert.ok(keys[0] instanceof Secret);
  assert.equal(keys[0].reveal(), 'k-secret-1');
  assert.equal(loaded.policyMemory.length, 1);
  assert.ok((loaded.policyMemory[0]?.bytes ?? 0) > 0);
  assert.match(loaded.warnings.join('\n'), /good\.yaml:\d+:\d+: .*UNSET_BARE/);
});

test('a bad file is a LoadError naming the file, line and field', async () => {
  const p = file('bad.yaml', 'binds:\n- port: 0\n  listeners:\n  - routes:\n    - backends: [{host: 7}]\n');
  await assert.rejects(loadInChild(p), (err: Error) => {
    assert.ok(err instanceof LoadError);
    assert.match(
      err.message,
      /bad\.yaml:5:\d+: binds\[0\]\.listeners\[0\]\.routes\[0\]\.backends\[0\]\.host/,
    );
    return true;
  });
});

test('a file that cannot be read is a LoadError naming it, "-" included', async () => {
  await assert.rejects(loadInChild(join(dir, 'missing.yaml')), /missing\.yaml.*cannot read file/);
  // Not the default config: a file named "-" is a file like any other.
  await assert.rejects(
    loadInChild('-'),
    (err: Error) => err instanceof LoadError && /^-: cannot read file/.test(err.message),
  );
});

test('without a file the embedded default config loads', async () => {
  const loaded = await loadInChild(undefined);
  assert.equal(loaded.ir.binds[0]?.listeners[0]?.routes[0]?.name, 'hello');
});

test('xDS resources are built in the loader process: a config with its shared memory, or the issues under each resource name', async () => {
  const { fromJson, toBinary } = await import('@bufbuild/protobuf');
  const { ResourceSchema } = await import('@gw/xds-proto/gw/resource/v1/resource');
  const bytes = (json: unknown) => toBinary(ResourceSchema, fromJson(ResourceSchema, json as never));
  const origin = { address: 'http://controller:9978', gateway: 'ns/gw', baseDir: dir };
  const bind = bytes({
    bind: { port: 0, listeners: [{ name: 'ns/gw/http', gateway: 'ns/gw', protocol: 'HTTP' }] },
  });
  const route = (policies: unknown) =>
    bytes({
      route: {
        port: 0,
        listener: 'ns/gw/http',
        namespace: 'ns',
        name: 'web',
        matches: [{ path: { pathPrefix: '/' } }],
        policies,
      },
    });

  const good = await buildXdsInChild(
    new Map([
      ['bind/0', { bytes: bind }],
      [
        'route/0/ns/gw/http/ns/web/0',
        {
          bytes: route({
            localRateLimit: [{ maxTokens: 5, tokensPerFill: 1, fillInterval: '1s' }],
            directResponse: { status: 204 },
          }),
        },
      ],
    ]),
    origin,
  );
  const r = good.ir.binds[0]?.listeners[0]?.routes[0];
  assert.equal((r?.policies.directResponse as { status?: number } | undefined)?.status, 204);
  assert.equal(good.policyMemory.length, 1, 'the rate limit shares its buckets across workers');

  await assert.rejects(
    buildXdsInChild(
      new Map<string, { bytes: Uint8Array } | { error: string }>([
        ['bind/0', { bytes: bind }],
        ['route/0/ns/gw/http/ns/web/0', { bytes: route({ directResponse: { status: 99 } }) }],
        ['broken', { bytes: new Uint8Array([0xff, 0xff, 0xff]) }],
        ['foreign', { error: 'type type.googleapis.com/other' }],
      ]),
      origin,
    ),
    (err: Error) => {
      assert.ok(err instanceof LoadError, String(err));
      assert.match(err.message, /route\/0\/ns\/gw\/http\/ns\/web\/0.*status/);
      assert.match(err.message, /broken.*cannot decode/);
      assert.match(err.message, /foreign.*cannot decode: type type\.googleapis\.com\/other/);
      return true;
    },
  );
});
