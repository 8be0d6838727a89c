// frontendPolicies.connect mode tunnel and a bind's tunnelProtocol connect: a CONNECT is answered 200
// and its bytes become a connection to the gateway's own bind on the port it asked for, served there
// by that bind's TLS, listeners and routes, from the client that sent the CONNECT. Real clients:
// undici's ProxyAgent (plain HTTP and HTTPS through the tunnel), node's http2 client (a CONNECT
// stream), raw sockets for what a client library would not send.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import http2 from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import { Duplex, PassThrough } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { makeTestPki, startUpstream, type TestPki, type TestServer } from '@gw/testkit';
import { eventuallyFound } from '@gw/testkit/eventually';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { fetch, ProxyAgent } from 'undici';
import { GwError } from '../errors.ts';
import { TunnelSocket, tunnelTarget } from './connect-tunnel.ts';
import { clientOf } from './proxy-protocol.ts';

/** Writes `text` on a new connection to `port` and reads until `until` matches what came back. */
async function raw(port: number, text: string | Buffer, until: RegExp): Promise<string> {
  const s = net.connect(port, '127.0.0.1');
  await once(s, 'connect');
  s.write(text);
  let got = '';
  s.setEncoding('utf8');
  for await (const chunk of s) {
    got += chunk;
    if (until.test(got)) break;
  }
  s.destroy();
  return got;
}

/** A request's head on one line each, ended by the blank line. */
const head = (lines: string[]) => `${lines.join('\r\n')}\r\n\r\n`;

