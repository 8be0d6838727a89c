// Backends end to end: keep-alive pools, unix sockets, the dynamic forward proxy, backend TLS (CA,
// insecure, mTLS, h2 by ALPN), and what a client sees when an upstream fails, stalls or streams.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import http2 from 'node:http2';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { TLSSocket } from 'node:tls';
import {
  CLOSED_PORT,
  type Echo,
  httpGet as get,
  makeTestPki,
  startUpstream,
  type TestPki,
  type TestServer,
} from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';

type Listening = http.Server | https.Server | http2.Http2SecureServer | net.Server;

async function listen<S extends Listening>(server: S, where: number | string = 0): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    if (typeof where === 'string') server.listen(where, resolve);
    else server.listen(where, '127.0.0.1', resolve);
  });
  const a = server.address();
  return typeof a === 'object' && a ? (a as AddressInfo).port : 0;
}

async function close(server: Listening): Promise<void> {
  if ('closeAllConnections' in server) server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('plain backends', () => {
  let counted: http.Server;
  let countedPort: number;
  let connections = 0;
  let sockDir: string;
  let unixServer: http.Server;
  let sockPath: string;
  let dynA: TestServer;
  let dynB: TestServer;
  let p: TestProxy;

  before(async () => {
    counted = http.createServer((req, res) => {
      res.setHeader('content-type', 'text/plain');
      res.end(`counted ${req.url}`);
    });
    counted.keepAliveTimeout = 30_000;
    counted.on('connection', () => {
      connections++;
    });
    countedPort = await listen(counted);

    sockDir = await mkdtemp(join(tmpdir(), 'gw-e2e-'));
    sockPath = join(sockDir, 'up.sock');
    unixServer = http.createServer((req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ via: 'unix', url: req.url, host: req.headers.host }));
    });
    await listen(unixServer, sockPath);

    dynA = await startUpstream('dyn-a');
    dynB = await startUpstream('dyn-b');

    p = await startProxy(`
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - name: static
      matches: [{ path: { pathPrefix: /static } }]
      backends: [{ host: 127.0.0.1:${countedPort} }]
    - name: unix
      matches: [{ path: { pathPrefix: /unix } }]
      backends: [{ host: ${JSON.stringify(`unix:${sockPath}`)} }]
    - name: dynamic
      matches: [{ path: { pathPrefix: /dyn } }]
      backends: [{ dynamic: {} }]
`);
  });
  after(async () => {
    await p.close();
    await close(counted);
    await close(unixServer);
    await dynA.close();
    await dynB.close();
    await rm(sockDir, { recursive: true, force: true });
  });

  test('static host:port keeps upstream connections alive across requests', async (t) => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
    t.after(() => agent.destroy());
    const before = connections;
    for (let i = 0; i < 40; i += 4) {
      const batch = await Promise.all(
        Array.from({ length: 4 }, (_, j) => get(p.port(), `/static/${i + j}`, { agent })),
      );
      for (const [j, r] of batch.entries()) {
        assert.equal(r.status, 200);
        assert.equal(r.body, `counted /static/${i + j}`);
      }
    }
    const used = connections - before;
    // 40 requests, at most 4 in flight: without pooling the upstream would see 40 connections.
    assert.ok(used >= 1 && used <= 4, `upstream saw ${used} connections for 40 requests`);
  });

  test('unix socket backend', async () => {
    const r = await get(p.port(), '/unix/path?x=1', { host: 'svc.test' });
    assert.equal(r.status, 200, r.body);
    assert.deepEqual(JSON.parse(r.body), { via: 'unix', url: '/unix/path?x=1', host: 'svc.test' });
  });

  test('dynamic forward proxy sends the request to the Host it names', async () => {
    const a = await get(p.port(), '/dyn/one', { host: `127.0.0.1:${dynA.port}` });
    const b = await get(p.port(), '/dyn/two', { host: `127.0.0.1:${dynB.port}` });
    assert.equal(a.status, 200, a.body);
    assert.equal(b.status, 200, b.body);
    assert.deepEqual(
      [(JSON.parse(a.body) as Echo).server, (JSON.parse(a.body) as Echo).url],
      ['dyn-a', '/dyn/one'],
    );
    assert.deepEqual(
      [(JSON.parse(b.body) as Echo).server, (JSON.parse(b.body) as Echo).url],
      ['dyn-b', '/dyn/two'],
    );
    assert.equal((JSON.parse(a.body) as Echo).headers.host, `127.0.0.1:${dynA.port}`);
  });
});

