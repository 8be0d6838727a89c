// Keeps the README's error table in step with the catalogue.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { ERRORS } from './errors.ts';

test('every error code is in the README with its status', () => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  for (const [code, status] of Object.entries(ERRORS)) {
    assert.match(readme, new RegExp(`\\| \`${code}\`\\s*\\| ${status} `), code);
  }
});
