import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_JSON_DEPTH, nestedDeeperThan } from './json-depth.ts';

const nested = (levels: number, open = '[', close = ']') =>
  JSON.parse(`${open.repeat(levels)}${close.repeat(levels)}`) as unknown;

test('the value itself is level 1; arrays and objects count, scalars do not', () => {
  assert.equal(nestedDeeperThan('x'.repeat(100_000)), false);
  assert.equal(nestedDeeperThan(null), false);
  assert.equal(nestedDeeperThan(nested(MAX_JSON_DEPTH)), false);
  assert.equal(nestedDeeperThan(nested(MAX_JSON_DEPTH + 1)), true);
  assert.equal(nestedDeeperThan(nested(3), 2), true);
  assert.equal(nestedDeeperThan(nested(2), 2), false);
  // objects as well as arrays, mixed, and a deep branch after shallow ones
  const objects = JSON.parse(`${'{"a":'.repeat(200)}1${'}'.repeat(200)}`) as unknown;
  assert.equal(nestedDeeperThan(objects), true);
  assert.equal(nestedDeeperThan({ a: [1, 2, { b: 'c' }], d: nested(10) }, 12), false);
  assert.equal(nestedDeeperThan({ a: [1, 2, { b: 'c' }], d: nested(12) }, 12), true);
});

test('a depth that would overflow the stack of a recursive walk is read without one', () => {
  assert.equal(nestedDeeperThan(nested(100_000)), true);
});
