// closestField: which known field an unknown key is likely a misspelling of (the hint of an
// "unknown field" error).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { closestField } from './source.ts';

const POLICIES = [
  'requestHeaderModifier',
  'responseHeaderModifier',
  'requestRedirect',
  'retry',
  'timeout',
  'cors',
];

test('another case, or _ and - between the words, is the same field', () => {
  assert.equal(closestField('pathprefix', ['exact', 'pathPrefix', 'regex']), 'pathPrefix');
  assert.equal(closestField('path_prefix', ['exact', 'pathPrefix', 'regex']), 'pathPrefix');
  assert.equal(closestField('Request-Header-Modifier', POLICIES), 'requestHeaderModifier');
});

test('a letter left out, added, changed or two swapped: within two edits', () => {
  assert.equal(closestField('requestHeaderModifer', POLICIES), 'requestHeaderModifier');
  assert.equal(closestField('timout', POLICIES), 'timeout');
  assert.equal(closestField('retyr', POLICIES), 'retry');
  assert.equal(closestField('backendz', ['backends', 'matches', 'policies']), 'backends');
});

test('nothing close, a short name more than one edit away, or two fields equally close: no hint', () => {
  assert.equal(closestField('colour', POLICIES), undefined);
  assert.equal(closestField('crs', ['cors', 'csrf']), 'cors');
  assert.equal(closestField('crsf', ['cors', 'csrf']), 'csrf');
  assert.equal(closestField('corz', ['cors']), 'cors');
  assert.equal(closestField('cx', ['cors']), undefined);
  // requestHeaderModifier and responseHeaderModifier are both far; requestModifier is 6 from each
  assert.equal(closestField('requestModifier', POLICIES), undefined);
  assert.equal(closestField('ab', ['ac', 'ad']), undefined);
});
