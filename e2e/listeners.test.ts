// Listeners end to end: HTTP/1.1 keep-alive and h2c on one plain port, HTTPS with ALPN and SNI,
// route matching and precedence, weighted backends, and malformed requests.
import assert from 'node:assert/strict';
import http from 'node:http';
import http2 from 'node:http2';
import https from 'node:https';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import tls, { type TLSSocket } from 'node:tls';
import {
  type Echo,
  freePort,
  httpGet as get,
  makeTestPki,
  type Reply,
  startUpstream,
  type TestPki,
  type TestServer,
} from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';

/** Which upstream answered, from the echo body. */
const served = (r: Reply) => (JSON.parse(r.body) as Echo).server;

/**
 * Writes `payload` on a fresh connection and reads until the server closes it (at most 5 s). Returns
 * what came back and how long the connection stayed open after the last byte arrived.
 */
function exchange(
  open: (onReady: () => void) => net.Socket,
  payload: string,
): Promise<{ data: string; idleMs: number }> {
  return new Promise((resolve, reject) => {
    const sock = open(() => sock.write(payload));
    let data = '';
    let last = performance.now();
    sock.setEncoding('utf8');
    sock.on('data', (c: string) => {
      data += c;
      last = performance.now();
    });
    sock.on('close', () => resolve({ data, idleMs: performance.now() - last }));
    sock.on('error', () => {});
    sock.setTimeout(10_000, () => {
      sock.destroy();
      reject(new Error(`connection still open after 10 s; got ${JSON.stringify(data.slice(0, 200))}`));
    });
  });
}

const plain = (port: number) => (onReady: () => void) => net.connect(port, '127.0.0.1', onReady);

describe('plain HTTP listener', () => {
  let up: TestServer;
  let p: TestProxy;
  before(async () => {
    up = await startUpstream('echo');
    p = await startProxy(`
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - backends:
      - host: 127.0.0.1:${up.port}
`);
  });
  after(async () => {
    await p.close();
    await up.close();
  });

  test('HTTP/1.1 keep-alive reuses one client connection for many requests', async (t) => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    t.after(() => agent.destroy());
    const sockets = new Set<unknown>();
    for (let i = 0; i < 10; i++) {
      const r = await new Promise<Reply>((resolve, reject) => {
        const req = http.get({ host: '127.0.0.1', port: p.port(), path: `/ka/${i}`, agent }, (res) => {
          sockets.add(res.socket);
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              body: Buffer.concat(chunks).toString(),
              httpVersion: res.httpVersion,
              reusedSocket: req.reusedSocket,
            }),
          );
        });
        req.on('error', reject);
      });
      assert.equal(r.status, 200);
      assert.equal(r.httpVersion, '1.1');
      assert.equal((JSON.parse(r.body) as Echo).url, `/ka/${i}`);
      assert.equal(r.reusedSocket, i > 0, `request ${i} reusedSocket`);
      assert.notEqual(r.headers.connection, 'close');
    }
    assert.equal(sockets.size, 1);
  });

  test('h2c with prior knowledge is served on the same port', async (t) => {
    const session = http2.connect(`http://127.0.0.1:${p.port()}`);
    t.after(() => session.close());
    const one = (path: string, send?: string) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const s = session.request(
          send === undefined ? { ':path': path } : { ':path': path, ':method': 'POST' },
          { endStream: send === undefined },
        );
        if (send !== undefined) s.end(send);
        let status = 0;
        let body = '';
        s.on('response', (h) => {
          status = Number(h[':status']);
        });
        s.setEncoding('utf8');
        s.on('data', (c: string) => {
          body += c;
        });
        s.on('end', () => resolve({ status, body }));
        s.on('error', reject);
      });
    // Several concurrent streams on one session.
    const replies = await Promise.all([one('/h2c/a'), one('/h2c/b'), one('/h2c/c')]);
    assert.deepEqual(
      replies.map((r) => [r.status, (JSON.parse(r.body) as Echo).url]),
      [
        [200, '/h2c/a'],
        [200, '/h2c/b'],
        [200, '/h2c/c'],
      ],
    );
    const post = await one('/h2c/post', 'hello over h2c');
    assert.equal(post.status, 200);
    assert.deepEqual(
      [(JSON.parse(post.body) as Echo).method, (JSON.parse(post.body) as Echo).body],
      ['POST', 'hello over h2c'],
    );
    // The upstream got an HTTP/1 request with a Host taken from :authority.
    const seen = up.seen.find((e) => e.url === '/h2c/a');
    assert.equal(seen?.headers.host, `127.0.0.1:${p.port()}`);
    // And HTTP/1.1 still works on the same port.
    const h1 = await get(p.port(), '/after-h2c');
    assert.equal(h1.status, 200);
  });

  test('a malformed request line gets 400 with a reason, and the server keeps serving', async () => {
    const { data } = await exchange(plain(p.port()), 'THIS IS NOT HTTP\r\n\r\n');
    assert.match(data, /^HTTP\/1\.1 400 /);
    assert.match(data, /\r\nconnection: close\r\n/i);
    assert.match(data.slice(data.indexOf('\r\n\r\n') + 4), /^bad request: HPE_\w+\n$/);
    const next = await get(p.port(), '/still-alive');
    assert.equal(next.status, 200);
    assert.equal((JSON.parse(next.body) as Echo).url, '/still-alive');
  });

  test('oversized request headers (over 64 KiB) get 431, not 400', async () => {
    const { data } = await exchange(
      plain(p.port()),
      `GET / HTTP/1.1\r\nhost: a\r\nx-big: ${'a'.repeat(70_000)}\r\n\r\n`,
    );
    assert.match(data, /^HTTP\/1\.1 431 /);
    assert.match(data, /bad request: HPE_HEADER_OVERFLOW/);
    assert.equal((await get(p.port(), '/after-431')).status, 200);
  });
});

