// KeyedBuckets: a bucket per key in one shared table, each exact across the threads that share the
// memory; a set that fills forgets a refilled bucket first (nothing lost), then the least recently
// used one (its key starts afresh), never a busy key's bucket while an idle one is there.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hashes } from '../limit-keys.ts';
import {
  BUCKET_BYTES,
  KEYED_BUCKET_BYTES,
  KEYED_WAYS,
  KeyedBuckets,
  keyedSet,
  resetSeconds,
  SharedBucket,
} from './bucket.ts';

const NEVER = { tokens: 0, everyMs: 1000 };
const table = (capacity = 2, fill = NEVER) =>
  new KeyedBuckets(new SharedArrayBuffer(KEYED_BUCKET_BYTES), capacity, fill);

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
  const a = new KeyedBuckets(memory, 2, NEVER);
  const b = new KeyedBuckets(memory, 2, NEVER);
  assert.equal(a.take(hashes('alice'), 1).ok, true);
  assert.equal(b.take(hashes('alice'), 1).ok, true);
  assert.equal(a.take(hashes('alice'), 1).ok, false);
  const bob = b.take(hashes('bob'), 1);
  assert.deepEqual([bob.ok, bob.remaining], [true, 1]);
  assert.equal(a.keys, 2);
});

test('a full set forgets the least recently used key, never one that was used since', (t) => {
  t.mock.timers.enable({ apis: ['Date'], now: 1_000_000 });
  const buckets = table(2);
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
  const buckets = table(2, { tokens: 1, everyMs: 1000 }); // a token a second
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
  const buckets = table(2);
  const keys = Array.from({ length: 2048 }, (_, i) => hashes(`s:user${i}@example.com`));
  for (const k of keys) buckets.take(k, 1);
  // each still has the one token it left, unless its set overflowed and it was forgotten
  const forgotten = keys.filter((k) => buckets.peek(k).remaining !== 1).length;
  assert.ok(forgotten < 60, `${forgotten} of 2048 forgotten`);
});

test('a bucket that never refills reports no reset, and 0 once full', () => {
  const buckets = table(2);
  assert.equal(buckets.peek(hashes('a')).resetSeconds, 0);
  assert.equal(buckets.take(hashes('a'), 1).resetSeconds, -1);
});

test('reset: an empty bucket says when its next fill lets a request in, a bucket with tokens when a fill makes it full', () => {
  const perMinute = { tokens: 1, everyMs: 60_000 }; // tokensPerFill 1, fillInterval 60s
  const at = (tokens: number, sinceFill: number) => resetSeconds(2, perMinute, tokens, 0, sinceFill * 1000);
  assert.equal(at(2, 0), 0);
  assert.equal(at(1, 0), 60); // one left: full at the next fill
  assert.equal(at(1, 45), 15); // the fill is due in 15 s
  assert.equal(at(0, 0), 60); // none left: the next one at the next fill, not two
  assert.equal(at(0.75, 50), 10);
  assert.equal(at(-3, 0), 240); // a token budget overdrawn by a response: four fills away
  assert.equal(resetSeconds(2, NEVER, 0, 0, 0), -1);
  // 30 tokens a minute: a bucket of 30 holding 12 takes its next request at the minute, not before
  assert.equal(resetSeconds(30, { tokens: 30, everyMs: 60_000 }, -6, 0, 14_000), 46);
});

test('a bucket fills by whole intervals, not continuously: emptied, it refuses until its next fill', (t) => {
  t.mock.timers.enable({ apis: ['Date'], now: 1_000_000 });
  const b = new SharedBucket(new SharedArrayBuffer(BUCKET_BYTES), 30, { tokens: 30, everyMs: 60_000 });
  assert.equal(b.take(18).ok, true);
  assert.equal(b.take(18).ok, true); // crosses the limit, still passes (-6 left)
  t.mock.timers.tick(14_000);
  const refused = b.take(18);
  assert.equal(refused.ok, false, 'a quarter of the interval gives nothing');
  assert.equal(refused.resetSeconds, 46);
  t.mock.timers.tick(46_000);
  const next = b.take(18);
  assert.deepEqual([next.ok, next.remaining], [true, 6], 'the fill at the minute: -6 + 30, then 18 taken');
  // a long quiet spell fills to capacity, never beyond, and the next fill stays on the minute
  t.mock.timers.tick(10 * 60_000 + 5_000);
  assert.equal(b.peek().remaining, 30);
  b.take(30);
  t.mock.timers.tick(54_999);
  assert.equal(b.peek().ok, false);
  t.mock.timers.tick(1);
  assert.equal(b.peek().remaining, 30);
});
