// Keeps heavy modules out of every worker thread. Each worker is its own V8 isolate and loads what
// its static imports reach: the config schemas (zod, yaml: about 10 MiB a worker), the AWS signer,
// the profiler, gRPC, the protobuf code and the htpasswd hashers must stay behind a dynamic import
// (a Lazy) or in the main thread. A failure names the import chain that pulls the module in.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { build, type Metafile } from 'esbuild';

const root = join(import.meta.dirname, '../../../..');
const ENTRY = 'packages/proxy/src/server/worker.ts';
/** npm packages (by name or prefix) and workspace files a worker must not import statically. */
const FORBIDDEN_PACKAGES = [
  'zod',
  'yaml',
  '@smithy/',
  '@aws-sdk/',
  '@datadog/pprof',
  'google-auth-library',
  '@azure/',
  '@grpc/grpc-js',
  '@bufbuild/protobuf',
  'fastify',
  '@kubernetes/client-node',
  // the OpenTelemetry SDK and exporters: 22-30 MiB a worker, loaded when a config has tracing
  '@opentelemetry/',
  // the htpasswd hashers: about 1.3 MiB a worker, loaded when a config has basicAuth
  'bcryptjs',
  'apache-md5',
  'apache-crypt',
];
const FORBIDDEN_FILES = [
  /^packages\/api\/src\/index\.ts$/,
  /^packages\/api\/src\/config\/schema\.ts$/,
  /^packages\/xds-proto\//,
];

function externals(): string[] {
  const out: string[] = [];
  for (const pkg of ['proxy', 'api', 'xds-proto', 'guardrail-sdk']) {
    const manifest = JSON.parse(readFileSync(join(root, 'packages', pkg, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
    };
    for (const dep of Object.keys(manifest.dependencies ?? {}))
      if (!dep.startsWith('@gw/')) out.push(dep, `${dep}/*`);
  }
  return out;
}

function forbidden(path: string, external: boolean): boolean {
  if (external)
    return FORBIDDEN_PACKAGES.some((p) =>
      p.endsWith('/') ? path.startsWith(p) : path === p || path.startsWith(`${p}/`),
    );
  return FORBIDDEN_FILES.some((re) => re.test(path));
}

test('a worker thread statically imports no config schemas, signer, profiler, gRPC, protobuf, OpenTelemetry or htpasswd hashing code', async () => {
  const { metafile } = (await build({
    absWorkingDir: root,
    entryPoints: [ENTRY],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'node',
    metafile: true,
    splitting: true,
    outdir: join(root, 'node_modules', '.cache', 'worker-imports'),
    external: externals(),
    logLevel: 'silent',
  })) as { metafile: Metafile };
  // Breadth-first over static imports only: a dynamic import() is the sanctioned way to load later.
  const parent = new Map<string, string | null>([[ENTRY, null]]);
  const queue = [ENTRY];
  const found: string[] = [];
  while (queue.length > 0) {
    const file = queue.shift() as string;
    for (const im of metafile.inputs[file]?.imports ?? []) {
      if (im.kind !== 'import-statement') continue;
      if (forbidden(im.path, im.external === true)) {
        const chain = [im.path];
        for (let c: string | null | undefined = file; c; c = parent.get(c)) chain.unshift(c);
        found.push(chain.join('\n    > '));
        continue;
      }
      if (im.external || parent.has(im.path)) continue;
      parent.set(im.path, file);
      queue.push(im.path);
    }
  }
  assert.deepEqual(
    found,
    [],
    `import these lazily (lazy.ts) or from a schema-free module (@gw/api/runtime):\n  ${found.join('\n  ')}`,
  );
});
