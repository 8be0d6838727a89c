import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { StatusUpdate } from '../translator/types.ts';
import { type StatusTarget, StatusWriter } from './writer.ts';

/** An in-memory API server: patches take `delayMs`, and the count in flight is tracked. */
function fakeTarget(delayMs = 5) {
  const objects = new Map<string, { status?: unknown }>();
  const patches: string[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const target: StatusTarget = {
    current: (kind, ns, name) => objects.get(`${kind}/${ns}/${name}`),
    async patch(kind, ns, name, status) {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await new Promise((r) => setTimeout(r, delayMs));
      inFlight--;
      patches.push(`${kind}/${ns}/${name}`);
      objects.set(`${kind}/${ns}/${name}`, { status });
    },
  };
  return { target, objects, patches, max: () => maxInFlight };
}

const accepted = (name: string, status: 'True' | 'False' = 'True'): StatusUpdate => ({
  kind: 'GwBackend',
  namespace: 'ns',
  name,
  status: {
    conditions: [
      { type: 'Accepted', status, reason: status === 'True' ? 'Accepted' : 'Invalid', message: 'm' },
    ],
  },
});

describe('status writer', () => {
  test('patches concurrently, never more than the bound in flight', async () => {
    const t = fakeTarget();
    const names = Array.from({ length: 30 }, (_, i) => `b${i}`);
    for (const n of names) t.objects.set(`GwBackend/ns/${n}`, {});
    const w = new StatusWriter({
      target: t.target,
      controllerName: 'gw.dev/gw',
      concurrency: 8,
      now: () => 'T0',
    });
    await w.write(names.map((n) => accepted(n)));
    assert.equal(t.patches.length, 30);
    assert.equal(t.max(), 8);
    assert.equal(w.metrics.writes, 30);
  });

  test('writes only what changed; transition times stay while a condition holds', async () => {
    const t = fakeTarget(0);
    t.objects.set('GwBackend/ns/a', {});
    t.objects.set('GwBackend/ns/b', {});
    let now = 'T0';
    const w = new StatusWriter({ target: t.target, controllerName: 'gw.dev/gw', now: () => now });
    await w.write([accepted('a'), accepted('b')]);
    assert.equal(t.patches.length, 2);
    now = 'T1';
    await w.write([accepted('a'), accepted('b')]);
    assert.equal(t.patches.length, 2, 'the same statuses again: no write');
    assert.equal(w.metrics.unchanged, 2);
    await w.write([accepted('a'), accepted('b', 'False')]);
    assert.deepEqual(t.patches.slice(2), ['GwBackend/ns/b']);
    const cond = (n: string) =>
      (
        t.objects.get(`GwBackend/ns/${n}`)?.status as
          | { conditions?: { lastTransitionTime: string }[] }
          | undefined
      )?.conditions?.[0];
    assert.equal(cond('a')?.lastTransitionTime, 'T0');
    assert.equal(cond('b')?.lastTransitionTime, 'T1');
  });

  test('objects that are gone are skipped; a failed patch is counted and the pass goes on', async () => {
    const t = fakeTarget(0);
    t.objects.set('GwBackend/ns/a', {});
    t.objects.set('GwBackend/ns/c', {});
    const patch = t.target.patch;
    t.target.patch = async (kind, ns, name, status) => {
      if (name === 'a') throw new Error('409 conflict');
      return patch(kind, ns, name, status);
    };
    const logged: string[] = [];
    const w = new StatusWriter({
      target: t.target,
      controllerName: 'gw.dev/gw',
      log: (_l, msg, f) => logged.push(`${msg} ${f['name']}`),
    });
    await w.write([accepted('a'), accepted('gone'), accepted('c')]);
    assert.deepEqual(t.patches, ['GwBackend/ns/c']);
    assert.deepEqual(w.metrics, { writes: 1, errors: 1, unchanged: 0 });
    assert.deepEqual(logged, ['status write failed a']);
  });

  test('passes run one after another', async () => {
    const t = fakeTarget(5);
    t.objects.set('GwBackend/ns/a', {});
    const w = new StatusWriter({ target: t.target, controllerName: 'gw.dev/gw' });
    await Promise.all([
      w.write([accepted('a')]),
      w.write([accepted('a', 'False')]),
      w.write([accepted('a')]),
    ]);
    // each pass saw the one before it: three changes, three writes, never two at once
    assert.equal(t.patches.length, 3);
    assert.equal(t.max(), 1);
  });
});
