import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { GwError } from '../../errors.ts';
import type { PolicyConfig } from '../types.ts';
import { ipAccessCheck } from './index.ts';

type Config = PolicyConfig<'ipAccessControl'>;

/** 'pass', or the refusal's detail. */
function decide(config: Config, peer: string, xff?: string | string[]): string {
  try {
    ipAccessCheck(config)(peer, xff);
    return 'pass';
  } catch (err) {
    assert.ok(err instanceof GwError, String(err));
    assert.equal(err.code, 'GW_ERR_IP_DENIED');
    assert.equal(err.status, 403);
    return err.detail ?? '';
  }
}

describe('ipAccessControl', () => {
  test('no lists: every address passes', () => {
    assert.equal(decide({}, '198.51.100.7'), 'pass');
    assert.equal(decide({}, '2001:db8::1'), 'pass');
  });

  test('allow list: only its addresses; deny wins over allow', () => {
    const c: Config = { allow: ['10.0.0.0/8'], deny: ['10.0.1.0/24'] };
    assert.equal(decide(c, '10.0.2.5'), 'pass');
    assert.equal(decide(c, '10.0.1.5'), 'ip address 10.0.1.5 is not allowed');
    assert.equal(decide(c, '192.0.2.1'), 'ip address 192.0.2.1 is not allowed');
  });

  test('deny list alone: the rest passes; a bare address is a /32 or /128', () => {
    const c: Config = { deny: ['198.51.100.0/24', '192.0.2.9', '2001:db8:bad::/48'] };
    assert.equal(decide(c, '198.51.100.200'), 'ip address 198.51.100.200 is not allowed');
    assert.equal(decide(c, '192.0.2.9'), 'ip address 192.0.2.9 is not allowed');
    assert.equal(decide(c, '192.0.2.10'), 'pass');
    assert.equal(decide(c, '2001:db8:bad::1'), 'ip address 2001:db8:bad::1 is not allowed');
    assert.equal(decide(c, '2001:db8:600d::1'), 'pass');
  });

  test('IPv4 rules do not match IPv6 addresses, nor the other way round', () => {
    assert.equal(decide({ allow: ['0.0.0.0/0'] }, '2001:db8::1'), 'ip address 2001:db8::1 is not allowed');
    assert.equal(decide({ allow: ['::/0'] }, '192.0.2.1'), 'ip address 192.0.2.1 is not allowed');
  });

  test('the client from X-Forwarded-For only with xffNumTrustedHops, counted from the right', () => {
    const allow: Config = { allow: ['203.0.113.0/24'] };
    // without hops the header is the client's word: the peer decides
    assert.equal(decide(allow, '10.0.0.1', '203.0.113.5'), 'ip address 10.0.0.1 is not allowed');
    // one proxy in front: the last entry is what it saw
    const one: Config = { ...allow, xffNumTrustedHops: 1 };
    assert.equal(decide(one, '10.0.0.1', '192.0.2.66, 203.0.113.5'), 'pass');
    assert.equal(decide(one, '10.0.0.1', '203.0.113.5, 192.0.2.66'), 'ip address 192.0.2.66 is not allowed');
    // two: the entry before the last; a header over several lines counts as one list
    const two: Config = { ...allow, xffNumTrustedHops: 2 };
    assert.equal(decide(two, '10.0.0.1', ['203.0.113.5', '10.1.1.1']), 'pass');
    // more hops than entries: the leftmost
    assert.equal(decide({ ...allow, xffNumTrustedHops: 5 }, '10.0.0.1', '203.0.113.5, 10.1.1.1'), 'pass');
    // no header, or an entry that is not an address: the peer
    assert.equal(decide(one, '10.0.0.1'), 'ip address 10.0.0.1 is not allowed');
    assert.equal(decide(one, '203.0.113.9', 'unknown'), 'pass');
    // 0 hops: the peer
    assert.equal(
      decide({ ...allow, xffNumTrustedHops: 0 }, '10.0.0.1', '203.0.113.5'),
      'ip address 10.0.0.1 is not allowed',
    );
    // an IPv4-mapped entry is the IPv4 address
    assert.equal(decide(one, '10.0.0.1', '::ffff:203.0.113.5'), 'pass');
    // a port some proxies add is taken off: the address decides, not the peer
    const deny: Config = { deny: ['203.0.113.0/24'], xffNumTrustedHops: 1, skipPrivateIps: true };
    assert.equal(decide(deny, '10.0.0.5', '203.0.113.7:51234'), 'ip address 203.0.113.7 is not allowed');
    assert.equal(decide(deny, '10.0.0.5', '[2001:db8::7]:443'), 'pass');
    assert.equal(
      decide({ deny: ['2001:db8::/32'], xffNumTrustedHops: 1 }, '10.0.0.5', '[2001:db8::7]:443'),
      'ip address 2001:db8::7 is not allowed',
    );
  });

  test('skipPrivateIps lets loopback, private and link-local addresses through, deny lists included', () => {
    const c: Config = { allow: ['203.0.113.0/24'], deny: ['10.0.0.0/8'], skipPrivateIps: true };
    for (const ip of [
      '127.0.0.1',
      '10.1.2.3',
      '172.20.0.1',
      '192.168.1.1',
      '169.254.1.1',
      '::1',
      'fd00::1',
      'fe80::1',
    ])
      assert.equal(decide(c, ip), 'pass', ip);
    assert.equal(decide(c, '172.32.0.1'), 'ip address 172.32.0.1 is not allowed');
    assert.equal(decide(c, '203.0.113.1'), 'pass');
  });

  test('enforceFullChain: every entry and the peer must pass', () => {
    const c: Config = {
      allow: ['203.0.113.0/24', '198.51.100.0/24'],
      deny: ['203.0.113.128/25'],
      enforceFullChain: true,
      skipPrivateIps: true,
    };
    assert.equal(decide(c, '10.0.0.1', '203.0.113.5, 198.51.100.1'), 'pass');
    assert.equal(
      decide(c, '10.0.0.1', '203.0.113.5, 203.0.113.200'),
      'ip address 203.0.113.200 is not allowed',
    );
    assert.equal(decide(c, '10.0.0.1', '192.0.2.1, 203.0.113.5'), 'ip address 192.0.2.1 is not allowed');
    // the peer is part of the chain
    assert.equal(
      decide({ ...c, skipPrivateIps: false }, '10.0.0.1', '203.0.113.5'),
      'ip address 10.0.0.1 is not allowed',
    );
    // entries that are not addresses are passed over
    assert.equal(decide(c, '10.0.0.1', 'unknown, 203.0.113.5'), 'pass');
  });

  test('a header longer than maxXffLength (default 30) is refused first', () => {
    const list = (n: number) => Array.from({ length: n }, (_, i) => `192.0.2.${i + 1}`).join(', ');
    assert.equal(decide({}, '10.0.0.1', list(30)), 'pass');
    assert.equal(
      decide({}, '10.0.0.1', list(31)),
      'X-Forwarded-For has 31 addresses, more than the 30 allowed',
    );
    assert.equal(
      decide({ maxXffLength: 2 }, '10.0.0.1', list(3)),
      'X-Forwarded-For has 3 addresses, more than the 2 allowed',
    );
  });

  test('a peer with no IP address (a unix socket) is refused', () => {
    assert.equal(decide({ deny: ['192.0.2.0/24'] }, ''), 'the client address is unknown: not allowed');
  });
});
