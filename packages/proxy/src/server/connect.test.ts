// HTTP CONNECT (frontendPolicies.connect): refused with a 405 that says why unless the policy's mode
// is route; then routed by the authority like any request (its route policies run), and the backend
// gets a TCP connection the client's bytes flow over after a 200: a dynamic backend dials the
// authority asked for (undici's ProxyAgent, the client a Node program uses for an egress proxy, over
// HTTP and over TLS end to end), a host backend its own address. HTTP/1.1 and HTTP/2 (CONNECT without
// :protocol) both, over plain text and TLS.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import http from 'node:http';
import http2 from 'node:http2';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import tls from 'node:tls';
import { makeTestPki, startUpstream, type TestPki, type TestServer } from '@gw/testkit';
import { rawUntil, startLineEcho } from '@gw/testkit/http-client';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { fetch, ProxyAgent } from 'undici';

/** What comes back up to the end of an answer's first body line. */
const ANSWERED = /\r\n\r\n[\s\S]*\n/;

/**
 * An HTTP/1.1 CONNECT to `authority` (Host the same) with `headers` (lines ending in CRLF), then
 * `send`; read until `until` matches.
 */
function h1Connect(
  port: number,
  authority: string,
  until = ANSWERED,
  headers = '',
  send = '',
): Promise<string> {
  return rawUntil(
    port,
    `CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n${headers}\r\n${send}`,
    until,
  );
}

/** An HTTP/2 CONNECT (no :protocol) to `authority`: the status, and what came back after writing `send`. */
async function h2Connect(port: number, authority: string, send?: string): Promise<[number, string]> {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  try {
    const stream = session.request({ ':method': 'CONNECT', ':authority': authority });
    const [headers] = (await once(stream, 'response')) as [http2.IncomingHttpHeaders];
    const status = Number(headers[':status']);
    if (send !== undefined) stream.end(send);
    else stream.end();
    let body = '';
    stream.setEncoding('utf8');
    for await (const chunk of stream) body += chunk;
    return [status, body];
  } finally {
    session.destroy();
  }
}

/** A GET to gw with the Host given (which the dynamic backend dials). */
function get(port: number, path: string, host: string): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) =>
    http.get({ port, host: '127.0.0.1', path, headers: { host } }, resolve).on('error', reject),
  );
}

/** The first access log line `match` takes, once written (within 5 s). */
async function logged(
  proxy: TestProxy,
  match: (l: Record<string, unknown>) => boolean,
): Promise<Record<string, unknown>> {
  for (let i = 0; i < 250; i++) {
    const line = proxy.accessLog.find(match);
    if (line) return line;
    await sleep(20);
  }
  throw new Error(`no such access log line in ${JSON.stringify(proxy.accessLog)}`);
}

let echo: { server: net.Server; port: number };
let web: TestServer;
before(async () => {
  echo = await startLineEcho();
  web = await startUpstream('echo');
});
after(async () => {
  echo.server.close();
  await web.close();
});