let web: TestServer;
let echo: { server: net.Server; port: number };
let pki: TestPki;
before(async () => {
  web = await startUpstream('echo');
  const server = net.createServer((s) => {
    s.on('data', (d) => s.write(`echo: ${String(d)}`));
    s.on('error', () => s.destroy());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  echo = { server, port: (server.address() as AddressInfo).port };
  pki = await makeTestPki(['api.test']);
});
after(async () => {
  await web.close();
  echo.server.close();
  await pki.cleanup();
});

describe('frontendPolicies.connect mode tunnel', () => {
  let proxy: TestProxy;
  /** The ports of the binds, by what they serve. */
  let entry: number;
  let plain: number;
  let secure: number;
  let tcp: number;
  before(async () => {
    const cert = pki.servers['api.test'] as { certFile: string; keyFile: string };
    proxy = await startProxy(`frontendPolicies:
  connect: {mode: tunnel}
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - policies: {directResponse: {status: 200, body: "entry served directly"}}
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - name: inner
      backends: [{host: "127.0.0.1:${web.port}"}]
      policies:
        requestHeaderModifier: {set: {x-came-through: "bind 1"}}
- port: 0
  address: 127.0.0.1
  listeners:
  - protocol: HTTPS
    tls: {cert: ${JSON.stringify(cert.certFile)}, key: ${JSON.stringify(cert.keyFile)}}
    routes:
    - policies: {directResponse: {status: 200, body: "terminated by gw for api.test"}}
- port: 0
  address: 127.0.0.1
  listeners:
  - protocol: TCP
    tcpRoutes:
    - backends: [{host: "127.0.0.1:${echo.port}"}]
`);
    [entry, plain, secure, tcp] = [0, 1, 2, 3].map((n) => proxy.port(n)) as [number, number, number, number];
  });
  after(() => proxy.close());

  test("undici's ProxyAgent: a plain request through the tunnel is served by the bind on the port it asked for", async () => {
    const dispatcher = new ProxyAgent({ uri: `http://127.0.0.1:${entry}`, proxyTunnel: true });
    try {
      const res = await fetch(`http://127.0.0.1:${plain}/through?x=1`, { dispatcher });
      assert.equal(res.status, 200);
      const seen = (await res.json()) as { url: string; headers: Record<string, string> };
      assert.equal(seen.url, '/through?x=1');
      assert.equal(seen.headers['x-came-through'], 'bind 1', "bind 1's route policies ran");
    } finally {
      await dispatcher.close();
    }
    // the CONNECT is logged as over once handed on; the request inside as one of bind 1's
    const connect = await eventuallyFound('the CONNECT logged', () =>
      proxy.accessLog.find((l) => l['http.method'] === 'CONNECT' && l['http.status'] === 200),
    );
    assert.equal(connect.route, undefined, 'no route runs for the CONNECT');
    const inner = await eventuallyFound('the request inside logged', () =>
      proxy.accessLog.find((l) => l['http.path'] === '/through?x=1'),
    );
    assert.match(String(inner.route), /\/inner$/);
    assert.equal(inner['http.status'], 200);
  });

  test("HTTPS through the tunnel: the target bind's own certificate and SNI listener terminate it", async () => {
    const dispatcher = new ProxyAgent({
      uri: `http://127.0.0.1:${entry}`,
      requestTls: { ca: pki.ca, servername: 'api.test' },
    });
    try {
      const res = await fetch(`https://127.0.0.1:${secure}/`, { dispatcher });
      assert.equal(res.status, 200);
      assert.equal(await res.text(), 'terminated by gw for api.test');
    } finally {
      await dispatcher.close();
    }
  });

  test("a TCP listener's bind takes the tunnel's bytes, those sent with the CONNECT's head first", async () => {
    const got = await raw(
      entry,
      `${head([`CONNECT 127.0.0.1:${tcp} HTTP/1.1`, `Host: 127.0.0.1:${tcp}`])}ping\n`,
      /echo: ping\n/,
    );
    const answer = got.slice(0, got.indexOf('\r\n\r\n'));
    assert.match(answer, /^HTTP\/1\.1 200 OK/);
    // RFC 9110 §9.3.6: a tunnel's 200 has neither length nor chunks
    assert.doesNotMatch(answer, /content-length|transfer-encoding|connection/i);
    assert.match(got, /\r\n\r\necho: ping\n$/);
  });

  test('an HTTP/2 CONNECT stream is the tunnel: an HTTP/1.1 request inside it is served by the target bind', async () => {
    const session = http2.connect(`http://127.0.0.1:${entry}`);
    try {
      const stream = session.request({ ':method': 'CONNECT', ':authority': `127.0.0.1:${plain}` });
      const [headers] = (await once(stream, 'response')) as [http2.IncomingHttpHeaders];
      assert.equal(headers[':status'], 200);
      stream.write(head(['GET /over-h2 HTTP/1.1', `Host: 127.0.0.1:${plain}`, 'Connection: close']));
      let got = '';
      stream.setEncoding('utf8');
      for await (const chunk of stream) got += chunk;
      assert.match(got, /^HTTP\/1\.1 200 OK\r\n/);
      assert.match(got, /"url":"\/over-h2"/);
    } finally {
      session.destroy();
    }
  });

  test('a port no bind listens on is a 404 naming it; an authority without a port is a 400', async () => {
    const free = net.createServer().listen(0, '127.0.0.1');
    await once(free, 'listening');
    const unused = (free.address() as AddressInfo).port;
    free.close();
    const missing = await raw(
      entry,
      head([`CONNECT 127.0.0.1:${unused} HTTP/1.1`, `Host: 127.0.0.1:${unused}`]),
      /\r\n\r\n[\s\S]*\}/,
    );
    assert.match(missing, /^HTTP\/1\.1 404 /);
    assert.match(missing, new RegExp(`no bind of this gateway listens on port ${unused}`));
    const portless = await raw(
      entry,
      head(['CONNECT example.test HTTP/1.1', 'Host: example.test']),
      /\r\n\r\n[\s\S]*\}/,
    );
    assert.match(portless, /^HTTP\/1\.1 400 /);
    assert.match(portless, /host:port/);
  });

  test('a CONNECT inside a tunnel is not tunnelled again: 405', async () => {
    const s = net.connect(entry, '127.0.0.1');
    await once(s, 'connect');
    s.setEncoding('utf8');
    let got = '';
    s.write(head([`CONNECT 127.0.0.1:${entry} HTTP/1.1`, `Host: 127.0.0.1:${entry}`]));
    s.write(head([`CONNECT 127.0.0.1:${plain} HTTP/1.1`, `Host: 127.0.0.1:${plain}`]));
    for await (const chunk of s) {
      got += chunk;
      if (/405[\s\S]*\r\n\r\n[\s\S]*\}/.test(got)) break;
    }
    s.destroy();
    assert.match(got, /^HTTP\/1\.1 200 OK\r\n(Date: .*\r\n)?\r\nHTTP\/1\.1 405 /);
    assert.match(got, /not tunnelled again/);
  });

  test('other requests on a bind are served as usual', async () => {
    const res = await fetch(`http://127.0.0.1:${entry}/`);
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'entry served directly');
  });
});