describe('backend TLS', () => {
  let pki: TestPki;
  let tlsUp: https.Server;
  let mtlsUp: https.Server;
  let h2Up: http2.Http2SecureServer;
  let mtlsRequests = 0;
  let p: TestProxy;

  const answer = (
    req: IncomingMessage | http2.Http2ServerRequest,
    res: ServerResponse | http2.Http2ServerResponse,
  ) => {
    const sock = req.socket as TLSSocket;
    const peer = sock.getPeerCertificate?.();
    const body = JSON.stringify({
      url: req.url,
      httpVersion: req.httpVersion,
      servername: (sock as TLSSocket & { servername?: string }).servername,
      clientCN: peer && 'subject' in peer ? (peer.subject?.CN ?? null) : null,
    });
    (res as ServerResponse).writeHead(200, { 'content-type': 'application/json' });
    res.end(body);
  };

  before(async () => {
    pki = await makeTestPki(['backend.test']);
    const server = pki.servers['backend.test']!;
    tlsUp = https.createServer({ cert: server.cert, key: server.key }, answer);
    mtlsUp = https.createServer(
      { cert: server.cert, key: server.key, ca: pki.ca, requestCert: true, rejectUnauthorized: true },
      (req, res) => {
        mtlsRequests++;
        answer(req, res);
      },
    );
    h2Up = http2.createSecureServer({ cert: server.cert, key: server.key }, answer);
    const tlsPort = await listen(tlsUp);
    const mtlsPort = await listen(mtlsUp);
    const h2Port = await listen(h2Up);
    const root = JSON.stringify(pki.caFile);
    const cert = JSON.stringify(pki.client.certFile);
    const key = JSON.stringify(pki.client.keyFile);
    const route = (name: string, port: number, tls: string) => `
    - name: ${name}
      matches: [{ path: { pathPrefix: /${name} } }]
      backends:
      - host: 127.0.0.1:${port}
        policies: { backendTLS: ${tls} }`;
    p = await startProxy(`
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:${[
    route('verified', tlsPort, `{ root: ${root}, hostname: backend.test }`),
    route('no-root', tlsPort, `{ hostname: backend.test }`),
    route('wrong-name', tlsPort, `{ root: ${root}, hostname: other.test }`),
    route('insecure', tlsPort, `{ insecure: true }`),
    route('mtls', mtlsPort, `{ root: ${root}, hostname: backend.test, cert: ${cert}, key: ${key} }`),
    route('mtls-no-cert', mtlsPort, `{ root: ${root}, hostname: backend.test }`),
    route('h2', h2Port, `{ root: ${root}, hostname: backend.test, alpn: [h2] }`),
  ].join('')}
`);
  });
  after(async () => {
    await p.close();
    await close(tlsUp);
    await close(mtlsUp);
    await close(h2Up);
    await pki.cleanup();
  });

  test('verifies the upstream against root and sends hostname as SNI', async () => {
    const r = await get(p.port(), '/verified/x');
    assert.equal(r.status, 200, r.body);
    const body = JSON.parse(r.body);
    assert.equal(body.url, '/verified/x');
    assert.equal(body.servername, 'backend.test');
    assert.equal(body.clientCN, null);
  });

  test('without the CA the handshake fails: 502 with the TLS reason', async () => {
    const r = await get(p.port(), '/no-root');
    assert.equal(r.status, 502);
    assert.match(r.body, /TLS/);
    assert.match(r.body, /certificate/i);
  });

  test('a certificate for another name is rejected: 502', async () => {
    const r = await get(p.port(), '/wrong-name');
    assert.equal(r.status, 502);
    assert.match(r.body, /TLS/);
  });

  test('insecure: true skips verification', async () => {
    const r = await get(p.port(), '/insecure');
    assert.equal(r.status, 200, r.body);
    assert.equal(JSON.parse(r.body).url, '/insecure');
  });

  test('mTLS: the proxy presents its client certificate', async () => {
    const r = await get(p.port(), '/mtls');
    assert.equal(r.status, 200, r.body);
    assert.equal(JSON.parse(r.body).clientCN, 'gw-test-client');
  });

  test('mTLS: without a client certificate the upstream refuses: 502', async () => {
    const seen = mtlsRequests;
    const r = await get(p.port(), '/mtls-no-cert');
    assert.equal(r.status, 502, r.body);
    assert.equal(mtlsRequests, seen, 'the upstream handler must not run');
  });

  test('alpn [h2] speaks HTTP/2 to the upstream', async () => {
    const r = await get(p.port(), '/h2/y');
    assert.equal(r.status, 200, r.body);
    const body = JSON.parse(r.body);
    assert.equal(body.httpVersion, '2.0');
    assert.equal(body.url, '/h2/y');
  });
});

