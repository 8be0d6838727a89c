// The access log policy's three spellings: frontendPolicies.accessLog, its other name
// frontendPolicies.logging, and the older config.logging.filter/fields; one of them at a time.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ConfigError } from '@gw/api';
import { httpGet, startUpstream, type TestServer } from '@gw/testkit';
import { startProxy } from '@gw/testkit/proxy';
import { loadConfigText } from '../config/load.ts';

let up: TestServer;
before(async () => {
  up = await startUpstream('echo');
});
after(() => up.close());

const binds = () => `binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - backends: [{host: "127.0.0.1:${up.port}"}]
`;

/** The access-log lines of /keep and /skip requests under `head`. */
async function logged(head: string): Promise<Record<string, unknown>[]> {
  const p = await startProxy(`${head}${binds()}`);
  try {
    await httpGet(p.port(), '/keep', { headers: { 'x-team': 'blue' } });
    await httpGet(p.port(), '/skip');
    await new Promise((r) => setTimeout(r, 50));
    return p.accessLog.filter((l) => typeof l['http.path'] === 'string' || 'team' in l);
  } finally {
    await p.close();
  }
}

describe('access log fields and filter', () => {
  for (const [name, head] of [
    [
      'config.logging (the older form)',
      `config:
  logging:
    filter: 'request.path == "/keep"'
    fields:
      remove: [src.addr]
      add: {team: 'request.headers["x-team"]'}
`,
    ],
    [
      'frontendPolicies.logging',
      `frontendPolicies:
  logging:
    filter: 'request.path == "/keep"'
    remove: [src.addr]
    add: {team: 'request.headers["x-team"]'}
`,
    ],
  ] as const)
    test(`${name}: the filter keeps requests, fields are removed and added by CEL`, async () => {
      const lines = await logged(head);
      assert.equal(lines.length, 1, JSON.stringify(lines));
      const line = lines[0] as Record<string, unknown>;
      assert.equal(line['http.path'], '/keep');
      assert.equal(line.team, 'blue');
      assert.equal(line['src.addr'], undefined);
      assert.equal(line['http.status'], 200);
    });

  const errors = (text: string) => {
    try {
      loadConfigText('t.yaml', `${text}${binds()}`, '.');
    } catch (err) {
      if (err instanceof ConfigError) return err.message;
      throw err;
    }
    assert.fail('expected a config error');
  };

  test('one spelling at a time, bad CEL named by field', () => {
    assert.match(
      errors(`config: {logging: {filter: "true"}}\nfrontendPolicies: {accessLog: {filter: "true"}}\n`),
      /config\.logging:.*older form of frontendPolicies\.accessLog: set one of them/,
    );
    assert.match(
      errors(`frontendPolicies: {accessLog: {filter: "true"}, logging: {filter: "true"}}\n`),
      /frontendPolicies\.logging: logging is another name of accessLog: set one of them/,
    );
    assert.match(errors(`config: {logging: {filter: "nope("}}\n`), /config\.logging\.filter: invalid CEL/);
    assert.match(
      errors(`config: {logging: {fields: {add: {x: "nope("}}}}\n`),
      /config\.logging\.fields\.add\.x: invalid CEL/,
    );
    assert.match(
      errors(`frontendPolicies: {logging: {add: {x: "nope("}}}\n`),
      /frontendPolicies\.logging\.add\.x: invalid CEL/,
    );
  });
});
