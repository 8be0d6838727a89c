// Keeps heavy modules out of the threads that live as long as the proxy. Each thread is its own V8
// isolate and keeps what its static imports reach. A data-plane worker must not load the config
// schemas (zod, yaml: about 10 MiB a worker), the AWS signer, the profiler, gRPC, the protobuf code or
// the htpasswd hashers but behind a dynamic import (a Lazy). The main thread, which supervises, serves
// the admin ports and hands configs to the workers, must not load the config schemas or the code that
// compiles a config either: a short-lived process does that (config/loader.ts). A failure names the
// import chain that pulls the module in.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { build, type Metafile } from 'esbuild';

const root = join(import.meta.dirname, '../../../..');
/** npm packages (by name or prefix) and workspace files a worker must not import statically. */
const WORKER_PACKAGES: (string | RegExp)[] = [
  // undici's index (its fetch, WebSocket, cache and mock layers: 5.8 MiB of V8 heap in a thread):
  // upstream/undici.ts loads the dispatcher modules gw uses by path
  /^undici$/,
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
  // the CEL library: cel/cel.ts loads it with the first expression compiled
  '@marcbachmann/cel-js',
];
const WORKER_FILES = [
  /^packages\/api\/src\/index\.ts$/,
  /^packages\/api\/src\/config\/schema\.ts$/,
  /^packages\/xds-proto\//,
  // the agent backend kinds (LLM, MCP, A2A): upstream/backends/registry.ts loads them with the first
  // config that has one. What the core shares with them stays: usage accounting for the token rate
  // limits, the SigV4 signer's wrapper, the MCP log hook and the A2A outcome the access log names.
  /^packages\/proxy\/src\/upstream\/backends\/(ai|mcp|a2a|agent)[/.]/,
  /^packages\/proxy\/src\/llm\/(?!usage\.ts$|providers\/bedrock\/sigv4\.ts$)/,
  /^packages\/proxy\/src\/mcp\/(?!log\.ts$)/,
  /^packages\/proxy\/src\/a2a\/(?!info\.ts$)/,
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

/**
 * What the main thread must not import statically, on top of the workers' list: the CEL library, jose
 * and undici belong to the data plane, and the files below load and compile a config.
 */
const MAIN_PACKAGES = [...WORKER_PACKAGES.filter((p) => p !== 'fastify'), 'jose', 'undici'];
const MAIN_FILES = [
  ...WORKER_FILES,
  /^packages\/proxy\/src\/config\/load\.ts$/,
  /^packages\/proxy\/src\/routing\/table\.ts$/,
  /^packages\/proxy\/src\/policies\/registry\.ts$/,
  /^packages\/proxy\/src\/upstream\/backends\/registry\.ts$/,
  /^packages\/proxy\/src\/server\/data-plane\.ts$/,
];

/** The import chains from `entry` to a module it must not import statically, one string each. */
async function forbiddenImports(
  entry: string,
  packages: (string | RegExp)[],
  files: RegExp[],
): Promise<string[]> {
  const forbidden = (path: string, external: boolean): boolean =>
    external
      ? packages.some((p) =>
          typeof p !== 'string'
            ? p.test(path)
            : p.endsWith('/')
              ? path.startsWith(p)
              : path === p || path.startsWith(`${p}/`),
        )
      : files.some((re) => re.test(path));
  const { metafile } = (await build({
    absWorkingDir: root,
    entryPoints: [entry],
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
  const parent = new Map<string, string | null>([[entry, null]]);
  const queue = [entry];
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
  return found;
}

test('a worker thread statically imports no config schemas, signer, profiler, gRPC, protobuf, OpenTelemetry, htpasswd hashing or agent backend (LLM, MCP, A2A) code', async () => {
  const found = await forbiddenImports('packages/proxy/src/server/worker.ts', WORKER_PACKAGES, WORKER_FILES);
  assert.deepEqual(
    found,
    [],
    `import these lazily (lazy.ts) or from a schema-free module (@gw/api/runtime):\n  ${found.join('\n  ')}`,
  );
});

test('the main thread statically imports neither the config schemas and compiler nor the data plane', async () => {
  const found = await forbiddenImports('packages/proxy/src/cli.ts', MAIN_PACKAGES, MAIN_FILES);
  assert.deepEqual(
    found,
    [],
    `load these in the config loader (config/loader.ts) or behind a dynamic import:\n  ${found.join('\n  ')}`,
  );
});

test('the xDS client statically imports no config schema or compiler: the first config is built in the loader process', async () => {
  // gRPC and the generated xDS messages are what it is for.
  const needed = (p: string | RegExp) => p === '@grpc/grpc-js' || p === '@bufbuild/protobuf';
  const found = await forbiddenImports(
    'packages/proxy/src/xds-client/client.ts',
    MAIN_PACKAGES.filter((p) => !needed(p)),
    MAIN_FILES.filter((re) => !re.test('packages/xds-proto/')),
  );
  assert.deepEqual(
    found,
    [],
    `build configs in xds-client/build.ts, which the client imports when first needed:\n  ${found.join('\n  ')}`,
  );
});

test("the agent backends (LLM, MCP, A2A), loaded with the first config that has one, import undici's modules by path, not its index", async () => {
  const found = await forbiddenImports('packages/proxy/src/upstream/backends/agent.ts', [/^undici$/], []);
  assert.deepEqual(
    found,
    [],
    `import undici's dispatchers and request from upstream/undici.ts:\n  ${found.join('\n  ')}`,
  );
});
