// Bundles the proxy (cli, worker and config-loader entries plus the workspace packages they import)
// into plain JavaScript under packages/proxy/dist, which bin/gw and the proxy image run. Node strips
// TypeScript types with a WebAssembly module that costs about 17 MiB of RSS in every thread that loads
// a .ts file (the main thread and each worker); plain JavaScript costs none of it, and one file per
// entry loads faster than some 400 modules. npm dependencies stay external and load from node_modules.
//
//   node hack/bundle.ts             build now
//   node hack/bundle.ts --if-stale  build only when a source file is newer than the last build
//
// Chunks are content-hashed and old ones are kept for a day, so a proxy already running from dist
// keeps finding the lazily loaded chunks it was built with; a build removes the chunks no build has
// written for a day (they would otherwise pile up, one set per source change), and `make clean` the
// directory.
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { build, type Plugin } from 'esbuild';

const root = join(import.meta.dirname, '..');
const packages = join(root, 'packages');
export const DIST = join(packages, 'proxy', 'dist');
const STAMP = join(DIST, '.stamp');
/** The workspace packages the proxy's code reaches; their npm dependencies stay external. */
const BUNDLED = ['proxy', 'api', 'xds-proto', 'guardrail-sdk'];

/** The newest modification time (ms) of a non-test source file the bundle is made of. */
function newestSource(): number {
  let newest = statSync(import.meta.filename).mtimeMs;
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.ts') && !e.name.endsWith('.test.ts'))
        newest = Math.max(newest, statSync(p).mtimeMs);
    }
  };
  for (const pkg of BUNDLED) {
    walk(join(packages, pkg, 'src'));
    newest = Math.max(newest, statSync(join(packages, pkg, 'package.json')).mtimeMs);
  }
  return newest;
}

function externals(): string[] {
  const out = new Set<string>();
  for (const pkg of BUNDLED) {
    const manifest = JSON.parse(readFileSync(join(packages, pkg, 'package.json'), 'utf8')) as Record<
      string,
      Record<string, string> | undefined
    >;
    for (const field of ['dependencies', 'optionalDependencies', 'peerDependencies']) {
      for (const dep of Object.keys(manifest[field] ?? {})) {
        if (!dep.startsWith('@gw/')) out.add(dep).add(`${dep}/*`);
      }
    }
  }
  return [...out];
}

/**
 * `node:http` taken with process.getBuiltinModule, its plain values re-exported one by one. An ESM
 * import of node:http reads every export to build the module's namespace, lazy getters included:
 * `WebSocket`, `CloseEvent` and `MessageEvent` load Node's internal copy of undici (fetch, WebSocket;
 * some 760 KB of source), which the proxy never uses. That cost 13 MiB of RSS in a bare process, paid
 * by the main thread and by every worker. The shim leaves those getters out (an import of one fails
 * the build). Named exports, not `module.exports`: esbuild's CommonJS interop would read each use
 * through a getter, on the request path too.
 */
export function nodeHttpShim(http: object): string {
  const lines = ["const http = process.getBuiltinModule('node:http');", 'export default http;'];
  for (const name of Object.getOwnPropertyNames(http).sort()) {
    const d = Object.getOwnPropertyDescriptor(http, name);
    if (!d || !('value' in d) || name === 'default' || !/^[A-Za-z_$][\w$]*$/.test(name)) continue;
    lines.push(`export const ${name} = http.${name};`);
  }
  return `${lines.join('\n')}\n`;
}

const lazyNodeHttp: Plugin = {
  name: 'lazy-node-http',
  setup(b) {
    b.onResolve({ filter: /^(node:)?http$/ }, () => ({ path: 'node:http', namespace: 'gw-builtin' }));
    b.onLoad({ filter: /.*/, namespace: 'gw-builtin' }, () => ({
      contents: nodeHttpShim(process.getBuiltinModule('node:http')),
      loader: 'js',
    }));
  },
};

