// Runs every test file with node's test runner: unit tests beside the code, e2e suites, examples and
// the bench's and the build scripts' own checks.
import { spawnSync } from 'node:child_process';
import { globSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const patterns = [
  'packages/*/src/**/*.test.ts',
  'packages/*/test/**/*.test.ts',
  'e2e/**/*.test.ts',
  'examples/**/*.test.ts',
  'bench/**/*.test.ts',
  'hack/*.test.ts',
];
const only = process.argv.slice(2);
const files = only.length > 0 ? only : patterns.flatMap((p) => globSync(p, { cwd: root })).sort();
if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}
const r = spawnSync(
  process.execPath,
  [
    '--disable-warning=ExperimentalWarning',
    '--test',
    '--test-concurrency=2',
    '--test-timeout=120000',
    // not --test-force-exit: it cuts files' reports short; this fails a file that will not exit
    `--import=${join(root, 'hack/test-exit-watchdog.ts')}`,
    ...files,
  ],
  { cwd: root, stdio: 'inherit', env: { ...process.env, GW_TEST: '1' } },
);
process.exit(r.status ?? 1);
