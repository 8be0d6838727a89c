// primeStreamShapes: once a thread has errored its primed streams, the first real stream error no
// longer throws away optimized code that read stream state. Checked in a child node with V8's own
// report (--trace-deopt): functions reading a stream's `errored` (an accessor on the state's
// prototype, inlined against the state's map) are optimized, then a stream errors, or not. Three
// runs: without an error nothing is deoptimized (so what follows is the error's doing, not the
// probe's); unprimed, the error deoptimizes the writer's reader for "dependent prototype chain
// changed" (the readable's only on some runs), which shows the check sees the effect on this node;
// primed, neither is.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const shapes = fileURLToPath(new URL('./stream-shapes.ts', import.meta.url));
const PROBES = ['readsErrored', 'writerErrored'];

/** Runs the probe; returns the probe functions V8 deoptimized for a map they relied on. */
function deoptimized(opts: { prime: boolean; error: boolean }): string[] {
  const script = `
import { Readable, Writable } from 'node:stream';
import { primeStreamShapes } from ${JSON.stringify(shapes)};
// stdout's first use builds its stream, whose states then take their own transitions: all before anything
await new Promise((r) => process.stdout.write('', r));
if (${opts.prime}) primeStreamShapes();
await new Promise((r) => setImmediate(r));
function readsErrored(r) { return r._readableState.errored === null && r.readableLength === 0; }
function writerErrored(w) { return w._writableState.errored === null && w.writableLength === 0; }
const live = [];
for (let i = 0; i < 64; i++) live.push(new Readable({ read() {} }), new Writable({ write: (_c, _e, cb) => cb() }));
// each writer as a connection's is once it has written (a write completed in its tick)
for (let i = 1; i < live.length; i += 2) live[i].write('x');
await new Promise((r) => setImmediate(r));
%PrepareFunctionForOptimization(readsErrored);
%PrepareFunctionForOptimization(writerErrored);
for (let i = 0; i < 2000; i++) { readsErrored(live[2 * (i % 64)]); writerErrored(live[2 * (i % 64) + 1]); }
%OptimizeFunctionOnNextCall(readsErrored);
%OptimizeFunctionOnNextCall(writerErrored);
readsErrored(live[0]);
writerErrored(live[1]);
const optimized = [readsErrored, writerErrored].every((f) => (%GetOptimizationStatus(f) & 16) !== 0);
// the first stream errors of the process (as a client reset would)
if (${opts.error}) for (const s of [live[2], live[3]]) { s.on('error', () => {}); s.destroy(new Error('reset')); }
readsErrored(live[0]);
writerErrored(live[1]);
process.stdout.write(optimized ? 'probes optimized\\n' : 'probes not optimized\\n');
`;
  const r = spawnSync(
    process.execPath,
    ['--allow-natives-syntax', '--trace-deopt', '--input-type=module', '-e', script],
    { encoding: 'utf8', timeout: 60_000 },
  );
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /probes optimized/, 'the probe functions were not optimized');
  return [...r.stdout.matchAll(/SharedFunctionInfo (\w+)>.*dependent prototype chain changed/g)]
    .map((m) => m[1] as string)
    .filter((name) => PROBES.includes(name));
}

test('without a stream error the probes keep their code (the control)', () => {
  assert.deepEqual(deoptimized({ prime: false, error: false }), []);
});

test('unprimed, the first stream error throws away code that read stream state (what priming prevents)', () => {
  const lost = deoptimized({ prime: false, error: true });
  assert.ok(
    lost.includes('writerErrored'),
    `this node no longer deoptimizes on a stream's first error (${lost.join(', ') || 'none'}): primeStreamShapes may be obsolete`,
  );
});

test('primed, the same error leaves that code alone', () => {
  assert.deepEqual(deoptimized({ prime: true, error: true }), []);
});
