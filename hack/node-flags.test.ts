// The node and V8 flags gw runs with are written twice: in bin/gw (the laptop and `make run`) and in
// the image's ENTRYPOINT (hack/docker/Dockerfile). They must be the same, and this Node must accept
// every one of them: a V8 flag renamed or dropped by a Node upgrade stops the proxy at start-up.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

const root = join(import.meta.dirname, '..');

/** The flags of bin/gw's `exec "$node" … "$entry" "$@"` line (continued lines joined). */
function launcherFlags(): string[] {
  const text = readFileSync(join(root, 'bin/gw'), 'utf8').replace(/\\\n\s*/g, ' ');
  const line = text.split('\n').find((l) => l.startsWith('exec "$node"'));
  assert.ok(line, 'bin/gw has no `exec "$node" …` line');
  const words = line.split(/\s+/).slice(2);
  const end = words.indexOf('"$entry"');
  assert.ok(end > 0, `bin/gw's exec line does not run "$entry": ${line}`);
  return words.slice(0, end);
}

/** The flags of the proxy image's exec-form ENTRYPOINT (the one running gw.js), between "node" and it. */
function imageFlags(): string[] {
  const text = readFileSync(join(root, 'hack/docker/Dockerfile'), 'utf8');
  const entrypoints = [...text.matchAll(/^ENTRYPOINT (\[.*\])$/gm)].map(
    (m) => JSON.parse(m[1] ?? '') as string[],
  );
  const argv = entrypoints.find((a) => a.at(-1)?.endsWith('/gw.js'));
  assert.ok(argv, 'the Dockerfile has no exec-form ENTRYPOINT running the proxy (…/gw.js)');
  assert.equal(argv[0], 'node');
  return argv.slice(1, -1);
}

test('bin/gw and the image run the proxy with the same node flags', () => {
  const flags = launcherFlags();
  assert.ok(flags.includes('--no-parallel-scavenge'), `bin/gw's flags: ${flags.join(' ')}`);
  assert.deepEqual(imageFlags(), flags);
});

test('this Node accepts every flag bin/gw passes', () => {
  const r = spawnSync(process.execPath, [...launcherFlags(), '-e', 'process.exit(0)'], { encoding: 'utf8' });
  assert.equal(r.status, 0, `node refused bin/gw's flags: ${r.stderr}`);
});
