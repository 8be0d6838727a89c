// X-Forwarded-Proto and X-Forwarded-For: a client's own values count only when its address is a
// configured trusted proxy.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ConfigError } from '@gw/api';
import { type Echo, startUpstream, type TestServer } from '@gw/testkit';
import { startProxy } from '@gw/testkit/proxy';
import { loadConfigText } from '../config/load.ts';
import { TrustedProxies } from './forwarded.ts';

let up: TestServer;
before(async () => {
  up = await startUpstream();
});
after(() => up.close());

function config(trusted?: string): string {
  return `${trusted ? `frontendPolicies: {http: {trustedProxies: ${trusted}}}\n` : ''}binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - backends: [{host: "127.0.0.1:${up.port}"}]
`;
}

async function forwarded(trusted: string | undefined, headers: Record<string, string>) {
  const p = await startProxy(config(trusted));
  try {
    const r = await fetch(p.url('/'), { headers });
    const echo = (await r.json()) as Echo;
    return { proto: echo.headers['x-forwarded-proto'], xff: echo.headers['x-forwarded-for'] };
  } finally {
    await p.close();
  }
}

const SPOOFED = { 'x-forwarded-proto': 'https', 'x-forwarded-for': '203.0.113.9' };

describe('X-Forwarded-* from an untrusted peer (the default: nobody is trusted)', () => {
  test("the client's x-forwarded-proto is replaced by the connection's scheme", async () => {
    const r = await forwarded(undefined, SPOOFED);
    assert.equal(r.proto, 'http');
  });

  test("the client's x-forwarded-for is replaced by its address, not appended to", async () => {
    const r = await forwarded(undefined, SPOOFED);
    assert.equal(r.xff, '127.0.0.1');
  });

  test('a trusted list that does not cover the peer changes nothing', async () => {
    const r = await forwarded('[10.0.0.0/8, "fd00::/8"]', SPOOFED);
    assert.deepEqual(r, { proto: 'http', xff: '127.0.0.1' });
  });
});

describe('X-Forwarded-* from a trusted proxy', () => {
  test('its x-forwarded-proto is kept and the peer is appended to its x-forwarded-for', async () => {
    const r = await forwarded('[127.0.0.0/8]', SPOOFED);
    assert.deepEqual(r, { proto: 'https', xff: '203.0.113.9, 127.0.0.1' });
  });

  test('without the headers, they are set from the connection', async () => {
    const r = await forwarded('[127.0.0.1]', {});
    assert.deepEqual(r, { proto: 'http', xff: '127.0.0.1' });
  });
});

test('TrustedProxies: addresses and CIDRs of both families', () => {
  const t = new TrustedProxies(['10.0.0.0/8', '192.168.1.7', 'fd00::/8', '::1']);
  assert.equal(t.trusts('10.1.2.3'), true);
  assert.equal(t.trusts('11.0.0.1'), false);
  assert.equal(t.trusts('192.168.1.7'), true);
  assert.equal(t.trusts('192.168.1.8'), false);
  assert.equal(t.trusts('fd12::1'), true);
  assert.equal(t.trusts('::1'), true);
  assert.equal(t.trusts('fe80::1'), false);
  assert.equal(new TrustedProxies([]).trusts('127.0.0.1'), false);
  // an IPv6 range holds no IPv4 peer (node's BlockList alone would match ::/0 against every one)
  assert.equal(new TrustedProxies(['::/0']).trusts('10.0.0.1'), false);
  assert.equal(new TrustedProxies(['::/0']).trusts('2001:db8::1'), true);
  assert.equal(new TrustedProxies(['0.0.0.0/0']).trusts('2001:db8::1'), false);
});

test('an entry that is not an address or CIDR is a config error at its line', () => {
  const yaml = `frontendPolicies:
  http:
    trustedProxies: [10.0.0.0/8, 10.0.0.0/33, "fd00::/8", "fd00:::1", nope]
binds: []
`;
  assert.throws(
    () => loadConfigText('t.yaml', yaml, process.cwd()),
    (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      const text = String(err.message);
      assert.match(text, /trustedProxies\[1\]: expected an IP address or CIDR/);
      assert.match(text, /trustedProxies\[3\]: expected an IP address or CIDR/);
      assert.match(text, /trustedProxies\[4\]: expected an IP address or CIDR/);
      assert.doesNotMatch(text, /trustedProxies\[[02]\]/);
      return true;
    },
  );
});