test("the inside of a tunnel reads no PROXY header: its client is the one the outer connection's header named", async () => {
  const proxy = await startProxy(`frontendPolicies:
  connect: {mode: tunnel}
  proxyProtocol: {version: v1, mode: strict}
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - backends: [{host: "127.0.0.1:${web.port}"}]
`);
  try {
    const port = proxy.port();
    const got = await raw(
      port,
      `PROXY TCP4 203.0.113.7 127.0.0.1 40000 ${port}\r\n${head([`CONNECT 127.0.0.1:${port} HTTP/1.1`, `Host: 127.0.0.1:${port}`])}${head(['GET /inside HTTP/1.1', `Host: 127.0.0.1:${port}`, 'Connection: close'])}`,
      /"url":"\/inside"/,
    );
    assert.match(got, /^HTTP\/1\.1 200 OK\r\n(Date: .*\r\n)?\r\nHTTP\/1\.1 200 OK/);
    const inner = await eventuallyFound('the request inside logged', () =>
      proxy.accessLog.find((l) => l['http.path'] === '/inside'),
    );
    assert.equal(inner['src.addr'], '203.0.113.7:40000');
  } finally {
    await proxy.close();
  }
});

test('tunnelProtocol connect: the bind takes CONNECT tunnels only, without any frontend policy', async () => {
  const proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  tunnelProtocol: connect
  listeners:
  - routes:
    - policies: {directResponse: {status: 200, body: "never served"}}
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - backends: [{host: "127.0.0.1:${web.port}"}]
`);
  try {
    const get = await fetch(`http://127.0.0.1:${proxy.port(0)}/`);
    assert.equal(get.status, 405);
    assert.equal(get.headers.get('allow'), 'CONNECT');
    assert.match(await get.text(), /CONNECT tunnels only \(tunnelProtocol: connect\)/);
    const dispatcher = new ProxyAgent({ uri: `http://127.0.0.1:${proxy.port(0)}`, proxyTunnel: true });
    try {
      const res = await fetch(`http://127.0.0.1:${proxy.port(1)}/via-tunnel-bind`, { dispatcher });
      assert.equal(res.status, 200);
      assert.equal(((await res.json()) as { url: string }).url, '/via-tunnel-bind');
    } finally {
      await dispatcher.close();
    }
    // the other bind has no tunnel: a CONNECT there is refused as without the policy
    const refused = await raw(
      proxy.port(1),
      head([`CONNECT 127.0.0.1:${proxy.port(1)} HTTP/1.1`, `Host: 127.0.0.1:${proxy.port(1)}`]),
      /\r\n\r\n[\s\S]*\}/,
    );
    assert.match(refused, /^HTTP\/1\.1 405 /);
  } finally {
    await proxy.close();
  }
});

test('internal binds open no socket: one takes the tunnels to its port (HTTPS to api.test:443 here), one without a port every other', async () => {
  const cert = pki.servers['api.test'] as { certFile: string; keyFile: string };
  const proxy = await startProxy(`frontendPolicies:
  connect: {mode: tunnel}
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - backends: [{host: "127.0.0.1:${web.port}"}]
- port: 443
  mode: internal
  listeners:
  - protocol: HTTPS
    hostname: api.test
    tls: {cert: ${JSON.stringify(cert.certFile)}, key: ${JSON.stringify(cert.keyFile)}}
    routes:
    - policies: {directResponse: {status: 200, body: "api.test:443 inside gw"}}
- mode: internal
  listeners:
  - routes:
    - policies: {directResponse: {status: 200, body: "caught by the internal bind without a port"}}
`);
  const dispatcher = new ProxyAgent({
    uri: `http://127.0.0.1:${proxy.port()}`,
    proxyTunnel: true,
    requestTls: { ca: pki.ca },
  });
  try {
    const api = await fetch('https://api.test/v1/models', { dispatcher });
    assert.equal(api.status, 200);
    assert.equal(await api.text(), 'api.test:443 inside gw');
    const other = await fetch('http://anything.test:8080/', { dispatcher });
    assert.equal(other.status, 200);
    assert.equal(await other.text(), 'caught by the internal bind without a port');
  } finally {
    await dispatcher.close();
    await proxy.close();
  }
});