describe('without frontendPolicies.connect', () => {
  let proxy: TestProxy;
  before(async () => {
    proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - backends: [{dynamic: {}}]
`);
  });
  after(() => proxy.close());

  test('an HTTP/1.1 CONNECT gets a 405 saying why, and the connection carries nothing else', async () => {
    const got = await h1Connect(proxy.port(), `127.0.0.1:${echo.port}`, /frontendPolicies\.connect[^\n]*\n/);
    assert.match(got, /^HTTP\/1\.1 405 /);
    assert.match(got, /\r\nallow: GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS\r\n/i);
    assert.match(
      got,
      /CONNECT is not allowed here \(frontendPolicies\.connect mode: route or tunnel lets it through\)/,
    );
    const line = await logged(proxy, (l) => l['http.method'] === 'CONNECT');
    assert.equal(line['http.status'], 405);
  });

  test('an HTTP/2 CONNECT gets the same 405', async () => {
    const [status, body] = await h2Connect(proxy.port(), `127.0.0.1:${echo.port}`);
    assert.equal(status, 405);
    assert.match(body, /frontendPolicies\.connect/);
  });

  test('other requests are served as before', async () => {
    const res = await get(proxy.port(), '/plain', `127.0.0.1:${web.port}`);
    assert.equal(res.statusCode, 200);
    res.resume();
    assert.equal(web.seen.at(-1)?.url, '/plain');
  });
});

describe('connect mode route', () => {
  let proxy: TestProxy;
  let tlsWeb: https.Server;
  let ca: string;
  let pki: TestPki;
  let tlsEcho: tls.Server;
  before(async () => {
    pki = await makeTestPki(['localhost']);
    ca = pki.ca;
    const server = pki.servers.localhost as { cert: string; key: string };
    tlsWeb = https.createServer({ cert: server.cert, key: server.key }, (req, res) =>
      res.end(`tls upstream saw ${req.url}`),
    );
    tlsWeb.listen(0, '127.0.0.1');
    await once(tlsWeb, 'listening');
    // a TLS line server that says which ALPN protocol the handshake agreed (false: none offered)
    tlsEcho = tls.createServer(
      { cert: server.cert, key: server.key, ALPNProtocols: ['h2', 'http/1.1'] },
      (s) => {
        s.on('data', (d) => s.write(`alpn=${s.alpnProtocol} ${String(d)}`));
        s.on('error', () => s.destroy());
      },
    );
    tlsEcho.listen(0, '127.0.0.1');
    await once(tlsEcho, 'listening');
    proxy = await startProxy(`frontendPolicies:
  connect: {mode: route}
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - name: originated
      hostnames: [originated.test]
      backends:
      - host: "127.0.0.1:${(tlsEcho.address() as AddressInfo).port}"
        policies:
          backendTLS: {root: ${JSON.stringify(pki.caFile)}, hostname: localhost}
    - name: fixed
      hostnames: [fixed.test]
      backends: [{host: "127.0.0.1:${echo.port}"}]
    - name: guarded
      hostnames: [guarded.test]
      policies:
        authorization: {rules: ['request.headers["x-pass"] == "yes" && request.headers["host"].endsWith(":443")']}
      backends: [{host: "127.0.0.1:${echo.port}"}]
    - name: answered
      hostnames: [answered.test]
      policies:
        directResponse: {status: 200, body: "not a tunnel"}
      backends: [{host: "127.0.0.1:${echo.port}"}]
    - name: anywhere
      backends: [{dynamic: {}}]
`);
  });
  after(async () => {
    await proxy.close();
    tlsWeb.closeAllConnections();
    tlsWeb.close();
    tlsEcho.close();
    await pki.cleanup();
  });

  test("undici's ProxyAgent tunnels a plain HTTP request through to the authority it asked for", async () => {
    const dispatcher = new ProxyAgent({ uri: `http://127.0.0.1:${proxy.port()}`, proxyTunnel: true });
    try {
      const res = await fetch(`http://127.0.0.1:${web.port}/through?x=1`, { dispatcher });
      assert.equal(res.status, 200);
      assert.equal(((await res.json()) as { url: string }).url, '/through?x=1');
    } finally {
      await dispatcher.close();
    }
    // the tunnel's line is written when its connections have closed
    const line = await logged(
      proxy,
      (l) => l['http.method'] === 'CONNECT' && String(l.route).endsWith('/anywhere'),
    );
    assert.equal(line['http.status'], 200);
    assert.equal(line.endpoint, `127.0.0.1:${web.port}`);
    assert.ok((line['upgrade.bytesSent'] as number) > 0, 'the tunnel carried the response');
    assert.equal(line['upgrade.protocol'], undefined);
  });

  test('TLS from the client to the upstream passes through untouched (the upstream certificate is verified by the client)', async () => {
    const dispatcher = new ProxyAgent({
      uri: `http://127.0.0.1:${proxy.port()}`,
      requestTls: { ca, servername: 'localhost' },
    });
    try {
      const port = (tlsWeb.address() as AddressInfo).port;
      const res = await fetch(`https://127.0.0.1:${port}/secret`, { dispatcher });
      assert.equal(res.status, 200);
      assert.equal(await res.text(), 'tls upstream saw /secret');
    } finally {
      await dispatcher.close();
    }
  });

  test("a host backend takes the tunnel whatever port was asked for; bytes sent with the CONNECT's head go through", async () => {
    const got = await h1Connect(proxy.port(), 'fixed.test:443', /echo: ping\n/, '', 'ping\n');
    // a tunnel's 200 has no length, no chunks and no Connection header
    const head = got.slice(0, got.indexOf('\r\n\r\n'));
    assert.match(head, /^HTTP\/1\.1 200 OK/);
    assert.doesNotMatch(head, /content-length|transfer-encoding|connection/i);
    assert.match(got, /\r\n\r\necho: ping\n$/);
  });

  test("with the backend's backendTLS, gw opens the TLS and offers no ALPN (the bytes are the client's)", async () => {
    const got = await h1Connect(proxy.port(), 'originated.test:443', /alpn=\S+ plain\n/, '', 'plain\n');
    assert.match(got, /^HTTP\/1\.1 200 OK/);
    assert.match(got, /alpn=false plain\n$/);
  });

  test('over HTTP/2, the CONNECT stream is the tunnel', async () => {
    const [status, body] = await h2Connect(proxy.port(), 'fixed.test:443', 'over h2\n');
    assert.equal(status, 200);
    assert.equal(body, 'echo: over h2\n');
  });

  test("the route's policies decide: authorization refuses a CONNECT without what its rule wants", async () => {
    const denied = await h1Connect(proxy.port(), 'guarded.test:443');
    assert.match(denied, /^HTTP\/1\.1 403 /);
    const allowed = await h1Connect(
      proxy.port(),
      'guarded.test:443',
      /echo: hi\n/,
      'x-pass: yes\r\n',
      'hi\n',
    );
    assert.match(allowed, /^HTTP\/1\.1 200 /);
    // the port asked for is in the Host the rule reads
    const otherPort = await h1Connect(proxy.port(), 'guarded.test:22', ANSWERED, 'x-pass: yes\r\n');
    assert.match(otherPort, /^HTTP\/1\.1 403 /);
  });

  test("a policy's own 2xx answer to a CONNECT is a 502: no tunnel stands behind it", async () => {
    const got = await h1Connect(proxy.port(), 'answered.test:443');
    assert.match(got, /^HTTP\/1\.1 502 /);
    assert.match(got, /the CONNECT was answered 200 without a tunnel to a backend/);
    const [status, body] = await h2Connect(proxy.port(), 'answered.test:443');
    assert.equal(status, 502);
    assert.match(body, /without a tunnel/);
  });

  test('a backend that refuses the connection gets a 503 naming it', async () => {
    const closed = net.createServer();
    closed.listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const port = (closed.address() as AddressInfo).port;
    closed.close();
    const got = await h1Connect(proxy.port(), `127.0.0.1:${port}`);
    assert.match(got, /^HTTP\/1\.1 503 /);
    assert.match(got, new RegExp(`upstream connect error: connect ECONNREFUSED 127\\.0\\.0\\.1:${port}`));
  });

  test('a CONNECT whose target is not host:port is a 400', async () => {
    const got = await rawUntil(
      proxy.port(),
      'CONNECT /path HTTP/1.1\r\nHost: a.test:1\r\n\r\n',
      /\r\n\r\n[\s\S]*\n/,
    );
    assert.match(got, /^HTTP\/1\.1 400 /);
    assert.match(got, /a CONNECT target must be host:port/);
    const [status, body] = await h2Connect(proxy.port(), 'no-port.test');
    assert.equal(status, 400);
    assert.match(body, /a CONNECT target must be host:port/);
  });

  test('an ordinary request on the same listener is proxied as usual', async () => {
    const res = await get(proxy.port(), '/ordinary', `127.0.0.1:${web.port}`);
    assert.equal(res.statusCode, 200);
    res.resume();
    assert.equal(web.seen.at(-1)?.url, '/ordinary');
  });
});

