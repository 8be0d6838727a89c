// The admin, stats and readiness addresses: what can be listened on passes; a port past 65535 or an
// address that is not one is refused with the reason (not at start, with node's words).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { listenAddressProblem } from './listen-address.ts';

test('listen addresses: the forms that start, and why the others would not', () => {
  for (const ok of [
    'off',
    'unix:/run/gw.sock',
    '127.0.0.1:15000',
    'localhost:0',
    '[::1]:65535',
    'gw.local:80',
  ])
    assert.equal(listenAddressProblem(ok), undefined, ok);
  assert.equal(listenAddressProblem('127.0.0.1:99999'), 'port 99999 is out of range (0 to 65535)');
  assert.equal(listenAddressProblem('999.1.1.1:80'), '999.1.1.1 is not an IPv4 address');
  assert.equal(listenAddressProblem('[1::2::3]:80'), '1::2::3 is not an IPv6 address');
  for (const bad of ['bogus', '127.0.0.1', ':80', 'unix:relative', '127.0.0.1:port'])
    assert.equal(
      listenAddressProblem(bad),
      'expected "ip:port", "localhost:port", "unix:/path" or "off"',
      bad,
    );
});
