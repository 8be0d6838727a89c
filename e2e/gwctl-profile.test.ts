// `gwctl proxy profile cpu|heap` against the real `bin/gw`: the files it writes open in
// `go tool pprof`, and without -o they get a timestamped name in the current directory.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { CLOSED_PORT } from '@gw/testkit';
import { Profile } from 'pprof-format';
import { cleanupGw, configBlock, type GwProcess, startGw, tempDir } from './support/gw-process.ts';
import { cleanupGwctl, runGwctl } from './support/gwctl-process.ts';

const run = promisify(execFile);
const goBin = ['/usr/local/go/bin/go', ...(process.env.PATH ?? '').split(':').map((d) => join(d, 'go'))].find(
  (f) => existsSync(f),
);

let g: GwProcess;
let admin: string;
let dir: string;

before(async () => {
  dir = tempDir('gwctl-profile-');
  g = await startGw({
    yaml: `${configBlock()}binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - name: small
    routes:
    - name: hi
      policies: { directResponse: { status: 200, body: "hi" } }
`,
  });
  admin = new URL(g.admin).port;
});

after(async () => {
  cleanupGwctl();
  await cleanupGw();
});

/** The file decodes as a profile and `go tool pprof -top` reads it. */
async function assertOpensInPprof(file: string, sampleType: RegExp) {
  const p = Profile.decode(gunzipSync(readFileSync(file)));
  const types = p.sampleType.map((s) => String(p.stringTable.strings[Number(s.type)]));
  assert.ok(
    types.some((s) => sampleType.test(s)),
    `sample types ${types.join(', ')}`,
  );
  // Go is part of the set-up (the test API server is built with it), so its absence is a failure.
  assert.ok(
    goBin,
    'go not found: make kube-build needs it, and this test reads the profile with go tool pprof',
  );
  const { stdout } = await run(goBin, ['tool', 'pprof', '-top', file], {
    timeout: 120_000,
    env: { ...process.env, HOME: process.env.HOME ?? dir },
  });
  assert.match(stdout, /flat%/);
}

test('cpu --seconds 1 -o FILE writes a profile go tool pprof opens', { timeout: 180_000 }, async () => {
  const file = join(dir, 'cpu.pb.gz');
  const r = await runGwctl(['proxy', 'profile', 'cpu', '--local', '--seconds', '1', '-p', admin, '-o', file]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, `${file}\n`);
  assert.match(r.stderr, /collecting a 1 s CPU profile/);
  await assertOpensInPprof(file, /^(samples?|cpu|wall)$/);
});

test('heap -o FILE writes a profile go tool pprof opens', { timeout: 180_000 }, async () => {
  const file = join(dir, 'heap.pb.gz');
  const r = await runGwctl(['proxy', 'profile', 'heap', '-p', admin, '-o', file]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, `${file}\n`);
  await assertOpensInPprof(file, /^(space|objects|inuse_space|alloc_space)$/);
});

test('without -o the file is named kind-YYYYMMDD-HHMMSS.pb.gz in the current directory', {
  timeout: 180_000,
}, async () => {
  const cwd = tempDir('gwctl-profile-cwd-');
  const cpu = await runGwctl(['proxy', 'profile', 'cpu', '--seconds', '1', '-p', admin], { cwd });
  assert.equal(cpu.code, 0, cpu.stderr);
  const heap = await runGwctl(['proxy', 'profile', 'heap', '-p', admin], { cwd });
  assert.equal(heap.code, 0, heap.stderr);
  const files = readdirSync(cwd).sort();
  assert.equal(files.length, 2, files.join(', '));
  assert.match(files[0] ?? '', /^cpu-\d{8}-\d{6}\.pb\.gz$/);
  assert.match(files[1] ?? '', /^heap-\d{8}-\d{6}\.pb\.gz$/);
  assert.equal(cpu.stdout, `${join(cwd, files[0] as string)}\n`);
  assert.equal(heap.stdout, `${join(cwd, files[1] as string)}\n`);
});

test('mistakes and a closed admin port are clear errors', async () => {
  const what = await runGwctl(['proxy', 'profile', 'memory', '-p', admin]);
  assert.equal(what.code, 2);
  assert.match(what.stderr, /expected cpu or heap, got memory/);
  const secs = await runGwctl(['proxy', 'profile', 'cpu', '--seconds', '0', '-p', admin]);
  assert.equal(secs.code, 2);
  assert.match(secs.stderr, /--seconds 0: expected a whole number from 1 to 300/);
  const closed = String(CLOSED_PORT);
  const r = await runGwctl(['proxy', 'profile', 'heap', '-p', closed, '-o', join(dir, 'never.pb.gz')]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /cannot reach the gw admin interface at 127\.0\.0\.1:\d+ \(ECONNREFUSED\)/);
  assert.equal(existsSync(join(dir, 'never.pb.gz')), false);
});
