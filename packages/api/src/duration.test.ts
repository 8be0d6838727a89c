import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_DURATION_MS, parseByteSize, parseDuration, parseGoDuration } from './duration.ts';

test('Duration pattern of the spec: 1–4 groups of 1–5 digits with h, m, s or ms', () => {
  assert.equal(parseDuration('10s'), 10_000);
  assert.equal(parseDuration('1m30s'), 90_000);
  assert.equal(parseDuration('250ms'), 250);
  assert.equal(parseDuration('1h1m1s1ms'), 3_661_001);
  for (const bad of ['', '10', '1.5s', '1h1m1s1ms1s', '123456s', '-1s', '10sec']) {
    assert.equal(parseDuration(bad), undefined, bad);
  }
});

test('Go-style durations load agentgateway files unchanged', () => {
  assert.equal(parseGoDuration('0'), 0);
  assert.equal(parseGoDuration('3m0s'), 180_000);
  assert.equal(parseGoDuration('1.5h'), 5_400_000);
  assert.equal(parseGoDuration('100us'), 0.1);
  for (const bad of ['', 'abc', '-1s', '1', '1x', 's']) assert.equal(parseGoDuration(bad), undefined, bad);
});

test('ByteSize quantities', () => {
  assert.equal(parseByteSize('2Mi'), 2 * 1024 * 1024);
  assert.equal(parseByteSize('512Ki'), 512 * 1024);
  assert.equal(parseByteSize('1k'), 1000);
  assert.equal(parseByteSize('1.5Ki'), 1536);
  assert.equal(parseByteSize(4096), 4096);
  for (const bad of ['', '1Pi', '2 Mi', '-1', 'Mi', '5Gi']) assert.equal(parseByteSize(bad), undefined, bad);
  assert.equal(parseByteSize(-1), undefined);
});

test('a duration longer than a timer can wait counts as the longest it can (about 24.8 days)', () => {
  assert.equal(parseGoDuration('720h'), MAX_DURATION_MS);
  assert.equal(parseGoDuration('596h'), 596 * 3_600_000);
  assert.equal(parseDuration('99999h'), MAX_DURATION_MS);
});
