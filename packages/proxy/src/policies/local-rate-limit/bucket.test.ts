// KeyedBuckets: a bucket per key in one shared table, each exact across the threads that share the
// memory; a set that fills forgets a refilled bucket first (nothing lost), then the least recently
// used one (its key starts afresh), never a busy key's bucket while an idle one is there.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hashes } from '../limit-keys.ts';
import { KEYED_BUCKET_BYTES, KEYED_WAYS, KeyedBuckets, keyedSet, resetSeconds } from './bucket.ts';

const table = (capacity = 2, refillPerMs = 0) =>
  new KeyedBuckets(new SharedArrayBuffer(KEYED_BUCKET_BYTES), capacity, refillPerMs);

/** Keys whose first hash picks the same set as `key`'s. */
function sameSet(key: string, n: number): string[] {
  const set = (k: string) => keyedSet(hashes(k)[0]);
  const want = set(key);
  const out: string[] = [];
  for (let i = 0; out.length < n; i++) if (set(`k${i}`) === want && `k${i}` !== key) out.push(`k${i}`);
  return out;
}

test('each key has its own bucket; two views of the memory see the same buckets', () => {
  const memory = new SharedArrayBuffer(KEYED_BUCKET_BYTES);
  const a = new KeyedBuckets(memory, 2, 0);
  const b = new KeyedBuckets(memory, 2, 0);
  assert.equal(a.take(hashes('alice'), 1).ok, true);
  assert.equal(b.take(hashes('alice'), 1).ok, true);
  assert.equal(a.take(hashes('alice'), 1).ok, false);
  const bob = b.take(hashes('bob'), 1);
  assert.deepEqual([bob.ok, bob.remaining], [true, 1]);
  assert.equal(a.keys, 2);
});

test('a full set forgets the least recently used key, never one that was used since', (t) => {
  t.mock.timers.enable({ apis: ['Date'], now: 1_000_000 });
  const buckets = table(2, 0);
  const busy = 'busy';
  const others = sameSet(busy, KEYED_WAYS);
  buckets.take(hashes(busy), 2); // spent
  for (const k of others.slice(0, KEYED_WAYS - 1)) {
    t.mock.timers.tick(1);
    buckets.take(hashes(k), 1);
  }
  // the set is full; busy is the oldest, so used again it must stay
  t.mock.timers.tick(1);
  assert.equal(buckets.take(hashes(busy), 1).ok, false);
  t.mock.timers.tick(1);
  // a new key takes the least recently used slot (the first of the others), not busy's
  assert.equal(buckets.take(hashes(others[KEYED_WAYS - 1] as string), 1).ok, true);
  assert.equal(buckets.take(hashes(busy), 1).ok, false, 'busy is remembered, still spent');
  assert.equal(buckets.take(hashes(others[0] as string), 1).remaining, 1, 'the forgotten key starts full');
});

test('a refilled bucket is given up before a used one', (t) => {
  t.mock.timers.enable({ apis: ['Date'], now: 1_000_000 });
  const buckets = table(2, 0.001); // a token a second
  const [idle, ...rest] = sameSet('x', KEYED_WAYS + 1) as [string, ...string[]];
  buckets.take(hashes(idle), 1);
  t.mock.timers.tick(5_000); // idle's bucket is full again
  for (const k of rest.slice(0, KEYED_WAYS - 1)) buckets.take(hashes(k), 2);
  // full set: the newcomer takes idle's slot (refilled), though idle was not the least recent
  buckets.take(hashes(rest[KEYED_WAYS - 1] as string), 1);
  for (const k of rest.slice(0, KEYED_WAYS - 1))
    assert.equal(buckets.peek(hashes(k)).remaining, 0, `${k} kept its spent bucket`);
});

test('keys spread over the sets: 2,048 e-mail addresses, few forgotten', () => {
  const buckets = table(2, 0);
  const keys = Array.from({ length: 2048 }, (_, i) => hashes(`s:user${i}@example.com`));
  for (const k of keys) buckets.take(k, 1);
  // each still has the one token it left, unless its set overflowed and it was forgotten
  const forgotten = keys.filter((k) => buckets.peek(k).remaining !== 1).length;
  assert.ok(forgotten < 60, `${forgotten} of 2048 forgotten`);
});

test('a bucket that never refills reports no reset, and 0 once full', () => {
  const buckets = table(2, 0);
  assert.equal(buckets.peek(hashes('a')).resetSeconds, 0);
  assert.equal(buckets.take(hashes('a'), 1).resetSeconds, -1);
});

test('reset: an empty bucket says when it takes a request again, a bucket with tokens when it is full', () => {
  const perMinute = 1 / 60_000; // tokensPerFill 1, fillInterval 60s
  assert.equal(resetSeconds(2, perMinute, 2), 0);
  assert.equal(resetSeconds(2, perMinute, 1), 60); // one left: full in a minute
  assert.equal(resetSeconds(2, perMinute, 0), 60); // none left: the next one in a minute, not two
  assert.equal(resetSeconds(2, perMinute, 0.75), 15);
  assert.equal(resetSeconds(2, perMinute, -3), 240); // a token budget overdrawn by a response
  assert.equal(resetSeconds(2, 0, 0), -1);
});
