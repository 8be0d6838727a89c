// Backend connection settings against real upstreams: http.version picks HTTP/1.1, HTTP/2 over TLS
// (ALPN) or h2c (HTTP/2 by prior knowledge over plain text); http.requestTimeout cuts a slow answer;
// tcp.keepalives reach the socket.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { makeTestPki, type TestPki } from '@gw/testkit/tls';

let pki: TestPki;
let h2c: http2.Http2Server;
let h2tls: http2.Http2SecureServer;
const proxies: TestProxy[] = [];

/** Answers with the HTTP version the request came in on; `/slow` after 5 s. */
function answer(req: http2.Http2ServerRequest, res: http2.Http2ServerResponse): void {
  const send = () => res.writeHead(200, { 'x-version': req.httpVersion }).end();
  if (req.url === '/slow') setTimeout(() => !res.destroyed && send(), 5000).unref();
  else send();
}

const portOf = (s: { address(): AddressInfo | string | null }) => (s.address() as AddressInfo).port;

before(async () => {
  pki = await makeTestPki(['h2.internal']);
  const cert = pki.servers['h2.internal'];
  assert.ok(cert);
  // h2c only: an HTTP/1.1 request is not understood.
  h2c = http2.createServer(answer);
  h2tls = http2.createSecureServer({ cert: cert.cert, key: cert.key, allowHTTP1: true }, answer);
  await new Promise<void>((r) => h2c.listen(0, '127.0.0.1', r));
  await new Promise<void>((r) => h2tls.listen(0, '127.0.0.1', r));
});
after(async () => {
  for (const p of proxies) await p.close();
  await new Promise((r) => h2c.close(r));
  await new Promise((r) => h2tls.close(r));
  await pki.cleanup();
});

async function proxyTo(port: number, policies: string): Promise<TestProxy> {
  const p = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - backends:
      - host: "127.0.0.1:${port}"
        policies: ${policies}
`);
  proxies.push(p);
  return p;
}

const tls = () => `backendTLS: {root: {file: ${JSON.stringify(pki.caFile)}}, hostname: h2.internal}`;

test('http.version HTTP2 without TLS speaks h2c to the upstream', async () => {
  const p = await proxyTo(portOf(h2c), '{http: {version: HTTP2}}');
  for (let i = 0; i < 3; i++) {
    const r = await fetch(p.url('/'));
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('x-version'), '2.0');
  }
});

test('over TLS: HTTP/2.0 by ALPN, or HTTP/1.1 when the version says so', async () => {
  const two = await proxyTo(portOf(h2tls), `{${tls()}, http: {version: HTTP/2.0}}`);
  assert.equal((await fetch(two.url('/'))).headers.get('x-version'), '2.0');
  const one = await proxyTo(portOf(h2tls), `{${tls()}, http: {version: HTTP/1.1}}`);
  assert.equal((await fetch(one.url('/'))).headers.get('x-version'), '1.1');
});

test('http.requestTimeout cuts a slow answer with 504', async () => {
  const p = await proxyTo(portOf(h2c), '{http: {version: HTTP2, requestTimeout: 200ms}}');
  const start = performance.now();
  const r = await fetch(p.url('/slow'));
  assert.equal(r.status, 504);
  // at the 200 ms timeout, not when the answer came
  assert.ok(performance.now() - start < 3000);
});

test('tcp.keepalives: idle time, probe interval and probe count are set on each upstream socket', async (t) => {
  const calls: unknown[][] = [];
  const original = net.Socket.prototype.setKeepAlive;
  t.mock.method(net.Socket.prototype, 'setKeepAlive', function (this: net.Socket, ...args: unknown[]) {
    calls.push(args);
    return original.apply(this, args as Parameters<typeof original>);
  });
  const p = await proxyTo(
    portOf(h2tls),
    `{${tls()}, tcp: {keepalives: {time: 30s, interval: 5s, retries: 3}, connectTimeout: 2s}}`,
  );
  assert.equal((await fetch(p.url('/'))).status, 200);
  assert.ok(
    calls.some((c) => c[0] === true && c[1] === 30_000 && c[2] === 5000 && c[3] === 3),
    JSON.stringify(calls),
  );
});
