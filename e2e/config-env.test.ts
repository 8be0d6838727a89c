// Environment variables in a config file, as `bin/gw` reports them: an unset one in a credential
// stops the load (with every other problem of the file), anywhere else it is a warning at load.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { cleanupGw, runGw, tempDir } from './support/gw-process.ts';

after(cleanupGw);

test('an unset $VAR as an API key is an error, reported with an invalid regex in the same file', async () => {
  const file = join(tempDir(), 'keys.yaml');
  writeFileSync(
    file,
    `binds:
- port: 0
  listeners:
  - routes:
    - matches: [{path: {regex: "("}}]
      policies:
        apiKey: {keys: [$GW_E2E_NOPE_KEY]}
      backends: [{host: "127.0.0.1:9"}]
`,
  );
  const r = await runGw(['--validate-only', '-f', file]);
  assert.equal(r.code, 1, r.stderr);
  const lines = r.stderr.split('\n').filter((l) => l.startsWith(`${file}:`));
  assert.equal(lines.length, 2, r.stderr);
  assert.match(
    r.stderr,
    new RegExp(
      `^${RegExp.escape(file)}:7:25: binds\\[0\\]\\.listeners\\[0\\]\\.routes\\[0\\]\\.policies\\.apiKey\\.keys\\[0\\]: environment variable \\$GW_E2E_NOPE_KEY is not set`,
      'm',
    ),
  );
  assert.match(r.stderr, /matches\[0\]\.path\.regex: invalid regular expression/);
});

test('an unset $VAR elsewhere is kept as written, and gw says so at load with file and line', async () => {
  const file = join(tempDir(), 'body.yaml');
  writeFileSync(
    file,
    `binds:
- port: 0
  listeners:
  - routes:
    - policies: {directResponse: {status: 200, body: "price: $GW_E2E_NOPE_PRICE"}}
`,
  );
  const r = await runGw(['--validate-only', '-f', file]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /valid/);
  assert.match(
    r.stderr,
    new RegExp(
      `^gw: warning: ${RegExp.escape(file)}:5:54: .*directResponse\\.body: environment variable \\$GW_E2E_NOPE_PRICE is not set`,
      'm',
    ),
  );
});
