import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';

// A thread that allocated a burst and then went quiet: its young generation grew, and the trim
// hands it back once. Run in a child so --expose-gc and the heap are its own.
const SCRIPT = `
import { getHeapSpaceStatistics } from 'node:v8';
import { trimWhenQuiet } from ${JSON.stringify(new URL('./idle-trim.ts', import.meta.url).href)};
import { bodyChurned } from ${JSON.stringify(new URL('../pipeline/body-churn.ts', import.meta.url).href)};
// STREAM: a slow stream's bytes pass every half second, for 6 s
if (process.env.STREAM) { const s = setInterval(() => bodyChurned(100), 500); setTimeout(() => clearInterval(s), 6000); }
const newSpace = () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size;
const trims = [];
const served = Number(process.env.SERVED ?? 'NaN');
const stats = trimWhenQuiet((s) => trims.push({ ...s }), Number.isNaN(served) ? undefined : () => served);
let keep = [];
for (let i = 0; i < 150; i++) { keep.push(Array.from({ length: 20000 }, (_, x) => ({ x }))); if (keep.length > 20) keep = keep.slice(10); }
keep = null;
const grown = newSpace();
// The result once 4.6 s have passed and the trim has decided (trimmed or skipped), or at 15 s: a busy
// machine can spoil a quiet second or two, and the trim waits for quiet ones.
const start = Date.now();
const poll = setInterval(() => {
  const elapsed = Date.now() - start;
  const decided = stats === undefined || trims.length > 0 || stats.skipped === true;
  if ((decided && elapsed >= 4600) || elapsed >= (process.env.STREAM ? 5500 : 15000)) {
    clearInterval(poll);
    console.log(JSON.stringify({ enabled: stats !== undefined, skipped: stats?.skipped, grown, after: newSpace(), trims }));
  }
}, 500);
`;

function run(
  flags: string[],
  served?: number,
  stream = false,
): {
  enabled: boolean;
  skipped: boolean | undefined;
  grown: number;
  after: number;
  trims: { count: number }[];
} {
  const r = spawnSync(process.execPath, [...flags, '--input-type=module', '-e', SCRIPT], {
    encoding: 'utf8',
    env: { ...process.env, SERVED: served === undefined ? '' : String(served), STREAM: stream ? '1' : '' },
  });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

test('a quiet thread runs one memory-reducing collection and its young generation shrinks', () => {
  const r = run(['--expose-gc']);
  assert.equal(r.enabled, true);
  assert.equal(r.trims.length, 1, 'one trim for one quiet period');
  assert.ok(r.grown >= 8 * 1024 * 1024, `the burst grew the young generation (${r.grown} bytes)`);
  assert.ok(r.after < r.grown / 4, `new space ${r.grown} -> ${r.after} bytes`);
});

test('a thread that served a probe or two is still trimmed', () => {
  const r = run(['--expose-gc'], 2);
  assert.equal(r.trims.length, 1);
  assert.equal(r.skipped, false);
});

test('a thread with a stream flowing is not trimmed, however idle its loop', () => {
  const r = run(['--expose-gc'], 1, true);
  assert.equal(r.enabled, true);
  assert.equal(r.trims.length, 0, 'no trim while body bytes pass');
});

test('a thread that served real traffic keeps its memory and its compiled code', () => {
  const r = run(['--expose-gc'], 5000);
  assert.equal(r.enabled, true);
  assert.equal(r.skipped, true);
  assert.equal(r.trims.length, 0);
  assert.ok(r.after >= r.grown, 'the young generation stays as it grew');
});

test('without --expose-gc nothing is trimmed', () => {
  const r = run([]);
  assert.equal(r.enabled, false);
  assert.equal(r.trims.length, 0);
  assert.ok(r.after >= r.grown, 'the young generation stays as it grew');
});

// Start-up's trim runs at once, quiet or not: a burst of config-loading garbage, then trimNow().
const NOW_SCRIPT = `
import { getHeapSpaceStatistics } from 'node:v8';
import { trimNow } from ${JSON.stringify(new URL('./idle-trim.ts', import.meta.url).href)};
const newSpace = () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size;
let keep = [];
for (let i = 0; i < 150; i++) { keep.push(Array.from({ length: 20000 }, (_, x) => ({ x }))); if (keep.length > 20) keep = keep.slice(10); }
keep = null;
const grown = newSpace();
const t = trimNow();
console.log(JSON.stringify({ grown, after: newSpace(), t: t ?? null }));
`;

test('trimNow collects at once and hands the grown young generation back', () => {
  const r = spawnSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', NOW_SCRIPT], {
    encoding: 'utf8',
  });
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout) as { grown: number; after: number; t: { ms: number; freedBytes: number } };
  assert.ok(out.grown >= 8 * 1024 * 1024, `the burst grew the young generation (${out.grown} bytes)`);
  assert.ok(out.after < out.grown / 4, `new space ${out.grown} -> ${out.after} bytes`);
  assert.ok(out.t.ms > 0, 'the pause is reported');
  assert.equal(typeof out.t.freedBytes, 'number');
});

test('trimNow without --expose-gc does nothing and says so', () => {
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', NOW_SCRIPT], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout) as { grown: number; after: number; t: null };
  assert.equal(out.t, null);
  assert.ok(out.after >= out.grown, 'the young generation stays as it grew');
});

// Idle moments with no tick queued, each followed by a full collection: trimNow's own, or a bare
// last-resort gc() as the control. Then V8 prints nextTick's feedback: the state of each
// property-definition cache of the tick object's literal (DefineKeyedOwnPropertyInLiteral slots).
const TICK_SCRIPT = `
import { trimNow } from ${JSON.stringify(new URL('./idle-trim.ts', import.meta.url).href)};
for (let round = 0; round < 6; round++) {
  for (let i = 0; i < 2000; i++) process.nextTick(() => {});
  await new Promise((resolve) => setTimeout(resolve, 5));
  if (process.env.COLLECT === 'trimNow') trimNow();
  else globalThis.gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}
%DebugPrint(process.nextTick);
`;

function tickLiteralCaches(collect: 'trimNow' | 'gc'): string[] {
  const r = spawnSync(
    process.execPath,
    ['--expose-gc', '--allow-natives-syntax', '--input-type=module', '-e', TICK_SCRIPT],
    { encoding: 'utf8', env: { ...process.env, COLLECT: collect } },
  );
  assert.equal(r.status, 0, r.stderr);
  const states = [...r.stdout.matchAll(/DefineKeyedOwnPropertyInLiteral (\w+)/g)].map((m) => m[1] as string);
  assert.ok(states.length >= 3, `nextTick's literal caches in V8's print:\n${r.stdout.slice(0, 2000)}`);
  return states;
}

test("trimNow keeps process.nextTick's tick-object caches monomorphic across its collections", () => {
  const control = tickLiteralCaches('gc');
  assert.ok(
    control.includes('MEGAMORPHIC'),
    `idle full collections no longer turn nextTick's caches megamorphic on node ${process.version} ` +
      `(${control.join(', ')}): keepTickShape in idle-trim.ts may no longer be needed`,
  );
  const trimmed = tickLiteralCaches('trimNow');
  assert.deepEqual(
    trimmed.filter((s) => s !== 'MONOMORPHIC'),
    [],
    `caches after trimNow: ${trimmed.join(', ')}`,
  );
});