describe('HTTPS listeners', () => {
  let pki: TestPki;
  let upA: TestServer;
  let upB: TestServer;
  let p: TestProxy;
  let port: number;
  before(async () => {
    pki = await makeTestPki(['a.test', 'b.test']);
    upA = await startUpstream('upstream-a');
    upB = await startUpstream('upstream-b');
    // Two listeners share one port only when the port is fixed (port 0 gives each its own).
    port = await freePort();
    const a = pki.servers['a.test']!;
    const b = pki.servers['b.test']!;
    p = await startProxy(`
binds:
- port: ${port}
  address: 127.0.0.1
  listeners:
  - name: a
    hostname: a.test
    protocol: HTTPS
    tls: { cert: ${JSON.stringify(a.certFile)}, key: ${JSON.stringify(a.keyFile)} }
    routes:
    - backends: [{ host: 127.0.0.1:${upA.port} }]
  - name: b
    hostname: b.test
    protocol: HTTPS
    tls: { cert: ${JSON.stringify(b.certFile)}, key: ${JSON.stringify(b.keyFile)} }
    routes:
    - backends: [{ host: 127.0.0.1:${upB.port} }]
`);
  });
  after(async () => {
    await p.close();
    await upA.close();
    await upB.close();
    await pki.cleanup();
  });

  const httpsGet = (servername: string, alpn: string[], host = servername) =>
    new Promise<Reply & { cn: unknown; alpn: string | false | null }>((resolve, reject) => {
      // A fresh agent per request: one TLS handshake each, with the ALPN list asked for.
      const agent = new https.Agent({ ALPNProtocols: alpn, maxCachedSessions: 0 });
      const req = https.request(
        {
          host: '127.0.0.1',
          port,
          path: '/tls',
          servername,
          headers: { host },
          ca: pki.ca,
          agent,
        },
        (res) => {
          const sock = res.socket as TLSSocket;
          const cn = sock.getPeerCertificate().subject?.CN;
          const alpnProtocol = sock.alpnProtocol;
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            agent.destroy();
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              body: Buffer.concat(chunks).toString(),
              httpVersion: res.httpVersion,
              reusedSocket: req.reusedSocket,
              cn,
              alpn: alpnProtocol,
            });
          });
        },
      );
      req.on('error', (err) => {
        agent.destroy();
        reject(err);
      });
      req.end();
    });

  test('HTTP/1.1 over TLS (ALPN http/1.1), verified against the test CA', async () => {
    const r = await httpsGet('a.test', ['http/1.1']);
    assert.equal(r.status, 200);
    assert.equal(r.httpVersion, '1.1');
    assert.equal(r.alpn, 'http/1.1');
    assert.equal(served(r), 'upstream-a');
    assert.equal((JSON.parse(r.body) as Echo).headers['x-forwarded-proto'], 'https');
  });

  test('HTTP/2 over TLS is negotiated by ALPN', async (t) => {
    const session = http2.connect(`https://127.0.0.1:${port}`, { ca: pki.ca, servername: 'a.test' });
    t.after(() => session.close());
    const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const s = session.request({ ':path': '/h2', ':authority': 'a.test' });
      let st = 0;
      let b = '';
      s.on('response', (h) => {
        st = Number(h[':status']);
      });
      s.setEncoding('utf8');
      s.on('data', (c: string) => {
        b += c;
      });
      s.on('end', () => resolve({ status: st, body: b }));
      s.on('error', reject);
    });
    assert.equal(session.alpnProtocol, 'h2');
    assert.equal(status, 200);
    const echo = JSON.parse(body) as Echo;
    assert.equal(echo.server, 'upstream-a');
    assert.equal(echo.url, '/h2');
  });

  test('SNI picks the certificate and the listener by hostname', async () => {
    const a = await httpsGet('a.test', ['http/1.1']);
    const b = await httpsGet('b.test', ['http/1.1']);
    assert.equal(a.cn, 'a.test');
    assert.equal(b.cn, 'b.test');
    assert.equal(served(a), 'upstream-a');
    assert.equal(served(b), 'upstream-b');
  });

  test("a Host of another listener than the TLS server name chose is a 421, not served by that listener's routes", async () => {
    const before = upB.seen.length;
    const r = await httpsGet('a.test', ['http/1.1'], 'b.test');
    assert.equal(r.status, 421);
    assert.match(r.body, /another host/);
    assert.equal(upB.seen.length, before, "b's backend is not called on a's connection");
  });

  test('a malformed HTTP/1 request over TLS gets 400 with a reason, like on a plain port', async () => {
    const { data } = await exchange(
      (onReady) => tls.connect({ port, host: '127.0.0.1', servername: 'a.test', ca: pki.ca }, onReady),
      'THIS IS NOT HTTP\r\n\r\n',
    );
    assert.match(data, /^HTTP\/1\.1 400 /);
    assert.match(data.slice(data.indexOf('\r\n\r\n') + 4), /^bad request: HPE_\w+\n$/);
  });
});