export async function bundle(): Promise<void> {
  const started = Date.now();
  mkdirSync(DIST, { recursive: true });
  const result = await build({
    absWorkingDir: root,
    metafile: true,
    entryPoints: {
      gw: 'packages/proxy/src/cli.ts',
      'gw-worker': 'packages/proxy/src/server/worker.ts',
      'gw-config-loader': 'packages/proxy/src/config/loader-process.ts',
      // The CEL library and environment, which cel/cel.ts loads with the first expression it compiles.
      'gw-cel': 'packages/api/src/cel/environment.ts',
      // The ai, mcp and a2a backend kinds, which upstream/backends/registry.ts loads with the first
      // config that has one.
      'gw-agent': 'packages/proxy/src/upstream/backends/agent.ts',
    },
    outdir: DIST,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node24',
    external: externals(),
    plugins: [lazyNodeHttp],
    sourcemap: 'linked',
    // No keepNames: it wraps every function and class the bundle creates in a defineProperty call,
    // closures made per request included (1.5% of a worker's CPU on the plain path). Error classes
    // set their own name.
    legalComments: 'none',
    logLevel: 'warning',
  });
  for (const out of Object.keys(result.metafile.outputs)) {
    if (!out.endsWith('.js')) continue;
    const file = join(root, out);
    const text = readFileSync(file, 'utf8');
    const latin1 = toLatin1(text);
    if (latin1 !== text) writeFileSync(file, latin1);
  }
  writeFileSync(join(DIST, 'package.json'), '{ "type": "module" }\n');
  const written = new Set(Object.keys(result.metafile.outputs).map((p) => join(root, p)));
  removeOldChunks(DIST, written, started - KEEP_MS);
  // The stamp carries the build's start time: a source saved during the build is newer and rebuilds.
  writeFileSync(STAMP, '');
  utimesSync(STAMP, started / 1000, started / 1000);
}

/** ASCII stand-ins, one UTF-16 unit each, for the punctuation the sources' comments use most. */
const STAND_INS: Record<string, string> = {
  '—': '-',
  '–': '-',
  '→': '>',
  '←': '<',
  '…': '.',
  '≤': '<',
  '≥': '>',
};

/**
 * `text` with every character past U+00FF in its comment lines replaced by one of the same UTF-16
 * length, so columns and the source map stay right. V8 keeps a module's source for as long as the
 * module lives, one byte per character while every character fits in Latin-1 and two bytes otherwise:
 * a single arrow in a comment doubled a 460 KB chunk in every thread. esbuild escapes such characters
 * in strings (its ASCII charset) but not in comments or regular expression literals; a line of code is
 * left as it is.
 */
export function toLatin1(text: string): string {
  return text.replace(/^[ \t]*(?:\/\/|\/\*|\*).*[^\u0000-\u00ff].*$/gmu, (line) =>
    line.replace(/[^\u0000-\u00ff]/gu, (c) => STAND_INS[c] ?? '?'.repeat(c.length)),
  );
}

/** How long a chunk no build writes any more is kept for proxies started from an older build. */
const KEEP_MS = 24 * 60 * 60 * 1000;

/**
 * Deletes the JavaScript files (and their maps) in `dir` that are not among the `written` paths and
 * were last written before `before` (ms): the shared and lazily loaded chunks of older builds. Returns
 * the names removed.
 */
export function removeOldChunks(dir: string, written: ReadonlySet<string>, before: number): string[] {
  const removed: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (!/\.js(\.map)?$/.test(name) || written.has(p) || statSync(p).mtimeMs >= before) continue;
    rmSync(p, { force: true });
    removed.push(name);
  }
  return removed;
}

export function stale(): boolean {
  return !existsSync(STAMP) || newestSource() > statSync(STAMP).mtimeMs;
}

if (import.meta.main) {
  if (!process.argv.includes('--if-stale') || stale()) {
    try {
      await bundle();
    } catch (err) {
      // esbuild has printed the file and line; the caller falls back to running the sources.
      process.exitCode = 1;
      if (!(err instanceof Error && 'errors' in err)) console.error(err);
    }
  }
}