describe('upstream failures and streaming', () => {
  let up: http.Server;
  let p: TestProxy;
  let refusedPort: number;
  /** The /stream response on the upstream side: when it closed and whether it had finished. */
  const stream: { closed?: Promise<{ at: number; finished: boolean }> } = {};
  let sseWrites: number[] = [];
  /** Called by the client when the first event has reached it: the upstream then writes the rest. */
  let sseFirstSeen: (() => void) | undefined;

  before(async () => {
    up = http.createServer((req, res) => {
      const url = req.url ?? '/';
      if (url.startsWith('/slow')) {
        // Answers after 3 s unless the proxy gives up first.
        const timer = setTimeout(() => res.end('late'), 3000);
        res.on('close', () => clearTimeout(timer));
      } else if (url.startsWith('/reset')) {
        req.socket.destroy();
      } else if (url.startsWith('/cut')) {
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '1000' });
        res.write('x'.repeat(100));
        setTimeout(() => req.socket.destroy(), 50);
      } else if (url.startsWith('/stream')) {
        res.writeHead(200, { 'content-type': 'text/plain' });
        let n = 0;
        const timer = setInterval(() => {
          res.write(`chunk ${n++}\n`);
          if (n >= 100) {
            clearInterval(timer);
            res.end();
          }
        }, 100);
        stream.closed = new Promise((resolve) =>
          res.on('close', () => {
            clearInterval(timer);
            resolve({ at: performance.now(), finished: res.writableFinished });
          }),
        );
        res.write('chunk start\n');
      } else if (url.startsWith('/sse')) {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        sseWrites = [];
        let n = 0;
        // the first event, then the others only once it has reached the client (or after 5 s, when a
        // gateway that buffers would hold it until the end)
        const firstSeen = new Promise<void>((r) => {
          sseFirstSeen = r;
        });
        const send = () => {
          sseWrites.push(performance.now());
          res.write(`data: event ${n}\n\n`);
          n++;
          if (n === 1)
            void Promise.race([firstSeen, sleep(5000)]).then(() => (timer = setTimeout(send, 100)));
          else if (n < 5) timer = setTimeout(send, 100);
          else res.end();
        };
        let timer = setTimeout(send, 0);
        res.on('close', () => clearTimeout(timer));
      } else {
        res.end(`ok ${url}`);
      }
    });
    const upPort = await listen(up);
    refusedPort = CLOSED_PORT;
    p = await startProxy(`
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - name: refused
      matches: [{ path: { pathPrefix: /refused } }]
      backends: [{ host: 127.0.0.1:${refusedPort} }]
    - name: slow
      matches: [{ path: { pathPrefix: /slow } }]
      policies: { timeout: { backendRequestTimeout: 200ms } }
      backends: [{ host: 127.0.0.1:${upPort} }]
    - name: rest
      backends: [{ host: 127.0.0.1:${upPort} }]
`);
  });
  after(async () => {
    await p.close();
    await close(up);
  });

  test('connection refused: 503 with the reason', async () => {
    const r = await get(p.port(), '/refused');
    assert.equal(r.status, 503);
    assert.match(r.body, /upstream connect error/);
    assert.match(r.body, /ECONNREFUSED/);
  });

  test('backendRequestTimeout cuts a slow upstream: 504', async () => {
    const t0 = performance.now();
    const r = await get(p.port(), '/slow');
    const took = performance.now() - t0;
    assert.equal(r.status, 504);
    assert.match(r.body, /timeout/);
    assert.ok(took >= 150 && took < 2000, `answered after ${Math.round(took)} ms`);
  });

  test('upstream resets before responding: 502', async () => {
    const r = await get(p.port(), '/reset');
    assert.equal(r.status, 502);
    assert.match(r.body, /reset/);
  });

  test('upstream resets mid-body: the client sees an incomplete response, the proxy keeps serving', async () => {
    const outcome = await new Promise<{ status: number; bytes: number; complete: boolean }>((resolve) => {
      const req = http.get({ host: '127.0.0.1', port: p.port(), path: '/cut', agent: false }, (res) => {
        let bytes = 0;
        const done = () => resolve({ status: res.statusCode ?? 0, bytes, complete: res.complete });
        res.on('data', (c: Buffer) => {
          bytes += c.length;
        });
        res.on('end', done);
        res.on('error', done);
        res.on('aborted', done);
      });
      req.on('error', () => resolve({ status: 0, bytes: 0, complete: false }));
    });
    assert.equal(outcome.status, 200);
    assert.equal(outcome.complete, false, 'the response must not look complete');
    assert.ok(outcome.bytes < 1000, `got ${outcome.bytes} of 1000 bytes`);
    const next = await get(p.port(), '/next');
    assert.equal(next.status, 200);
    assert.equal(next.body, 'ok /next');
  });

  test('a client that goes away mid-stream closes the upstream response', async () => {
    const earlier = stream.closed;
    const abortedAt = await new Promise<number>((resolve, reject) => {
      const req = http.get({ host: '127.0.0.1', port: p.port(), path: '/stream', agent: false }, (res) => {
        assert.equal(res.statusCode, 200);
        res.once('data', () => {
          req.destroy();
          resolve(performance.now());
        });
      });
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (err.code !== 'ECONNRESET') reject(err);
      });
    });
    assert.notEqual(stream.closed, earlier, 'the upstream got the request');
    assert.ok(stream.closed);
    const closed = await Promise.race([stream.closed, sleep(5000).then(() => undefined)]);
    assert.ok(closed, 'the upstream response did not close within 5 s of the client leaving');
    assert.equal(closed.finished, false, 'closed before the upstream finished writing');
    assert.ok(closed.at - abortedAt < 5000);
  });

  test('chunked / SSE responses are streamed, not buffered', async () => {
    const arrivals: { at: number; text: string }[] = [];
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.get({ host: '127.0.0.1', port: p.port(), path: '/sse', agent: false }, (res) => {
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          arrivals.push({ at: performance.now(), text: c });
          sseFirstSeen?.();
        });
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', reject);
      });
      req.on('error', reject);
    });
    assert.equal(status, 200);
    const events = arrivals
      .map((a) => a.text)
      .join('')
      .match(/data: event \d/g);
    assert.deepEqual(events, [
      'data: event 0',
      'data: event 1',
      'data: event 2',
      'data: event 3',
      'data: event 4',
    ]);
    // told by order, not by time: the first event reached the client before the upstream wrote the
    // second (it waits for that), and the others came in more than one piece
    const first = arrivals[0]!.at;
    const secondWrite = sseWrites[1]!;
    assert.ok(
      first < secondWrite,
      `the first event arrived ${Math.round(first - secondWrite)} ms after the second was written`,
    );
    assert.ok(arrivals.length >= 2, `${arrivals.length} arrival(s)`);
  });
});