describe('tunnelTarget', () => {
  const bind = (key: string, address: string, port: number, retired = false, internal = false) => ({
    key,
    port,
    retired,
    current: { ir: internal ? { address, internal: true as const } : { address } },
    adopt() {},
  });
  const binds = [
    bind('any', '::', 8443),
    bind('loopback', '127.0.0.1', 8443),
    bind('old', '::', 9000, true),
    bind('v6', '::1', 7000),
  ];

  test('the bind on the address an IP host names wins over the one on all addresses', () => {
    const r = tunnelTarget('127.0.0.1:8443', binds);
    assert.ok(!(r instanceof GwError));
    assert.equal(r.target.key, 'loopback');
    const v6 = tunnelTarget('[::1]:7000', binds);
    assert.ok(!(v6 instanceof GwError));
    assert.equal(v6.target.key, 'v6');
  });

  test('a name is not looked up: the bind on all addresses at its port takes it', () => {
    const r = tunnelTarget('api.openai.com:8443', binds);
    assert.ok(!(r instanceof GwError));
    assert.equal(r.target.key, 'any');
    assert.equal(r.host, 'api.openai.com');
  });

  test('a retired bind, a bind on another address only, no port or a bad port: refused', () => {
    for (const [authority, status] of [
      ['x.test:9000', 404],
      ['x.test:7000', 404],
      ['x.test', 400],
      ['x.test:0', 400],
      ['x.test:70000', 400],
      [':443', 400],
    ] as const) {
      const r = tunnelTarget(authority, binds);
      assert.ok(r instanceof GwError, authority);
      assert.equal(r.status, status, authority);
    }
  });
});

test("TunnelSocket: the client's bytes after the CONNECT's head first, the client as its peer, the CONNECT's IP and port as the address reached", async () => {
  /** A carrier whose reads are what is written to `from`. */
  const carrier = (from: PassThrough) =>
    Object.assign(Duplex.from({ readable: from, writable: new PassThrough() }), {
      setTimeout: () => {},
      localAddress: '192.0.2.10',
    });
  const peer = { address: '198.51.100.4', port: 50_000 };
  const client = new PassThrough();
  const byIp = new TunnelSocket(carrier(client), Buffer.from('first '), peer, {
    host: '10.1.2.3',
    port: 443,
  });
  assert.deepEqual([byIp.localAddress, byIp.localPort], ['10.1.2.3', 443]);
  assert.deepEqual([byIp.remoteAddress, byIp.remotePort], ['198.51.100.4', 50_000]);
  assert.deepEqual(clientOf(byIp), { ...peer, tunnelled: true });
  const byName = new TunnelSocket(carrier(new PassThrough()), Buffer.alloc(0), peer, {
    host: 'api.openai.com',
    port: 443,
  });
  assert.deepEqual([byName.localAddress, byName.localPort], ['192.0.2.10', 443]);
  byName.destroy();
  client.end('then more');
  let got = '';
  byIp.setEncoding('utf8');
  for await (const chunk of byIp) got += chunk;
  assert.equal(got, 'first then more');
});

test('tunnelTarget: an internal bind takes its port like one on all addresses; one without a port, what no other takes', () => {
  const bind = (key: string, address: string, port: number, internal = false) => ({
    key,
    port,
    retired: false,
    current: { ir: internal ? { address, internal: true as const } : { address } },
    adopt() {},
  });
  const binds = [
    bind('rest', '::', 0, true),
    bind('loopback', '127.0.0.1', 443),
    bind('i443', '::', 443, true),
  ];
  const pick = (authority: string) => {
    const r = tunnelTarget(authority, binds);
    return r instanceof GwError ? r.status : r.target.key;
  };
  assert.equal(pick('127.0.0.1:443'), 'loopback');
  assert.equal(pick('api.openai.com:443'), 'i443');
  assert.equal(pick('api.openai.com:8443'), 'rest');
  assert.equal(pick('api.openai.com'), 400);
});
