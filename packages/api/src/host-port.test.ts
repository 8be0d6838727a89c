// host:port written and read back: IPv6 in brackets, the port the part after the last colon.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hostPort, splitHostPort } from './host-port.ts';

test('splitHostPort reads what hostPort writes; no port is NaN', () => {
  for (const [host, port] of [
    ['example.com', 443],
    ['10.0.0.1', 8080],
    ['::1', 3128],
  ] as const)
    assert.deepEqual(splitHostPort(hostPort(host, port)), { host, port });
  assert.equal(hostPort('::1', 80), '[::1]:80');
  const none = splitHostPort('example.com');
  assert.equal(none.host, 'example.com');
  assert.ok(Number.isNaN(none.port));
});
