import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type InflightLinks, InflightList } from './inflight.ts';

interface Req extends InflightLinks<Req> {
  id: number;
}
const req = (id: number): Req => ({ id, inflightPrev: undefined, inflightNext: undefined });
const ids = (l: InflightList<Req>) => [...l].map((r) => r.id);

test('requests come and go in any order; the count and the listing follow', () => {
  const l = new InflightList<Req>();
  const [a, b, c, d] = [req(1), req(2), req(3), req(4)];
  for (const r of [a, b, c, d]) l.add(r);
  assert.equal(l.size, 4);
  assert.deepEqual(ids(l), [4, 3, 2, 1]);
  l.delete(c); // middle
  l.delete(d); // head
  l.delete(a); // tail
  assert.deepEqual(ids(l), [2]);
  assert.equal(l.size, 1);
  l.delete(b);
  assert.equal(l.size, 0);
  assert.deepEqual(ids(l), []);
  for (const r of [a, b, c, d]) assert.equal(r.inflightNext ?? r.inflightPrev, undefined, 'no links left');
});

test('dropping a request twice, or one never added, changes nothing', () => {
  const l = new InflightList<Req>();
  const [a, b] = [req(1), req(2)];
  l.add(a);
  l.add(b);
  l.delete(a);
  l.delete(a);
  l.delete(req(9));
  assert.equal(l.size, 1);
  assert.deepEqual(ids(l), [2]);
  l.add(a);
  assert.deepEqual(ids(l), [1, 2]);
});
