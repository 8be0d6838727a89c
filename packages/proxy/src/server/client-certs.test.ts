// A listener's tls.root (agentgateway's: the CA that verifies client certificates, mTLS). Before it
// was read into the listener's context and nothing asked clients for a certificate, so every client
// got in. Now: a port whose TLS listeners all verify clients fails the handshake of a client without
// a certificate its CA signed, over HTTP/1.1 and HTTP/2 and on TCP (TLS-terminating) binds; on a port
// shared with a listener that does not verify, the handshake asks, and a request to the verifying
// listener — chosen by Host, whatever name the handshake was for — needs a verified certificate (403).
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import https from 'node:https';
import { after, before, test } from 'node:test';
import tls from 'node:tls';
import { freePort, makeTestPki, startUpstream, type TestPki, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';

let pki: TestPki;
/** Another CA, whose client certificate gw must not take. */
let other: TestPki;
let up: TestServer;
let proxy: TestProxy;

before(async () => {
  pki = await makeTestPki(['secure.test', 'open.test']);
  other = await makeTestPki(['x.test']);
  up = await startUpstream('echo');
  const tlsOf = (name: string, root: boolean) => {
    const c = pki.servers[name];
    assert.ok(c);
    return `{cert: ${JSON.stringify(c.certFile)}, key: ${JSON.stringify(c.keyFile)}${root ? `, root: ${JSON.stringify(pki.caFile)}` : ''}}`;
  };
  const routes = `routes: [{backends: [{host: "127.0.0.1:${up.port}"}]}]`;
  // listeners share a port only when it is given (with port 0 each gets one of its own)
  const shared = await freePort();
  proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - protocol: HTTPS
    tls: ${tlsOf('secure.test', true)}
    ${routes}
- port: ${shared}
  address: 127.0.0.1
  listeners:
  - protocol: HTTPS
    hostname: secure.test
    tls: ${tlsOf('secure.test', true)}
    ${routes}
  - protocol: HTTPS
    hostname: open.test
    tls: ${tlsOf('open.test', false)}
    ${routes}
- port: 0
  address: 127.0.0.1
  listeners:
  - protocol: TLS
    tls: ${tlsOf('secure.test', true)}
    tcpRoutes: [{backends: [{host: "127.0.0.1:${up.port}"}]}]
`);
});

after(async () => {
  await proxy?.close();
  await up?.close();
  await pki?.cleanup();
  await other?.cleanup();
});

type Client = 'ours' | 'theirs' | 'none';
const certOf = (c: Client) =>
  c === 'ours'
    ? { cert: pki.client.cert, key: pki.client.key }
    : c === 'theirs'
      ? { cert: other.client.cert, key: other.client.key }
      : {};

/** An HTTP/1.1 GET over TLS: the status, or the error's code. */
function get(port: number, sni: string, host: string, client: Client): Promise<number | string> {
  return new Promise((resolve) => {
    const req = https.get(
      {
        host: '127.0.0.1',
        port,
        path: '/',
        servername: sni,
        headers: { host },
        ca: pki.ca,
        agent: false,
        ...certOf(client),
      },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

test('every listener of the port verifies: a client needs a certificate the CA signed, or the handshake fails', async () => {
  const port = proxy.port(0);
  assert.equal(await get(port, 'secure.test', 'secure.test', 'ours'), 200);
  for (const c of ['none', 'theirs'] as const) {
    const r = await get(port, 'secure.test', 'secure.test', c);
    assert.equal(typeof r, 'string', `${c}: ${r}`);
  }
  assert.equal(up.seen.at(-1)?.headers.host, 'secure.test');
});

test('over HTTP/2 as well', async () => {
  const port = proxy.port(0);
  const h2 = (c: Client) =>
    new Promise<number | string>((resolve) => {
      const s = http2.connect(`https://127.0.0.1:${port}`, {
        servername: 'secure.test',
        ca: pki.ca,
        ...certOf(c),
      });
      s.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
      const req = s.request({ ':path': '/', ':authority': 'secure.test' });
      req.on('response', (h) => {
        resolve(h[':status'] as number);
        s.close();
      });
      req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
      req.end();
    });
  assert.equal(await h2('ours'), 200);
  assert.equal(typeof (await h2('none')), 'string');
});

test('a port shared with a listener that does not verify: the verifying one answers 403 without a verified certificate', async () => {
  const port = proxy.port(1);
  assert.equal(await get(port, 'open.test', 'open.test', 'none'), 200);
  assert.equal(await get(port, 'secure.test', 'secure.test', 'ours'), 200);
  assert.equal(await get(port, 'secure.test', 'secure.test', 'none'), 403);
  assert.equal(await get(port, 'secure.test', 'secure.test', 'theirs'), 403);
  // the handshake for the open name, the request for the verifying one: refused as misdirected (the
  // connection was made for the other listener), never served by the verifying one's routes
  assert.equal(await get(port, 'open.test', 'secure.test', 'none'), 421);
});

test('a TLS-terminating TCP listener closes a connection without a verified certificate', async () => {
  const port = proxy.port(2);
  const tcp = (c: Client) =>
    new Promise<string>((resolve) => {
      const s = tls.connect(
        { host: '127.0.0.1', port, servername: 'secure.test', ca: pki.ca, ...certOf(c) },
        () => {
          s.write('GET / HTTP/1.1\r\nhost: secure.test\r\nconnection: close\r\n\r\n');
        },
      );
      let data = '';
      s.setEncoding('utf8');
      s.on('data', (d: string) => {
        data += d;
      });
      s.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
      s.on('close', () => resolve(data.split('\r\n')[0] ?? ''));
    });
  assert.equal(await tcp('ours'), 'HTTP/1.1 200 OK');
  assert.doesNotMatch(await tcp('none'), /^HTTP/);
});