describe('HTTP/1.1 idle timeout', () => {
  let pki: TestPki;
  let up: TestServer;
  let p: TestProxy;
  before(async () => {
    pki = await makeTestPki(['idle.test']);
    up = await startUpstream('echo');
    const c = pki.servers['idle.test']!;
    p = await startProxy(`
frontendPolicies: { http: { http1IdleTimeout: 1s } }
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - name: plain
    routes:
    - backends: [{ host: 127.0.0.1:${up.port} }]
- port: 0
  address: 127.0.0.1
  listeners:
  - name: secure
    protocol: HTTPS
    tls: { cert: ${JSON.stringify(c.certFile)}, key: ${JSON.stringify(c.keyFile)} }
    routes:
    - backends: [{ host: 127.0.0.1:${up.port} }]
`);
  });
  after(async () => {
    await p.close();
    await up.close();
    await pki.cleanup();
  });

  test('http1IdleTimeout closes idle keep-alive connections on HTTP and HTTPS listeners alike', async () => {
    const request = 'GET /idle HTTP/1.1\r\nhost: idle.test\r\n\r\n';
    const [h, s] = await Promise.all([
      exchange(plain(p.port(0)), request),
      exchange(
        (onReady) =>
          tls.connect(
            {
              port: p.port(1),
              host: '127.0.0.1',
              servername: 'idle.test',
              ca: pki.ca,
              ALPNProtocols: ['http/1.1'],
            },
            onReady,
          ),
        request,
      ),
    ]);
    for (const [name, r] of [
      ['HTTP', h],
      ['HTTPS', s],
    ] as const) {
      assert.match(r.data, /^HTTP\/1\.1 200 /, name);
      assert.match(r.data, /\r\nkeep-alive: timeout=1\r\n/i, `${name} advertises the configured timeout`);
      // Node closes the socket up to a second after the advertised timeout, never before it (the upper
      // bound leaves room for a busy machine: the proxy runs in this process)
      assert.ok(
        r.idleMs >= 900 && r.idleMs < 5000,
        `${name} closed an idle connection after ${Math.round(r.idleMs)} ms`,
      );
    }
  });
});

