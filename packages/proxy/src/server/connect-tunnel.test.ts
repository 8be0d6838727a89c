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
import tls from 'node:tls';
import { makeTestPki, startUpstream, type TestPki, type TestServer } from '@gw/testkit';
import { eventuallyFound } from '@gw/testkit/eventually';
import { freePort, rawUntil, startLineEcho } from '@gw/testkit/http-client';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { fetch, ProxyAgent } from 'undici';
import { GwError } from '../errors.ts';
import { TunnelSocket, tunnelTarget } from './connect-tunnel.ts';
import { clientOf } from './proxy-protocol.ts';

/** A request's head on one line each, ended by the blank line. */
const head = (lines: string[]) => `${lines.join('\r\n')}\r\n\r\n`;

let web: TestServer;
let echo: { server: net.Server; port: number };
let pki: TestPki;
before(async () => {
  web = await startUpstream('echo');
  echo = await startLineEcho();
  pki = await makeTestPki(['api.test']);
});
after(async () => {
  await web.close();
  echo.server.close();
  await pki.cleanup();
});

describe('frontendPolicies.connect mode tunnel', () => {
  let proxy: TestProxy;
  /** The entry bind's port; the others are internal binds: no socket, these ports are what tunnels name. */
  let entry: number;
  const plain = 18081;
  const secure = 18443;
  const tcp = 15432;
  const halfClosed = 15433;
  let late: net.Server;
  before(async () => {
    // answers once the client has ended its side
    late = net.createServer((s) => {
      let got = '';
      s.on('data', (d) => {
        got += String(d);
      });
      s.on('end', () => s.end(`reply-after-end:${got}`));
      s.on('error', () => s.destroy());
    });
    late.listen(0, '127.0.0.1');
    await once(late, 'listening');
    const cert = pki.servers['api.test'] as { certFile: string; keyFile: string };
    proxy = await startProxy(`frontendPolicies:
  connect: {mode: tunnel}
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - policies: {directResponse: {status: 200, body: "entry served directly"}}
- port: ${plain}
  mode: internal
  listeners:
  - routes:
    - name: inner
      backends: [{host: "127.0.0.1:${web.port}"}]
      policies:
        requestHeaderModifier: {set: {x-came-through: "bind ${plain}"}}
- port: ${secure}
  mode: internal
  listeners:
  - protocol: HTTPS
    tls: {cert: ${JSON.stringify(cert.certFile)}, key: ${JSON.stringify(cert.keyFile)}}
    routes:
    - policies: {directResponse: {status: 200, body: "terminated by gw for api.test"}}
- port: ${tcp}
  mode: internal
  listeners:
  - protocol: TCP
    tcpRoutes:
    - backends: [{host: "127.0.0.1:${echo.port}"}]
- port: ${halfClosed}
  mode: internal
  listeners:
  - protocol: TCP
    tcpRoutes:
    - backends: [{host: "127.0.0.1:${(late.address() as AddressInfo).port}"}]
`);
    entry = proxy.port(0);
  });
  after(async () => {
    await proxy.close();
    late.close();
  });

  test("undici's ProxyAgent: a plain request through the tunnel is served by the bind on the port it asked for", async () => {
    const dispatcher = new ProxyAgent({ uri: `http://127.0.0.1:${entry}`, proxyTunnel: true });
    try {
      const res = await fetch(`http://127.0.0.1:${plain}/through?x=1`, { dispatcher });
      assert.equal(res.status, 200);
      const seen = (await res.json()) as { url: string; headers: Record<string, string> };
      assert.equal(seen.url, '/through?x=1');
      assert.equal(seen.headers['x-came-through'], `bind ${plain}`, "the target bind's route policies ran");
    } finally {
      await dispatcher.close();
    }
    // the CONNECT is logged as over once handed on; the request inside as one of bind 1's
    const connect = await eventuallyFound('the CONNECT logged', () =>
      proxy.accessLog.find((l) => l['http.method'] === 'CONNECT' && l['http.status'] === 200),
    );
    assert.equal(connect.route, undefined, 'no route runs for the CONNECT');
    assert.equal(connect['upgrade.bytesReceived'], undefined, 'its bytes are counted inside, not on it');
    const inner = await eventuallyFound('the request inside logged', () =>
      proxy.accessLog.find((l) => l['http.path'] === '/through?x=1'),
    );
    assert.match(String(inner.route), /\/inner$/);
    assert.equal(inner['http.status'], 200);
  });

  test("HTTPS through the tunnel: the target bind's own certificate terminates it; the client's address is kept and a CONNECT inside is refused", async () => {
    const dispatcher = new ProxyAgent({
      uri: `http://127.0.0.1:${entry}`,
      requestTls: { ca: pki.ca, servername: 'api.test' },
    });
    try {
      const res = await fetch(`https://127.0.0.1:${secure}/over-tls`, { dispatcher });
      assert.equal(res.status, 200);
      assert.equal(await res.text(), 'terminated by gw for api.test');
    } finally {
      await dispatcher.close();
    }
    const line = await eventuallyFound('the request over TLS logged', () =>
      proxy.accessLog.find((l) => l['http.path'] === '/over-tls'),
    );
    assert.match(String(line['src.addr']), /^127\.0\.0\.1:[1-9]\d*$/);

    // TLS inside the tunnel, then a CONNECT inside that
    const s = net.connect(entry, '127.0.0.1');
    await once(s, 'connect');
    s.write(head([`CONNECT 127.0.0.1:${secure} HTTP/1.1`, `Host: 127.0.0.1:${secure}`]));
    const [answer] = (await once(s, 'data')) as [Buffer];
    assert.match(String(answer), /^HTTP\/1\.1 200 OK\r\n/);
    const inner = tls.connect({ socket: s, servername: 'api.test', ca: pki.ca });
    await once(inner, 'secureConnect');
    inner.write(head([`CONNECT 127.0.0.1:${plain} HTTP/1.1`, `Host: 127.0.0.1:${plain}`]));
    let got = '';
    inner.setEncoding('utf8');
    for await (const chunk of inner) {
      got += chunk;
      if (/\r\n\r\n[\s\S]*\n/.test(got)) break;
    }
    inner.destroy();
    assert.match(got, /^HTTP\/1\.1 405 /);
    assert.match(got, /not tunnelled again/);
  });

  test("the client's FIN ends its direction only: an answer sent after it still comes back", async () => {
    const s = net.connect(entry, '127.0.0.1');
    await once(s, 'connect');
    s.write(head([`CONNECT 127.0.0.1:${halfClosed} HTTP/1.1`, `Host: 127.0.0.1:${halfClosed}`]));
    s.setEncoding('utf8');
    let got = '';
    s.on('data', (d: string) => {
      got += d;
      if (got.endsWith('\r\n\r\n')) s.end('hello');
    });
    await once(s, 'close');
    assert.match(got, /^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\nreply-after-end:hello$/);
  });

  test("a TCP listener's bind takes the tunnel's bytes, those sent with the CONNECT's head first", async () => {
    const got = await rawUntil(
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
    const missing = await rawUntil(
      entry,
      head([`CONNECT 127.0.0.1:${unused} HTTP/1.1`, `Host: 127.0.0.1:${unused}`]),
      /\r\n\r\n[\s\S]*\}/,
    );
    assert.match(missing, /^HTTP\/1\.1 404 /);
    assert.match(missing, new RegExp(`no bind of this gateway takes tunnels to port ${unused}`));
    // a bind on one address (the entry's, on loopback) is never a tunnel's
    const loopbackOnly = await rawUntil(
      entry,
      head([`CONNECT 127.0.0.1:${entry} HTTP/1.1`, `Host: 127.0.0.1:${entry}`]),
      /\r\n\r\n[\s\S]*\n/,
    );
    assert.match(loopbackOnly, /^HTTP\/1\.1 404 /);
    const portless = await rawUntil(
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
    s.write(head([`CONNECT 127.0.0.1:${plain} HTTP/1.1`, `Host: 127.0.0.1:${plain}`]));
    s.write(head([`CONNECT 127.0.0.1:${tcp} HTTP/1.1`, `Host: 127.0.0.1:${tcp}`]));
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
  listeners: [{}]
- port: 18090
  mode: internal
  listeners:
  - routes:
    - backends: [{host: "127.0.0.1:${web.port}"}]
`);
  try {
    const port = proxy.port();
    const got = await rawUntil(
      port,
      `PROXY TCP4 203.0.113.7 127.0.0.1 40000 ${port}\r\n${head(['CONNECT 127.0.0.1:18090 HTTP/1.1', 'Host: 127.0.0.1:18090'])}${head(['GET /inside HTTP/1.1', 'Host: 127.0.0.1:18090', 'Connection: close'])}`,
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
- port: 18091
  mode: internal
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
      const res = await fetch('http://127.0.0.1:18091/via-tunnel-bind', { dispatcher });
      assert.equal(res.status, 200);
      assert.equal(((await res.json()) as { url: string }).url, '/via-tunnel-bind');
    } finally {
      await dispatcher.close();
    }
    // the other bind has no tunnel: a CONNECT there is refused as without the policy
    const refused = await rawUntil(
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

test("maxConnectionDuration does not cut an open tunnel: the connection's one request lasts until it closes", async () => {
  const proxy = await startProxy(`frontendPolicies:
  connect: {mode: tunnel}
  http: {maxConnectionDuration: 200ms}
binds:
- port: 0
  address: 127.0.0.1
  listeners: [{}]
- port: 15434
  mode: internal
  listeners:
  - protocol: TCP
    tcpRoutes:
    - backends: [{host: "127.0.0.1:${echo.port}"}]
`);
  try {
    const s = net.connect(proxy.port(), '127.0.0.1');
    await once(s, 'connect');
    s.write(head(['CONNECT 127.0.0.1:15434 HTTP/1.1', 'Host: 127.0.0.1:15434']));
    const [answer] = (await once(s, 'data')) as [Buffer];
    assert.match(String(answer), /^HTTP\/1\.1 200 OK\r\n/);
    await new Promise((r) => setTimeout(r, 600));
    assert.equal(s.destroyed || s.readableEnded, false, 'still open after three times the duration');
    s.write('still here\n');
    const [echoed] = (await once(s, 'data')) as [Buffer];
    assert.equal(String(echoed), 'echo: still here\n');
    s.destroy();
  } finally {
    await proxy.close();
  }
});

test("on a port shared by a listener that verifies clients and one that does not, a CONNECT needs what the handshake's listener needs", async () => {
  const certs = await makeTestPki(['secure.test', 'open.test']);
  const tlsOf = (name: string, root: boolean) => {
    const c = certs.servers[name] as { certFile: string; keyFile: string };
    return `{cert: ${JSON.stringify(c.certFile)}, key: ${JSON.stringify(c.keyFile)}${root ? `, root: ${JSON.stringify(certs.caFile)}` : ''}}`;
  };
  // two listeners share a port only when it is given
  const shared = await freePort();
  const proxy = await startProxy(`frontendPolicies:
  connect: {mode: tunnel}
binds:
- port: ${shared}
  address: 127.0.0.1
  listeners:
  - {protocol: HTTPS, hostname: secure.test, tls: ${tlsOf('secure.test', true)}}
  - {protocol: HTTPS, hostname: open.test, tls: ${tlsOf('open.test', false)}}
- port: 18096
  mode: internal
  listeners:
  - routes:
    - policies: {directResponse: {status: 200, body: "inside"}}
`);
  /** A CONNECT over TLS for `sni`, with our client certificate or none: the answer's status line. */
  const connect = async (sni: string, withCert: boolean) => {
    const s = tls.connect({
      port: shared,
      host: '127.0.0.1',
      servername: sni,
      ca: certs.ca,
      ...(withCert ? { cert: certs.client.cert, key: certs.client.key } : {}),
    });
    await once(s, 'secureConnect');
    s.write(head(['CONNECT 127.0.0.1:18096 HTTP/1.1', 'Host: 127.0.0.1:18096']));
    const [answer] = (await once(s, 'data')) as [Buffer];
    s.destroy();
    return String(answer).split('\r\n')[0];
  };
  try {
    assert.equal(await connect('open.test', false), 'HTTP/1.1 200 OK');
    assert.equal(await connect('secure.test', true), 'HTTP/1.1 200 OK');
    assert.equal(await connect('secure.test', false), 'HTTP/1.1 403 Forbidden');
  } finally {
    await proxy.close();
    await certs.cleanup();
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
    bind('loopback', '127.0.0.1', 8443),
    bind('any', '::', 8443),
    bind('old', '::', 9000, true),
    bind('v6', '::1', 7000),
    bind('i8443', '::', 8443, false, true),
    bind('i443', '::', 443, false, true),
  ];
  const pick = (list: ReturnType<typeof bind>[], authority: string) => {
    const r = tunnelTarget(authority, list);
    return r instanceof GwError ? r.status : r.target.key;
  };

  test('the bind on all addresses at the port, whatever the host; then an internal bind for the port', () => {
    assert.equal(pick(binds, '127.0.0.1:8443'), 'any');
    assert.equal(pick(binds, 'api.openai.com:8443'), 'any');
    assert.equal(pick(binds, 'api.openai.com:443'), 'i443');
    const r = tunnelTarget('api.openai.com:443', binds);
    assert.ok(!(r instanceof GwError));
    assert.deepEqual([r.host, r.port], ['api.openai.com', 443]);
  });

  test('a bind on one address only, a retired bind, no port or a bad port: refused', () => {
    for (const [authority, status] of [
      ['[::1]:7000', 404],
      ['x.test:9000', 404],
      ['x.test', 400],
      ['x.test:0', 400],
      ['x.test:70000', 400],
      [':443', 400],
    ] as const)
      assert.equal(pick(binds, authority), status, authority);
    assert.equal(pick([bind('loopback', '127.0.0.1', 8443)], '127.0.0.1:8443'), 404);
  });

  test('an internal bind without a port takes what no other bind takes', () => {
    const withRest = [...binds, bind('rest', '::', 0, false, true)];
    assert.equal(pick(withRest, 'x.test:7000'), 'rest');
    assert.equal(pick(withRest, 'x.test:8443'), 'any');
    assert.equal(pick(withRest, 'x.test:443'), 'i443');
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

test('TunnelSocket as a socket: strings counted in bytes, setTimeout(0, cb) takes cb off, ref and unref return at once', async () => {
  const written: Buffer[] = [];
  const sink = new PassThrough();
  sink.on('data', (c: Buffer) => written.push(c));
  const carrier = Object.assign(Duplex.from({ readable: new PassThrough(), writable: sink }), {
    setTimeout: () => {},
  });
  const s = new TunnelSocket(
    carrier,
    Buffer.alloc(0),
    { address: '198.51.100.4', port: 1 },
    { host: '10.0.0.1', port: 80 },
  );
  await new Promise<void>((r) => s.write('héllo', () => r()));
  assert.equal(s.bytesWritten, 6);
  assert.equal(Buffer.concat(written).toString(), 'héllo');
  const cb = () => {};
  s.setTimeout(1000, cb);
  assert.equal(s.listenerCount('timeout'), 1);
  s.setTimeout(0, cb);
  assert.equal(s.listenerCount('timeout'), 0);
  // net.Socket's own would wait for a 'connect' this one says on every listener: a loop
  s.unref();
  s.ref();
  await new Promise((r) => setImmediate(r));
  s.destroy();
});
