// config.enableIpv6 and config.dns.lookupFamily: which address families a backend's name resolves to.
// An upstream on 127.0.0.1 named `localhost` (which this machine's hosts file gives an IPv4 address
// only): reached with both families, IPv4 only and IPv4 first; not with IPv6 only, which gets the
// connection error a name without an address gets. HTTP and TCP backends alike.
import assert from 'node:assert/strict';
import { lookup } from 'node:dns/promises';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { ConfigError } from '@gw/api';
import { startUpstream, type TestServer, tcpRoundTrip } from '@gw/testkit';
import { startProxy } from '@gw/testkit/proxy';
import { loadConfigText } from '../config/load.ts';

let up: TestServer;
let v6Localhost = false;
before(async () => {
  up = await startUpstream('v4');
  // the test is about the family gw asks for: it needs `localhost` to have no IPv6 address
  v6Localhost = (await lookup('localhost', { all: true })).some((a) => a.family === 6);
});
after(async () => {
  await up?.close();
});

const config = (global: string) => `config:
  adminAddr: "off"
${global}
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - backends: [{host: "localhost:${up.port}"}]
`;

async function status(global: string): Promise<number> {
  const proxy = await startProxy(config(global));
  try {
    const r = await fetch(proxy.url('/'));
    await r.arrayBuffer();
    return r.status;
  } finally {
    await proxy.close();
  }
}

describe('config.dns and config.enableIpv6', () => {
  test('both families (the default), IPv4 only, IPv4 first: the IPv4 upstream answers', async () => {
    assert.equal(await status(''), 200);
    assert.equal(await status('  enableIpv6: false'), 200);
    assert.equal(await status('  dns: {lookupFamily: V4Only}'), 200);
    assert.equal(await status('  dns: {lookupFamily: V4Preferred}'), 200);
  });

  test('IPv6 only: the name has no such address, so the backend cannot be reached', async (t) => {
    if (v6Localhost) return t.skip('localhost has an IPv6 address on this machine');
    assert.equal(await status('  dns: {lookupFamily: V6Only}'), 503);
  });

  test('a TCP backend resolves the same way', async (t) => {
    if (v6Localhost) return t.skip('localhost has an IPv6 address on this machine');
    const echo = net.createServer((s) => s.pipe(s));
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
    const port = (echo.address() as net.AddressInfo).port;
    const tcp = (global: string) =>
      `config:\n  adminAddr: "off"\n${global}\nbinds:\n- port: 0\n  address: 127.0.0.1\n  listeners:\n  - protocol: TCP\n    tcpRoutes:\n    - backends: [{host: "localhost:${port}"}]\n`;
    const roundTrip = async (global: string) => {
      const proxy = await startProxy(tcp(global));
      try {
        return await tcpRoundTrip(proxy.port());
      } finally {
        await proxy.close();
      }
    };
    try {
      assert.equal(await roundTrip('  dns: {lookupFamily: V4Only}'), 'ping');
      assert.equal(await roundTrip('  dns: {lookupFamily: V6Only}'), '', 'closed without reaching the echo');
    } finally {
      await new Promise((r) => echo.close(r));
    }
  });

  test('the loader: the IR, a contradiction and what is not built', () => {
    const load = (global: string) => loadConfigText('gw.yaml', config(global), process.cwd()).ir.global.dns;
    assert.equal(load(''), undefined);
    assert.deepEqual(load('  enableIpv6: false'), { family: 4 });
    assert.deepEqual(load('  dns: {lookupFamily: V4Preferred}'), { order: 'ipv4first' });
    assert.deepEqual(load('  enableIpv6: false\n  dns: {lookupFamily: All}'), { family: 4 });
    assert.throws(
      () => load('  enableIpv6: false\n  dns: {lookupFamily: V6Only}'),
      (e: unknown) =>
        e instanceof ConfigError &&
        /config\.dns\.lookupFamily: V6Only resolves IPv6 addresses only, and enableIpv6 is false/.test(
          e.message,
        ),
    );
    // agentgateway's DNS_LOOKUP_FAMILY when the file does not say
    const withEnv = (global: string, value: string) =>
      loadConfigText('gw.yaml', config(global), process.cwd(), (n) =>
        n === 'DNS_LOOKUP_FAMILY' ? value : undefined,
      ).ir.global.dns;
    assert.deepEqual(withEnv('', 'V4Only'), { family: 4 });
    assert.equal(withEnv('  dns: {lookupFamily: All}', 'V4Only'), undefined);
    assert.throws(() => withEnv('', 'v4'), /DNS_LOOKUP_FAMILY=v4 is not one of All, Auto/);
    assert.throws(
      () => load('  dns: {edns0: true}'),
      /config\.dns\.edns0: config\.dns\.edns0 \(gw resolves with the system resolver, getaddrinfo\) is not supported/,
    );
  });
});