test('a CONNECT to a route whose backend takes no tunnel is refused by name', async () => {
  const proxy = await startProxy(`frontendPolicies:
  connect: {mode: route}
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - backends:
      - mcp:
          targets:
          - name: tools
            mcp: {host: "http://127.0.0.1:${web.port}/mcp"}
`);
  try {
    const got = await h1Connect(proxy.port(), 'a.test:443');
    assert.match(got, /^HTTP\/1\.1 \d{3} /);
    assert.match(got, /takes no CONNECT tunnel \(host, unix, service and dynamic backends do\)/);
  } finally {
    await proxy.close();
  }
});

test('on an HTTPS listener, a CONNECT inside the TLS connection (HTTP/1.1 and HTTP/2) is routed the same way', async () => {
  const pki = await makeTestPki(['proxy.test']);
  const cert = pki.servers['proxy.test'] as { certFile: string; keyFile: string };
  const proxy = await startProxy(`frontendPolicies:
  connect: {mode: route}
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - protocol: HTTPS
    tls: {cert: ${JSON.stringify(cert.certFile)}, key: ${JSON.stringify(cert.keyFile)}}
    routes:
    - backends: [{host: "127.0.0.1:${echo.port}"}]
`);
  try {
    const s = tls.connect({ port: proxy.port(), host: '127.0.0.1', servername: 'proxy.test', ca: pki.ca });
    await once(s, 'secureConnect');
    s.write('CONNECT inner.test:443 HTTP/1.1\r\nHost: inner.test:443\r\n\r\nover tls\n');
    let got = '';
    s.setEncoding('utf8');
    for await (const chunk of s) {
      got += chunk;
      if (/echo: over tls\n/.test(got)) break;
    }
    s.destroy();
    assert.match(got, /^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\necho: over tls\n$/);

    const session = http2.connect(`https://127.0.0.1:${proxy.port()}`, {
      ca: pki.ca,
      servername: 'proxy.test',
    });
    try {
      const stream = session.request({ ':method': 'CONNECT', ':authority': 'inner.test:443' });
      const [headers] = (await once(stream, 'response')) as [http2.IncomingHttpHeaders];
      assert.equal(headers[':status'], 200);
      stream.end('over h2 and tls\n');
      let body = '';
      stream.setEncoding('utf8');
      for await (const chunk of stream) body += chunk;
      assert.equal(body, 'echo: over h2 and tls\n');
    } finally {
      session.destroy();
    }
  } finally {
    await proxy.close();
    await pki.cleanup();
  }
});

