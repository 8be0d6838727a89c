import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Worker } from 'node:worker_threads';
import { InFlightCounter, InFlightTable, inFlightBytes, type Taken } from './in-flight.ts';

/** A table of `slots` slots (the proxy's have KEYED_SLOTS): small ones make keys share runs. */
const table = (slots: number) => new InFlightTable(new SharedArrayBuffer((1 + slots * 3) * 4));
const slot = (t: Taken) => {
  assert.ok(typeof t === 'object', `expected a slot, got ${String(t)}`);
  return t;
};

describe('in-flight counters', () => {
  test('one counter: up to max, a slot goes back once', () => {
    const c = new InFlightCounter(new SharedArrayBuffer(inFlightBytes(false)));
    const a = slot(c.take(2));
    const b = slot(c.take(2));
    assert.equal(c.take(2), 'over');
    assert.equal(c.inFlight, 2, 'a refused take holds nothing');
    a.release();
    a.release();
    assert.equal(c.inFlight, 1, 'released once');
    slot(c.take(2)).release();
    b.release();
    assert.equal(c.inFlight, 0);
  });

  test('by key: each key its own counter; a key whose count drops to 0 leaves the table', () => {
    const t = new InFlightTable(new SharedArrayBuffer(inFlightBytes(true)));
    const alice = [slot(t.take('alice', 2)), slot(t.take('alice', 2))];
    assert.equal(t.take('alice', 2), 'over');
    const bob = slot(t.take('bob', 2));
    assert.deepEqual([t.inFlight('alice'), t.inFlight('bob'), t.keys], [2, 1, 2]);
    for (const s of alice) s.release();
    bob.release();
    assert.deepEqual([t.inFlight('alice'), t.inFlight('bob'), t.keys], [0, 0, 0]);
  });

  test('a full table says so, and takes keys again once some leave', () => {
    const t = table(4);
    const held = ['a', 'b', 'c', 'd'].map((k) => slot(t.take(k, 1)));
    assert.equal(t.take('e', 1), 'full');
    assert.equal(t.take('a', 1), 'over', 'a key already there is still counted');
    held[2]?.release();
    slot(t.take('e', 1));
    assert.equal(t.keys, 4);
  });

  test('against a model: random takes and releases on a small table keep every count exact', () => {
    // 8 slots and 6 keys: long probe runs, and deletions in the middle of them
    const t = table(8);
    const keys = ['k0', 'k1', 'k2', 'k3', 'k4', 'k5'];
    const model = new Map<string, number>();
    const held: { key: string; release: () => void }[] = [];
    let seed = 7;
    const rnd = (n: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed % n;
    };
    for (let step = 0; step < 20_000; step++) {
      if (held.length > 0 && rnd(2) === 0) {
        const [h] = held.splice(rnd(held.length), 1);
        h?.release();
        model.set(h?.key as string, (model.get(h?.key as string) ?? 0) - 1);
      } else {
        const key = keys[rnd(keys.length)] as string;
        const got = t.take(key, 3);
        const n = model.get(key) ?? 0;
        if (n >= 3) assert.equal(got, 'over', `step ${step}: ${key} at ${n}`);
        else {
          held.push({ key, release: slot(got).release });
          model.set(key, n + 1);
        }
      }
      if (step % 97 === 0)
        for (const k of keys) assert.equal(t.inFlight(k), model.get(k) ?? 0, `step ${step}: ${k}`);
    }
    for (const h of held) h.release();
    assert.equal(t.keys, 0);
  });

  test('workers sharing a small table never let more than max in at once, and end at 0', async () => {
    // 8 slots for 6 keys: long probe runs, and backward shifts while other threads take and release
    const buffer = new SharedArrayBuffer((1 + 8 * 3) * 4);
    // per key, how many the workers hold right now (kept apart from the table); then the most seen
    // for a key, and the takes that got a slot
    const seen = new SharedArrayBuffer(8 * 4);
    const url = new URL('./in-flight.ts', import.meta.url).href;
    const code = `
      const { workerData, parentPort } = require('node:worker_threads');
      import(${JSON.stringify(url)}).then(({ InFlightTable }) => {
        const t = new InFlightTable(workerData.buffer);
        const seen = new Int32Array(workerData.seen);
        const keys = ['a', 'b', 'c', 'd', 'e', 'f'];
        for (let i = 0; i < 30000; i++) {
          const k = (i * 7) % 6;
          const got = t.take(keys[k], 2);
          if (got === 'over') continue;
          if (got === 'full') throw new Error('full with 6 keys in 8 slots');
          Atomics.add(seen, 7, 1);
          const now = Atomics.add(seen, k, 1) + 1;
          if (now > Atomics.load(seen, 6)) Atomics.store(seen, 6, now);
          for (let spin = 0; spin < 20; spin++);
          Atomics.sub(seen, k, 1);
          got.release();
        }
        parentPort.postMessage('done');
      });`;
    await Promise.all(
      [0, 1, 2].map(
        () =>
          new Promise<void>((resolve, reject) => {
            const w = new Worker(code, { eval: true, workerData: { buffer, seen } });
            w.once('message', () => {
              resolve();
              void w.terminate();
            });
            w.once('error', reject);
          }),
      ),
    );
    const counts = new Int32Array(seen);
    assert.ok((counts[6] as number) <= 2, `at most 2 in at once for a key, saw ${counts[6]}`);
    assert.ok((counts[7] as number) > 30000, `most takes got a slot (${counts[7]} of 90000)`);
    assert.equal(new InFlightTable(buffer).keys, 0, 'every slot went back');
  });

  test('a lock its holder never gives back is taken over, and the table works on', () => {
    const buffer = new SharedArrayBuffer(inFlightBytes(true));
    // a holder that is gone: another thread's mark in the lock
    new Int32Array(buffer)[0] = 4242;
    const t = new InFlightTable(buffer);
    const started = performance.now();
    const s = slot(t.take('k', 1));
    assert.ok(performance.now() - started >= 400, 'it waited for the holder first');
    s.release();
    assert.equal(new Int32Array(buffer)[0], 0, 'released by its new holder');
    assert.equal(t.keys, 0);
  });
});
