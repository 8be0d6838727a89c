// For tests that check what a data plane loads lazily: the modules a process of its own has loaded
// after compiling each of a series of configs (the test's process may have loaded them already).
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { serialize } from 'node:v8';
import { loadConfigText } from '../config/load.ts';
import { encodeSecrets } from '../secret.ts';

/**
 * Starts a process with a data plane's modules, compiles each standalone YAML config in turn and
 * returns, for each, the URLs of every module loaded by then (a resolve hook records them).
 */
export function modulesLoadedAfterEach(configs: readonly string[]): string[][] {
  const irs = configs.map((yaml) =>
    serialize(encodeSecrets(loadConfigText('x.yaml', yaml, process.cwd()).ir)).toString('base64'),
  );
  const script = `
    import { registerHooks } from 'node:module';
    import { deserialize } from 'node:v8';
    const loaded = [];
    registerHooks({ resolve: (spec, ctx, next) => { const r = next(spec, ctx); loaded.push(r.url); return r; } });
    const { decodeSecrets } = await import('./packages/proxy/src/secret.ts');
    const { compileTable } = await import('./packages/proxy/src/routing/table.ts');
    await import('./packages/proxy/src/server/data-plane-port.ts');
    const after = [];
    for (const b64 of ${JSON.stringify(irs)}) {
      compileTable(decodeSecrets(deserialize(Buffer.from(b64, 'base64'))), null);
      after.push([...loaded]);
    }
    console.log(JSON.stringify(after));
  `;
  const out = execFileSync(
    process.execPath,
    ['--disable-warning=ExperimentalWarning', '--input-type=module', '-e', script],
    { cwd: join(import.meta.dirname, '../../../..'), encoding: 'utf8' },
  );
  return JSON.parse(out.trim().split('\n').at(-1) ?? '[]') as string[][];
}