describe('connect timeout', () => {
  // A listener whose accept queue is full drops new SYNs, so a connect to it hangs: a child process
  // listens with a tiny backlog and then blocks its event loop so nothing is ever accepted.
  let child: ReturnType<typeof spawn>;
  let fillers: net.Socket[] = [];
  let p: TestProxy;
  let port: number;

  before(async () => {
    child = spawn(
      process.execPath,
      [
        '-e',
        `const s = require('node:net').createServer();
         s.listen({ port: 0, host: '127.0.0.1', backlog: 1 }, () => {
           process.stdout.write(s.address().port + '\\n', () =>
             Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10000));
         });`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    port = await new Promise<number>((resolve, reject) => {
      child.stdout!.once('data', (c: Buffer) => resolve(Number(String(c).trim())));
      child.once('error', reject);
    });
    for (let i = 0; i < 4; i++) {
      const s = net.connect(port, '127.0.0.1');
      s.on('error', () => {});
      fillers.push(s);
    }
    await sleep(200);
    p = await startProxy(`
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - backends:
      - host: 127.0.0.1:${port}
        policies: { tcp: { connectTimeout: 200ms } }
`);
  });
  after(async () => {
    await p.close();
    for (const s of fillers) s.destroy();
    fillers = [];
    child.kill();
  });

  test('an upstream that never completes the handshake: 503 after connectTimeout', async () => {
    const t0 = performance.now();
    const r = await get(p.port(), '/');
    const took = performance.now() - t0;
    assert.equal(r.status, 503, r.body);
    assert.match(r.body, /upstream connect error: .*timeout/i);
    // The configured 200 ms, not a coarser clock's next tick (a second), with room for a busy machine.
    assert.ok(took >= 180 && took < 950, `answered after ${Math.round(took)} ms`);
  });
});