test('an open tunnel (HTTP/1.1 or HTTP/2 CONNECT) holds no place under maxConcurrentRequests', async () => {
  const proxy = await startProxy(`frontendPolicies:
  connect: {mode: route}
  http: {maxConcurrentRequests: 1}
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - name: tunnel
      hostnames: [tunnel.test]
      backends: [{host: "127.0.0.1:${echo.port}"}]
    - name: web
      backends: [{host: "127.0.0.1:${web.port}"}]
`);
  const session = http2.connect(`http://127.0.0.1:${proxy.port()}`);
  const h1 = net.connect(proxy.port(), '127.0.0.1');
  try {
    // an HTTP/1.1 tunnel, joined and left open
    await once(h1, 'connect');
    h1.write('CONNECT tunnel.test:443 HTTP/1.1\r\nHost: tunnel.test:443\r\n\r\nhello\n');
    let got = '';
    h1.setEncoding('utf8');
    for await (const chunk of h1) {
      got += chunk;
      if (/echo: hello\n/.test(got)) break;
    }
    const ok1 = await get(proxy.port(), '/one', 'web.test');
    ok1.resume();
    assert.equal(ok1.statusCode, 200, 'a request beside an open HTTP/1.1 tunnel');
    // an HTTP/2 tunnel, joined and left open
    const stream = session.request({ ':method': 'CONNECT', ':authority': 'tunnel.test:443' });
    const [headers] = (await once(stream, 'response')) as [http2.IncomingHttpHeaders];
    assert.equal(headers[':status'], 200);
    stream.write('again\n');
    stream.setEncoding('utf8');
    const [echoed] = (await once(stream, 'data')) as [string];
    assert.equal(echoed, 'echo: again\n');
    const ok2 = await get(proxy.port(), '/two', 'web.test');
    ok2.resume();
    assert.equal(ok2.statusCode, 200, 'a request beside an open HTTP/2 tunnel');
    stream.close();
  } finally {
    h1.destroy();
    session.destroy();
    await proxy.close();
  }
});
