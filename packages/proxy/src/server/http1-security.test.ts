// The HTTP/1.1 front door against malformed and ambiguous requests, on both of gw's HTTP/1 servers
// (node:http, the default, and its own on node:net behind GW_HTTP1_SERVER=net): request smuggling
// (conflicting or obfuscated framing), header and chunk syntax that parsers disagree on, missing Host,
// oversized heads, slow heads, pipelining. Each bad request is refused with a 4xx before anything
// reaches the backend, and nothing sent after it on the same connection is read as a request.
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { http1ServerKind } from './http1-kind.ts';

interface Seen {
  method: string;
  url: string;
  body: string;
  /** The x-t header, when the request had one. */
  xt?: string;
}

let upstream: http.Server;
let upstreamPort = 0;
const seen: Seen[] = [];

before(async () => {
  // the backend takes longer heads than gw does, so that the limit tested is gw's
  upstream = http.createServer({ maxHeaderSize: 256 * 1024 }, (req, res) => {
    let body = '';
    req.setEncoding('latin1');
    req.on('data', (c: string) => {
      body += c;
    });
    req.on('end', () => {
      const xt = req.headers['x-t'];
      seen.push({
        method: req.method ?? '',
        url: req.url ?? '',
        body,
        ...(xt === undefined ? {} : { xt: String(xt) }),
      });
      res.end(`seen ${req.method} ${req.url} ${body.length}\n`);
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  upstreamPort = (upstream.address() as net.AddressInfo).port;
});
after(() => {
  upstream.closeAllConnections();
  upstream.close();
});

/** Writes `bytes` on a new connection; resolves with all that came back by the close (or `idleMs` of quiet). */
function exchange(
  port: number,
  bytes: string | Buffer,
  idleMs = 400,
): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    let text = '';
    let timer: NodeJS.Timeout | undefined;
    const done = (closed: boolean) => {
      clearTimeout(timer);
      s.destroy();
      resolve({ text, closed });
    };
    const quiet = () => {
      clearTimeout(timer);
      timer = setTimeout(() => done(false), idleMs);
    };
    s.setEncoding('latin1');
    s.on('data', (c: string) => {
      text += c;
      quiet();
    });
    s.on('close', () => done(true));
    s.on('error', (e: NodeJS.ErrnoException) => (e.code === 'ECONNRESET' ? done(true) : reject(e)));
    s.write(bytes);
    quiet();
  });
}

const statuses = (text: string): number[] =>
  [...text.matchAll(/^HTTP\/1\.[01] (\d{3})/gm)].map((m) => Number(m[1]));

/** A request gw must read as exactly one request with this method, path and body. */
const FOLLOW = 'GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n';

/** Malformed or ambiguous requests, each followed on its connection by FOLLOW. */
const REFUSED: [string, string][] = [
  [
    'Content-Length and Transfer-Encoding together',
    'POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
  ],
  [
    'two different Content-Length headers',
    'POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 5\r\n\r\nabcde',
  ],
  ['a Content-Length list', 'POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 3, 5\r\n\r\nabcde'],
  ['a signed Content-Length', 'POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: +3\r\n\r\nabc'],
  [
    'a Transfer-Encoding other than chunked last',
    'POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n',
  ],
  [
    'an obfuscated Transfer-Encoding (xchunked)',
    'POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n',
  ],
  [
    'whitespace before the colon',
    'POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n',
  ],
  ['a folded header line (obs-fold)', 'GET /a HTTP/1.1\r\nHost: x\r\nX-A: one\r\n two\r\n\r\n'],
  ['bare LF line ends', 'GET /a HTTP/1.1\nHost: x\n\n'],
  [
    'a negative chunk size',
    'POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\nabc\r\n0\r\n\r\n',
  ],
  [
    'a chunk size that overflows',
    'POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff1\r\nabc\r\n0\r\n\r\n',
  ],
  [
    'a chunk not followed by CRLF',
    'POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n0\r\n\r\n',
  ],
  ['a NUL in a header value', 'GET /a HTTP/1.1\r\nHost: x\r\nX-A: a\0b\r\n\r\n'],
  ['a space in a header name', 'GET /a HTTP/1.1\r\nHost: x\r\nX A: b\r\n\r\n'],
  ['a space in the request target', 'GET /a b HTTP/1.1\r\nHost: x\r\n\r\n'],
  ['an unknown HTTP version', 'GET /a HTTP/1.7\r\nHost: x\r\n\r\n'],
];

for (const kind of ['node', 'net'] as const) {
  describe(`HTTP/1.1 on the ${kind === 'node' ? 'node:http server' : 'node:net server (GW_HTTP1_SERVER=net)'}`, () => {
    let proxy: TestProxy;
    before(async () => {
      const saved = process.env['GW_HTTP1_SERVER'];
      process.env['GW_HTTP1_SERVER'] = kind;
      try {
        proxy = await startProxy(`frontendPolicies:
  http:
    requestHeadersTimeout: 300ms
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes: [{backends: [{host: "127.0.0.1:${upstreamPort}"}]}]
`);
      } finally {
        if (saved === undefined) delete process.env['GW_HTTP1_SERVER'];
        else process.env['GW_HTTP1_SERVER'] = saved;
      }
    });
    after(async () => {
      await proxy?.close();
    });

    for (const [name, bytes] of REFUSED) {
      test(`refused: ${name}`, async () => {
        seen.length = 0;
        const { text, closed } = await exchange(proxy.port(), bytes + FOLLOW);
        const got = statuses(text);
        assert.equal(got.length, 1, `one answer, got ${JSON.stringify(text)}`);
        assert.ok((got[0] ?? 0) >= 400 && (got[0] ?? 0) < 500, `a 4xx, got ${JSON.stringify(text)}`);
        assert.ok(closed, 'the connection is closed after a refused request');
        assert.deepEqual(seen, [], 'nothing reached the backend');
      });
    }

    test('a body that holds a request is a body: one request upstream', async () => {
      seen.length = 0;
      const body = FOLLOW;
      const { text } = await exchange(
        proxy.port(),
        `POST /outer HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
      );
      assert.deepEqual(statuses(text), [200]);
      assert.deepEqual(seen, [{ method: 'POST', url: '/outer', body }]);
    });

    test('a chunked body with an extension and a trailer is read whole; the trailer stays with it', async () => {
      seen.length = 0;
      const { text } = await exchange(
        proxy.port(),
        'POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nX-T: 1\r\n\r\n' +
          FOLLOW,
      );
      assert.deepEqual(statuses(text), [200, 200]);
      // trailers are not forwarded; above all, they are not read as the next request's headers (the two
      // go upstream on two connections: their order there is not the client's)
      assert.deepEqual(
        seen.sort((a, b) => a.url.localeCompare(b.url)),
        [
          { method: 'POST', url: '/c', body: 'abcde' },
          { method: 'GET', url: '/smuggled', body: '' },
        ],
      );
    });

    test('pipelined requests are answered in order on one connection', async () => {
      seen.length = 0;
      const reqs = ['/p1', '/p2', '/p3'].map((p) => `GET ${p} HTTP/1.1\r\nHost: x\r\n\r\n`).join('');
      const { text, closed } = await exchange(proxy.port(), reqs);
      assert.deepEqual(statuses(text), [200, 200, 200]);
      const order = [...text.matchAll(/seen GET (\/p\d)/g)].map((m) => m[1]);
      assert.deepEqual(order, ['/p1', '/p2', '/p3']);
      assert.equal(closed, false, 'keep-alive: the connection stays open');
    });

    test('HTTP/1.1 without Host is answered 400 and the connection ends', async () => {
      seen.length = 0;
      // node:http goes on with what is pipelined behind such a request before it closes; gw's own
      // server reads nothing more
      const follow = kind === 'net' ? FOLLOW : '';
      const { text, closed } = await exchange(proxy.port(), `GET /a HTTP/1.1\r\nX-A: b\r\n\r\n${follow}`);
      assert.deepEqual(statuses(text), [400]);
      assert.ok(closed);
      assert.deepEqual(seen, []);
    });

    test('an Upgrade to h2c is declined: the request is served as HTTP/1.1', async () => {
      seen.length = 0;
      const { text } = await exchange(
        proxy.port(),
        `GET /u HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n${FOLLOW}`,
      );
      // Seen on node 24.21: node:http answers this request and nothing pipelined behind it (llhttp
      // stops at a request that asks to upgrade). gw's own server goes on with the rest.
      const expected = kind === 'net' ? ['/smuggled', '/u'] : ['/u'];
      assert.deepEqual(
        statuses(text),
        expected.map(() => 200),
      );
      assert.deepEqual(seen.map((r) => r.url).sort(), expected);
    });

    test('Connection: close is honoured: the answer says so and the connection ends', async () => {
      const { text, closed } = await exchange(
        proxy.port(),
        'GET /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
      );
      assert.deepEqual(statuses(text), [200]);
      assert.match(text, /^connection: close\r$/im);
      assert.ok(closed);
    });

    test('bytes after a Connection: close request are no request: its answer, no 400, then the end', async () => {
      seen.length = 0;
      const { text, closed } = await exchange(
        proxy.port(),
        'GET /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\nGET /d HTTP/1.1\r\nHost: x\r\n\r\n',
      );
      assert.deepEqual(statuses(text), [200], text);
      assert.ok(closed);
      assert.deepEqual(
        seen.map((r) => r.url),
        ['/a'],
      );
    });

    test('a bad request pipelined behind good ones: their answers first, in order, then the 400', async () => {
      seen.length = 0;
      const good = ['/p1', '/p2'].map((p) => `GET ${p} HTTP/1.1\r\nHost: x\r\n\r\n`).join('');
      const { text, closed } = await exchange(proxy.port(), `${good}GARBAGE\r\n\r\n`);
      assert.deepEqual(statuses(text), [200, 200, 400], text);
      assert.deepEqual(
        [...text.matchAll(/seen GET (\/p\d)/g)].map((m) => m[1]),
        ['/p1', '/p2'],
      );
      assert.ok(closed);
    });

    test('HTTP/1.0: the answer is framed without chunks and the connection ends', async () => {
      const { text, closed } = await exchange(proxy.port(), 'GET /a HTTP/1.0\r\n\r\n');
      assert.deepEqual(statuses(text), [200]);
      assert.doesNotMatch(text, /transfer-encoding/i);
      assert.ok(closed);
    });

    test('HEAD: the head only, no body bytes follow', async () => {
      const { text } = await exchange(
        proxy.port(),
        `HEAD /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n`,
      );
      assert.deepEqual(statuses(text), [200, 200]);
      // the second answer starts right after the first head
      assert.match(text, /\r\n\r\nHTTP\/1\.1 200/);
    });

    test('an expectation other than 100-continue is answered 417', async () => {
      seen.length = 0;
      const { text } = await exchange(
        proxy.port(),
        'GET /a HTTP/1.1\r\nHost: x\r\nExpect: something\r\n\r\n',
      );
      assert.deepEqual(statuses(text), [417]);
      assert.deepEqual(seen, []);
    });

    test("a head over the size limit (64 KiB) is answered 431; one of 60 KB, over node's 16 KiB, passes", async () => {
      seen.length = 0;
      const big = await exchange(
        proxy.port(),
        `GET /a HTTP/1.1\r\nHost: x\r\nX-T: big\r\nCookie: ${'a'.repeat(60_000)}\r\nConnection: close\r\n\r\n`,
      );
      assert.deepEqual(statuses(big.text), [200]);
      assert.deepEqual(
        seen.map((s) => s.xt),
        ['big'],
      );
      seen.length = 0;
      const { text, closed } = await exchange(
        proxy.port(),
        `GET /a HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(70_000)}\r\n\r\n`,
      );
      assert.deepEqual(statuses(text), [431]);
      assert.ok(closed);
      assert.deepEqual(seen, []);
    });

    test('a head that never ends is cut at requestHeadersTimeout with 408', async () => {
      const t0 = performance.now();
      const { text, closed } = await exchange(proxy.port(), 'GET /a HTTP/1.1\r\nHost: x\r\n', 3000);
      assert.deepEqual(statuses(text), [408]);
      assert.ok(closed);
      assert.ok(performance.now() - t0 < 2500, 'cut near the timeout');
    });
  });
}

test('GW_HTTP1_SERVER: node by default, net on request, anything else refused by name', () => {
  assert.equal(http1ServerKind({}), 'node');
  assert.equal(http1ServerKind({ GW_HTTP1_SERVER: 'node' }), 'node');
  assert.equal(http1ServerKind({ GW_HTTP1_SERVER: 'net' }), 'net');
  assert.throws(
    () => http1ServerKind({ GW_HTTP1_SERVER: 'fast' }),
    /GW_HTTP1_SERVER must be "node" or "net" \(got "fast"\)/,
  );
});