describe('binds on port 0', () => {
  test('two binds on port 0 with unnamed listeners each get their own port', async (t) => {
    const a = await startUpstream('bind-a');
    const b = await startUpstream('bind-b');
    t.after(() => Promise.all([a.close(), b.close()]));
    const p = await startProxy(`
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes: [{ backends: [{ host: 127.0.0.1:${a.port} }] }]
- port: 0
  address: 127.0.0.1
  listeners:
  - routes: [{ backends: [{ host: 127.0.0.1:${b.port} }] }]
`);
    t.after(() => p.close());
    assert.equal(typeof p.port(1), 'number', 'the second bind has a port');
    assert.notEqual(p.port(0), p.port(1));
    assert.equal(served(await get(p.port(0), '/')), 'bind-a');
    assert.equal(served(await get(p.port(1), '/')), 'bind-b');
  });
});

describe('route matching', () => {
  const names = [
    'fallback',
    'host-exact',
    'host-wild',
    'p-short',
    'p-long',
    'p-exact',
    'regex',
    'm-any',
    'm-post',
    'h-none',
    'h-one',
    'h-two',
    'q-any',
    'q-v2',
  ];
  const ups = new Map<string, TestServer>();
  let p: TestProxy;
  before(async () => {
    for (const n of names) ups.set(n, await startUpstream(n));
    const to = (n: string) => `[{ host: 127.0.0.1:${ups.get(n)!.port} }]`;
    // Routes are listed in the opposite order of their precedence, so definition order cannot be
    // what makes the right one win.
    p = await startProxy(`
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - name: fallback
      backends: ${to('fallback')}
    - name: host-wild
      hostnames: ['*.example.com']
      backends: ${to('host-wild')}
    - name: host-exact
      hostnames: [api.example.com]
      backends: ${to('host-exact')}
    - name: regex
      hostnames: [regex.test]
      matches: [{ path: { regex: '/items/[0-9]+' } }]
      backends: ${to('regex')}
    - name: p-short
      matches: [{ path: { pathPrefix: /p } }]
      backends: ${to('p-short')}
    - name: p-long
      matches: [{ path: { pathPrefix: /p/long/ } }]
      backends: ${to('p-long')}
    - name: p-exact
      matches: [{ path: { exact: /p/long/exact } }]
      backends: ${to('p-exact')}
    - name: m-any
      matches: [{ path: { pathPrefix: /m } }]
      backends: ${to('m-any')}
    - name: m-post
      matches: [{ path: { pathPrefix: /m }, method: POST }]
      backends: ${to('m-post')}
    - name: h-none
      matches: [{ path: { pathPrefix: /h } }]
      backends: ${to('h-none')}
    - name: h-one
      matches: [{ path: { pathPrefix: /h }, headers: [{ name: X-A, value: { exact: '1' } }] }]
      backends: ${to('h-one')}
    - name: h-two
      matches:
      - path: { pathPrefix: /h }
        headers:
        - { name: x-a, value: { exact: '1' } }
        - { name: x-b, value: { regex: 'b.*' } }
      backends: ${to('h-two')}
    - name: q-any
      matches: [{ path: { pathPrefix: /q } }]
      backends: ${to('q-any')}
    - name: q-v2
      matches: [{ path: { pathPrefix: /q }, query: [{ name: v, value: { exact: '2' } }] }]
      backends: ${to('q-v2')}
`);
  });
  after(async () => {
    await p.close();
    for (const u of ups.values()) await u.close();
  });

  const cases: [
    string,
    { path: string; host?: string; method?: string; headers?: Record<string, string> },
    string,
  ][] = [
    ['exact host', { path: '/x', host: 'api.example.com' }, 'host-exact'],
    ['exact host with port', { path: '/x', host: 'API.example.com:8080' }, 'host-exact'],
    ['wildcard host', { path: '/x', host: 'foo.example.com' }, 'host-wild'],
    ['wildcard host, deeper', { path: '/x', host: 'a.b.example.com' }, 'host-wild'],
    ['wildcard does not match the bare domain', { path: '/x', host: 'example.com' }, 'fallback'],
    ['unknown host', { path: '/x', host: 'other.test' }, 'fallback'],
    ['path exact beats prefixes', { path: '/p/long/exact' }, 'p-exact'],
    ['longer prefix wins', { path: '/p/long/exact/more' }, 'p-long'],
    ['prefix matches the bare segment', { path: '/p/long' }, 'p-long'],
    ['short prefix', { path: '/p/other' }, 'p-short'],
    ['prefix matches whole segments only', { path: '/plong' }, 'fallback'],
    ['regex matches', { path: '/items/42', host: 'regex.test' }, 'regex'],
    ['regex is anchored', { path: '/items/42x', host: 'regex.test' }, 'fallback'],
    ['method match', { path: '/m', method: 'POST' }, 'm-post'],
    ['other method', { path: '/m', method: 'GET' }, 'm-any'],
    ['two header matches beat one', { path: '/h', headers: { 'x-a': '1', 'x-b': 'bee' } }, 'h-two'],
    ['one header match', { path: '/h', headers: { 'x-a': '1', 'x-b': 'nope' } }, 'h-one'],
    ['header value mismatch', { path: '/h', headers: { 'x-a': '2' } }, 'h-none'],
    ['query match', { path: '/q?v=2&w=1' }, 'q-v2'],
    ['query value mismatch', { path: '/q?v=3' }, 'q-any'],
    ['no query', { path: '/q' }, 'q-any'],
  ];
  for (const [name, req, want] of cases) {
    test(`${name}: ${req.method ?? 'GET'} ${req.host ?? ''}${req.path} → ${want}`, async () => {
      const r = await get(p.port(), req.path, req);
      assert.equal(r.status, 200, r.body);
      assert.equal(served(r), want);
    });
  }

  test('no matching route gives 404', async (t) => {
    // A separate listener without a catch-all route.
    const up = ups.get('fallback')!;
    const q = await startProxy(`
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - matches: [{ path: { exact: /only } }]
      backends: [{ host: 127.0.0.1:${up.port} }]
`);
    t.after(() => q.close());
    const r = await get(q.port(), '/other');
    assert.equal(r.status, 404);
    assert.match(r.body, /route not found/);
    assert.equal((await get(q.port(), '/only')).status, 200);
  });
});

