// primeStreamShapes: once a thread has errored its primed streams, the first real stream error no
// longer throws away optimized code that read stream state. Checked in a child node with V8's own
// report (--trace-deopt): a function reading a stream's `errored` (an accessor on the state's
// prototype, inlined against the state's map) is optimized, then a stream errors. Unprimed, V8
// deoptimizes it for "dependent prototype chain changed", which shows the check can see the effect
// on this node; primed, it keeps its code.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const shapes = fileURLToPath(new URL('./stream-shapes.ts', import.meta.url));

/** Runs the probe; returns the names of the functions V8 deoptimized for a map they relied on. */
function deoptimizedFor(prime: boolean): { reliedOn: string[]; out: string } {
  const script = `
import { Readable, Writable } from 'node:stream';
import { primeStreamShapes } from ${JSON.stringify(shapes)};
if (${prime}) primeStreamShapes();
await new Promise((r) => setImmediate(r));
const make = () => new Readable({ read() {} });
function readsErrored(r) { return r._readableState.errored === null && r.readableLength === 0; }
function writerErrored(w) { return w._writableState.errored === null && w.writableLength === 0; }
const live = [];
for (let i = 0; i < 64; i++) live.push(make(), new Writable({ write: (_c, _e, cb) => cb() }));
%PrepareFunctionForOptimization(readsErrored);
%PrepareFunctionForOptimization(writerErrored);
for (let i = 0; i < 2000; i++) { readsErrored(live[2 * (i % 64)]); writerErrored(live[2 * (i % 64) + 1]); }
%OptimizeFunctionOnNextCall(readsErrored);
%OptimizeFunctionOnNextCall(writerErrored);
readsErrored(live[0]);
writerErrored(live[1]);
console.log('optimized', %GetOptimizationStatus(readsErrored) & 16 ? 'yes' : 'no');
// the first stream errors of the process (as a client reset would)
for (const s of [live[2], live[3]]) { s.on('error', () => {}); s.destroy(new Error('reset')); }
readsErrored(live[0]);
writerErrored(live[1]);
`;
  const r = spawnSync(
    process.execPath,
    ['--allow-natives-syntax', '--trace-deopt', '--input-type=module', '-e', script],
    { encoding: 'utf8', timeout: 60_000 },
  );
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /optimized yes/, 'the probe function was not optimized');
  const reliedOn = [
    ...r.stdout.matchAll(/SharedFunctionInfo (\w+)>.*dependent prototype chain changed/g),
  ].map((m) => m[1] as string);
  return { reliedOn, out: r.stdout };
}

test('unprimed, the first stream error throws away code that read stream state (what priming prevents)', () => {
  const { reliedOn } = deoptimizedFor(false);
  assert.ok(
    reliedOn.includes('readsErrored') && reliedOn.includes('writerErrored'),
    `this node no longer deoptimizes on a stream's first error (${reliedOn.join(', ') || 'none'}): primeStreamShapes may be obsolete`,
  );
});

test('primed, the same error leaves that code alone', () => {
  const { reliedOn, out } = deoptimizedFor(true);
  assert.deepEqual(
    reliedOn.filter((n) => n === 'readsErrored' || n === 'writerErrored'),
    [],
    out.slice(-3000),
  );
});
