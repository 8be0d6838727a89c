import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Roster } from './roster.ts';

test('members come and go in any order; the count and the listing follow', () => {
  const r = new Roster<number>();
  const [a, b, c, d] = [1, 2, 3, 4].map((n) => r.add(n)) as [
    ReturnType<typeof r.add>,
    ReturnType<typeof r.add>,
    ReturnType<typeof r.add>,
    ReturnType<typeof r.add>,
  ];
  assert.equal(r.size, 4);
  assert.deepEqual([...r], [4, 3, 2, 1]);
  r.delete(c); // middle
  r.delete(d); // newest
  r.delete(a); // oldest
  assert.deepEqual([...r], [2]);
  assert.equal(r.size, 1);
  r.delete(b);
  assert.equal(r.size, 0);
  assert.deepEqual([...r], []);
  for (const e of [a, b, c, d]) assert.equal(e.next ?? e.prev, undefined, 'no links left behind');
});

test('dropping a member twice changes nothing', () => {
  const r = new Roster<string>();
  const a = r.add('a');
  r.add('b');
  r.delete(a);
  r.delete(a);
  assert.equal(r.size, 1);
  assert.deepEqual([...r], ['b']);
});

test('members may be dropped while the roster is walked (closing every connection)', () => {
  const r = new Roster<number>();
  const entries = [1, 2, 3].map((n) => r.add(n));
  const seen: number[] = [];
  for (const n of r) {
    seen.push(n);
    for (const e of entries) r.delete(e);
  }
  assert.deepEqual(seen, [3, 2, 1]);
  assert.equal(r.size, 0);
});
