// Regenerates every generated file from its source; with --check, fails when a committed file is stale.
// Today: schema/config.json (the standalone config's JSON Schema) from packages/api.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { configJsonSchema } from '@gw/api/config/json-schema';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const check = process.argv.includes('--check');

const outputs: { path: string; content: string }[] = [
  { path: join(root, 'schema/config.json'), content: `${JSON.stringify(configJsonSchema(), null, 2)}\n` },
];

let stale = 0;
for (const o of outputs) {
  let current: string | undefined;
  try {
    current = readFileSync(o.path, 'utf8');
  } catch {
    current = undefined;
  }
  if (current === o.content) continue;
  if (check) {
    stale++;
    console.error(`stale generated file: ${relative(root, o.path)} (run make gen and commit the result)`);
  } else {
    writeFileSync(o.path, o.content);
    console.log(`wrote ${relative(root, o.path)}`);
  }
}
if (stale > 0) process.exit(1);
if (check) console.log(`generated files are fresh (${outputs.length} checked)`);