describe('weighted backends', () => {
  let one: TestServer;
  let three: TestServer;
  let zero: TestServer;
  let p: TestProxy;
  before(async () => {
    one = await startUpstream('w1');
    three = await startUpstream('w3');
    zero = await startUpstream('w0');
    p = await startProxy(`
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - backends:
      - { host: 127.0.0.1:${one.port}, weight: 1 }
      - { host: 127.0.0.1:${three.port}, weight: 3 }
      - { host: 127.0.0.1:${zero.port}, weight: 0 }
`);
  });
  after(async () => {
    await p.close();
    await one.close();
    await three.close();
    await zero.close();
  });

  test('weights 1:3 split traffic about 1:3, and weight 0 gets nothing', async (t) => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
    t.after(() => agent.destroy());
    const total = 400;
    const counts = new Map<string, number>();
    for (let i = 0; i < total; i += 8) {
      const batch = await Promise.all(Array.from({ length: 8 }, () => get(p.port(), '/w', { agent })));
      for (const r of batch) {
        assert.equal(r.status, 200);
        counts.set(served(r), (counts.get(served(r)) ?? 0) + 1);
      }
    }
    const w1 = counts.get('w1') ?? 0;
    const w3 = counts.get('w3') ?? 0;
    assert.equal(w1 + w3, total, JSON.stringify([...counts]));
    // Expected 100 vs 300; the band is about six standard deviations wide on each side.
    assert.ok(w1 >= 50 && w1 <= 150, `weight 1 got ${w1} of ${total}`);
    assert.equal(zero.seen.length, 0);
  });
});
