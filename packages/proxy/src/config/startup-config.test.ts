// The config: block's start-up settings that would fail the start (an admin port past 65535, a log
// level the logger does not take) fail the load instead, at their line and field, so
// --validate-only reports what serving would.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { configIssues } from './test-support.ts';

const routes = `binds:
- port: 0
  listeners:
  - routes: [{policies: {directResponse: {status: 200, body: x}}}]
`;

test('addresses and log levels that would fail the start fail the load, with file:line and field', () => {
  const issues = configIssues(`config:
  adminAddr: 127.0.0.1:99999
  statsAddr: "[1::2::3]:15020"
  readinessAddr: bogus
  logging: {level: verbose}
${routes}`);
  assert.equal(
    issues,
    [
      'gw.yaml:2:14: config.adminAddr: port 99999 is out of range (0 to 65535)',
      'gw.yaml:3:14: config.statsAddr: 1::2::3 is not an IPv6 address',
      'gw.yaml:4:18: config.readinessAddr: expected "ip:port", "localhost:port", "unix:/path" or "off"',
      'gw.yaml:5:20: config.logging.level: invalid log level "verbose": expected one of trace, debug, info, warn, error, or module=level entries such as "info,proxy=debug"',
    ].join('\n'),
  );
  assert.match(
    configIssues(`config:\n  logging: {level: [info, proxy=loud]}\n${routes}`),
    /^gw\.yaml:2:27: config\.logging\.level\[1\]: invalid log level "loud"/,
  );
});

test('the levels and addresses the logger and the servers take load', () => {
  for (const level of ['info', 'DEBUG', '"info,rmcp=warn"', '[warn, proxy=debug]'])
    assert.equal(configIssues(`config:\n  logging: {level: ${level}}\n${routes}`), '', level);
  assert.equal(
    configIssues(
      `config: {adminAddr: "localhost:0", statsAddr: "[::1]:65535", readinessAddr: unix:/tmp/r.sock}\n${routes}`,
    ),
    '',
  );
});
