import assert from 'node:assert/strict';
import { mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { tempDir } from '@gw/testkit/temp-dir';
import { watchFile } from './watch.ts';

const DEBOUNCE_MS = 100;
/** How long a change may take to arrive on a loaded machine before a test gives up on it. */
const PATIENCE_MS = 5000;
/** How long nothing more must happen once the expected callbacks have come. */
const QUIET_MS = 300;

const stops: (() => void)[] = [];
after(() => {
  for (const stop of stops) stop();
});

/** Watches `path` and counts the callbacks. */
function watching(path: string): { settle: (expected: number) => Promise<number> } {
  let n = 0;
  stops.push(watchFile(path, () => n++, DEBOUNCE_MS));
  return {
    // the count once it has reached `expected` (or patience ran out) and stayed quiet a while
    settle: async (expected) => {
      const until = Date.now() + PATIENCE_MS;
      while (n < expected && Date.now() < until) await sleep(10);
      await sleep(QUIET_MS);
      return n;
    },
  };
}

test('a plain file: an edit in place and a replacing rename call back once each; other files in the directory do not', async () => {
  const dir = tempDir('gw-watch-');
  const file = join(dir, 'config.yaml');
  writeFileSync(file, 'a: 1\n');
  const w = watching(file);

  writeFileSync(file, 'a: 2\n');
  assert.equal(await w.settle(1), 1, 'an edit in place');

  writeFileSync(join(dir, '.config.yaml.swp'), 'x');
  writeFileSync(join(dir, 'gw.log'), 'a line\n');
  assert.equal(await w.settle(1), 1, 'writes to other files in the directory');

  writeFileSync(join(dir, 'config.yaml.tmp'), 'a: 3\n');
  renameSync(join(dir, 'config.yaml.tmp'), file);
  assert.equal(await w.settle(2), 2, 'an editor writing a new file over the old one');
});

test('a Kubernetes ConfigMap volume: the ..data swap calls back, and so do edits where the links lead after it', async () => {
  // The layout the kubelet writes: config.yaml -> ..data/config.yaml, ..data -> ..<timestamp>.
  const dir = tempDir('gw-watch-cm-');
  const version = (n: number) => {
    mkdirSync(join(dir, `..v${n}`));
    writeFileSync(join(dir, `..v${n}`, 'config.yaml'), `version: ${n}\n`);
  };
  version(1);
  symlinkSync('..v1', join(dir, '..data'));
  symlinkSync('..data/config.yaml', join(dir, 'config.yaml'));
  const w = watching(join(dir, 'config.yaml'));

  // An update: the new version beside the old, ..data swapped in one rename, the old one removed.
  const swap = (n: number) => {
    version(n);
    symlinkSync(`..v${n}`, join(dir, '..data_tmp'));
    renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
    rmSync(join(dir, `..v${n - 1}`), { recursive: true });
  };
  swap(2);
  assert.equal(await w.settle(1), 1, 'the first swap');

  writeFileSync(join(dir, '..v2', 'config.yaml'), 'version: 2.1\n');
  assert.equal(await w.settle(2), 2, 'an edit of the file the links now lead to');

  swap(3);
  assert.equal(await w.settle(3), 3, 'the second swap');

  writeFileSync(join(dir, 'unrelated'), 'x');
  assert.equal(await w.settle(3), 3, 'a file in the directory that changes nothing the path leads to');
});

test('a link to a file in another directory: an edit of that file calls back', async () => {
  const dir = tempDir('gw-watch-link-');
  mkdirSync(join(dir, 'real'));
  mkdirSync(join(dir, 'etc'));
  const target = join(dir, 'real', 'gw.yaml');
  writeFileSync(target, 'a: 1\n');
  symlinkSync(target, join(dir, 'etc', 'gw.yaml'));
  const w = watching(join(dir, 'etc', 'gw.yaml'));

  writeFileSync(target, 'a: 2\n');
  assert.equal(await w.settle(1), 1);
});

test('a plain file in a linked directory: an edit calls back, other files in the directory do not', async () => {
  // /etc/gw -> /opt/gw-config, or macOS's /tmp -> /private/tmp: only the file itself counts
  const dir = tempDir('gw-watch-dirlink-');
  mkdirSync(join(dir, 'real'));
  symlinkSync(join(dir, 'real'), join(dir, 'linked'));
  writeFileSync(join(dir, 'real', 'config.yaml'), 'a: 1\n');
  const w = watching(join(dir, 'linked', 'config.yaml'));

  writeFileSync(join(dir, 'real', 'gw.log'), 'a line\n');
  assert.equal(await w.settle(0), 0, 'another file in the directory');

  writeFileSync(join(dir, 'linked', 'config.yaml'), 'a: 2\n');
  assert.equal(await w.settle(1), 1);
});

test('stopped, it calls back no more', async () => {
  const dir = tempDir('gw-watch-stop-');
  const file = join(dir, 'config.yaml');
  writeFileSync(file, 'a: 1\n');
  let n = 0;
  const stop = watchFile(file, () => n++, DEBOUNCE_MS);
  writeFileSync(file, 'a: 2\n');
  stop();
  await sleep(QUIET_MS * 2);
  assert.equal(n, 0, 'a burst under way when stopped');
  writeFileSync(file, 'a: 3\n');
  await sleep(QUIET_MS * 2);
  assert.equal(n, 0);
});
