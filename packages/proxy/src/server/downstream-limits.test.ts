// Limits on what downstream clients may hold: a header-read timeout, a first-request timeout, the
// per-bind connection cap, HTTP/2 stream limits, a request-body idle timeout, and upstream work that
// stops when the client resets its stream. Everything runs on loopback with short configured values.
import assert from 'node:assert/strict';
import http, { type IncomingMessage } from 'node:http';
import http2 from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import tls from 'node:tls';
import { httpGet, makeTestPki, startUpstream } from '@gw/testkit';
import { passHeaders, startExtProcServer } from '@gw/testkit/ext-proc-server';
import { startProxy } from '@gw/testkit/proxy';
import pino from 'pino';
import { loadConfigText } from '../config/load.ts';
import { DataPlane } from './data-plane.ts';

// The connection-limit line is a warning; the in-thread proxy logs only errors of its own by default.
process.env.GW_TEST_LOG ??= 'info';

const config = (
  upstreamPort: number,
  frontend: string,
  { route = '', global = '' }: { route?: string; global?: string } = {},
) => `${global ? `config:\n${global}\n` : ''}frontendPolicies:
${frontend}
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - ${route ? `policies: ${route}\n      ` : ''}backends: [{host: "127.0.0.1:${upstreamPort}"}]
`;

/** Connects, writes `payload` (if any) and reads until the server closes, at most `limitMs`. */
function untilClosed(
  port: number,
  payload: string,
  limitMs = 5000,
): Promise<{ data: string; openMs: number; closed: boolean }> {
  return new Promise((resolve) => {
    const start = performance.now();
    let data = '';
    const sock = net.connect(port, '127.0.0.1', () => {
      if (payload) sock.write(payload);
    });
    sock.setEncoding('utf8');
    sock.on('data', (c: string) => {
      data += c;
    });
    sock.on('error', () => {});
    const timer = setTimeout(() => {
      sock.destroy();
      resolve({ data, openMs: performance.now() - start, closed: false });
    }, limitMs);
    sock.on('close', () => {
      clearTimeout(timer);
      resolve({ data, openMs: performance.now() - start, closed: true });
    });
  });
}

test('a request head that stops half way is answered 408 and closed after requestHeadersTimeout', async (t) => {
  const up = await startUpstream();
  t.after(() => up.close());
  const p = await startProxy(config(up.port, '  http: {requestHeadersTimeout: 300ms}'));
  t.after(() => p.close());
  const r = await untilClosed(p.port(), 'GET /slow HTTP/1.1\r\nhost: gw.test\r\nx-slow: abc');
  assert.ok(r.closed, `the connection was still open after ${Math.round(r.openMs)} ms`);
  assert.match(r.data, /^HTTP\/1\.1 408 /);
  assert.ok(r.openMs >= 280 && r.openMs < 2000, `closed after ${Math.round(r.openMs)} ms`);
  assert.equal(up.seen.length, 0);
});

test('over TLS: a half-sent request head is closed after requestHeadersTimeout; h2 gets the stream limit', async (t) => {
  const pki = await makeTestPki(['gw.test']);
  t.after(() => pki.cleanup());
  const up = await startUpstream();
  t.after(() => up.close());
  const cert = pki.servers['gw.test']!;
  const p = await startProxy(`frontendPolicies:
  http: {requestHeadersTimeout: 300ms, http2MaxConcurrentStreams: 9}
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - protocol: HTTPS
    tls: {cert: ${JSON.stringify(cert.certFile)}, key: ${JSON.stringify(cert.keyFile)}}
    routes: [{backends: [{host: "127.0.0.1:${up.port}"}]}]
`);
  t.after(() => p.close());
  const r = await new Promise<{ data: string; openMs: number }>((resolve, reject) => {
    let data = '';
    let start = 0;
    const sock = tls.connect(
      { port: p.port(), host: '127.0.0.1', servername: 'gw.test', ca: pki.ca, ALPNProtocols: ['http/1.1'] },
      () => {
        start = performance.now();
        sock.write('GET /slow HTTP/1.1\r\nhost: gw.test\r\nx-slow: abc');
      },
    );
    sock.setEncoding('utf8');
    sock.on('data', (c: string) => {
      data += c;
    });
    sock.on('error', () => {});
    sock.on('close', () => resolve({ data, openMs: performance.now() - start }));
    sock.setTimeout(5000, () => {
      sock.destroy();
      reject(new Error('the TLS connection was still open after 5 s'));
    });
  });
  assert.match(r.data, /^HTTP\/1\.1 408 /);
  assert.ok(r.openMs >= 280 && r.openMs < 2000, `closed after ${Math.round(r.openMs)} ms`);

  const session = http2.connect(`https://127.0.0.1:${p.port()}`, { ca: pki.ca, servername: 'gw.test' });
  t.after(() => session.destroy());
  await new Promise((resolve) => session.once('remoteSettings', resolve));
  assert.equal(session.remoteSettings.maxConcurrentStreams, 9);
});

test('over TLS, HTTP/1.1 heads are limited as in plain text: 60 KB passes, 70 KB is answered 431', async (t) => {
  const pki = await makeTestPki(['gw.test']);
  t.after(() => pki.cleanup());
  // a backend that takes longer heads than gw, so that the limit seen is gw's
  const up = http.createServer({ maxHeaderSize: 256 * 1024 }, (req, res) =>
    res.end(`${req.headers.cookie?.length}`),
  );
  await new Promise<void>((r) => up.listen(0, '127.0.0.1', r));
  t.after(() => up.close());
  const cert = pki.servers['gw.test']!;
  const p = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - protocol: HTTPS
    tls: {cert: ${JSON.stringify(cert.certFile)}, key: ${JSON.stringify(cert.keyFile)}}
    routes: [{backends: [{host: "127.0.0.1:${(up.address() as AddressInfo).port}"}]}]
`);
  t.after(() => p.close());
  const send = (cookie: number) =>
    new Promise<string>((resolve, reject) => {
      let data = '';
      const sock = tls.connect(
        { port: p.port(), host: '127.0.0.1', servername: 'gw.test', ca: pki.ca, ALPNProtocols: ['http/1.1'] },
        () =>
          sock.write(
            `GET / HTTP/1.1\r\nhost: gw.test\r\ncookie: ${'c'.repeat(cookie)}\r\nconnection: close\r\n\r\n`,
          ),
      );
      sock.setEncoding('utf8');
      sock.on('data', (c: string) => {
        data += c;
      });
      sock.on('error', reject);
      sock.on('close', () => resolve(data));
    });
  const ok = await send(60_000);
  assert.match(ok, /^HTTP\/1\.1 200 /);
  assert.match(ok, /\r\n\r\n60000$/);
  assert.match(await send(70_000), /^HTTP\/1\.1 431 /);
});

test('a connection that never sends anything is closed after firstRequestTimeout', async (t) => {
  const up = await startUpstream();
  t.after(() => up.close());
  const p = await startProxy(config(up.port, '  http: {firstRequestTimeout: 300ms}'));
  t.after(() => p.close());
  const r = await untilClosed(p.port(), '');
  assert.ok(r.closed, `the connection was still open after ${Math.round(r.openMs)} ms`);
  assert.ok(r.openMs >= 280 && r.openMs < 2000, `closed after ${Math.round(r.openMs)} ms`);

  // An HTTP/2 connection that sends its preface and settings but opens no stream is closed too.
  const start = performance.now();
  const session = http2.connect(`http://127.0.0.1:${p.port()}`);
  session.on('error', () => {});
  const closed = await Promise.race([
    new Promise<boolean>((r) => session.once('close', () => r(true))),
    sleep(5000).then(() => false),
  ]);
  session.destroy();
  const ms = performance.now() - start;
  assert.ok(closed, 'the h2c session without a stream was still open after 5 s');
  assert.ok(ms >= 280 && ms < 2000, `h2c session closed after ${Math.round(ms)} ms`);
});

test('the connection cap refuses connections past maxConnections, logs once, and admits again when one closes', async (t) => {
  const up = await startUpstream();
  t.after(() => up.close());
  const p = await startProxy(config(up.port, '  tcp: {maxConnections: 3}'));
  t.after(() => p.close());
  const held: net.Socket[] = [];
  t.after(() => {
    for (const s of held) s.destroy();
  });
  for (let i = 0; i < 3; i++) {
    const s = net.connect(p.port(), '127.0.0.1');
    s.on('error', () => {});
    await new Promise((r) => s.once('connect', r));
    held.push(s);
  }
  // Let the server count all three before the next ones arrive.
  await sleep(50);
  for (let i = 0; i < 3; i++) {
    const r = await untilClosed(p.port(), 'GET / HTTP/1.1\r\nhost: gw.test\r\n\r\n', 2000);
    assert.ok(r.closed && r.data === '', `connection ${4 + i} was served: ${JSON.stringify(r.data)}`);
  }
  const lines = p.accessLog.filter((l) => String(l.msg).startsWith('connection limit reached'));
  assert.equal(lines.length, 1, 'one log line for a burst of refusals');
  assert.equal(lines[0]?.limit, 3);
  assert.equal(lines[0]?.level, 40, 'logged as a warning');
  // and counted: three accepted, three refused at the cap, three open
  const metric = async (name: string) =>
    (await p.metrics.registry.getMetricsAsJSON()).find((m) => m.name === name)?.values ?? [];
  const counts = Object.fromEntries(
    (await metric('gw_downstream_connections_total')).map((v) => [v.labels.outcome, v.value]),
  );
  assert.deepEqual(counts, { accepted: 3, limit: 3, denied: 0 });
  assert.deepEqual(
    (await metric('gw_downstream_connections_open')).map((v) => [v.labels.bind, v.value]),
    [['127.0.0.1:0#0', 3]], // the bind's key: address:port (a port-0 bind numbered)
  );

  held.pop()?.destroy();
  // the slot is freed when the server sees that connection close, which a busy machine can put after
  // the next accept: try again for a while
  const end = Date.now() + 5000;
  let r = await untilClosed(p.port(), 'GET / HTTP/1.1\r\nhost: gw.test\r\nconnection: close\r\n\r\n', 2000);
  while (!r.data.startsWith('HTTP/1.1 200 ') && Date.now() < end) {
    await sleep(50);
    r = await untilClosed(p.port(), 'GET / HTTP/1.1\r\nhost: gw.test\r\nconnection: close\r\n\r\n', 2000);
  }
  assert.match(r.data, /^HTTP\/1\.1 200 /, 'a connection is admitted once one of the three closed');
});

test('HTTP/2 clients are told the configured SETTINGS_MAX_CONCURRENT_STREAMS (100 by default)', async (t) => {
  const up = await startUpstream();
  t.after(() => up.close());
  const remoteMax = async (port: number) => {
    const session = http2.connect(`http://127.0.0.1:${port}`);
    try {
      await new Promise((r) => session.once('remoteSettings', r));
      return session.remoteSettings.maxConcurrentStreams;
    } finally {
      session.destroy();
    }
  };
  const p = await startProxy(config(up.port, '  http: {}'));
  t.after(() => p.close());
  assert.equal(await remoteMax(p.port()), 100);
  await p.reload(config(up.port, '  http: {http2MaxConcurrentStreams: 7}'));
  assert.equal(await remoteMax(p.port()), 7, 'a reload applies to new connections');
});

/** An upstream that never answers and keeps count of the requests it holds and the connections it got. */
async function holdingUpstream() {
  let active = 0;
  let requests = 0;
  let connections = 0;
  const server = http.createServer((req: IncomingMessage) => {
    active++;
    requests++;
    req.resume();
    req.socket.once('close', () => active--);
  });
  let open = 0;
  let maxOpen = 0;
  server.on('connection', (sock) => {
    connections++;
    open++;
    maxOpen = Math.max(maxOpen, open);
    sock.once('close', () => open--);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    get active() {
      return active;
    },
    get requests() {
      return requests;
    },
    get connections() {
      return connections;
    },
    get maxOpen() {
      return maxOpen;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

async function until(cond: () => boolean, ms: number): Promise<boolean> {
  const end = performance.now() + ms;
  while (!cond()) {
    if (performance.now() > end) return false;
    await sleep(10);
  }
  return true;
}

test('a stream the client resets cancels its upstream request', async (t) => {
  const up = await holdingUpstream();
  t.after(() => up.close());
  const p = await startProxy(config(up.port, '  http: {}'));
  t.after(() => p.close());
  const session = http2.connect(`http://127.0.0.1:${p.port()}`);
  t.after(() => session.destroy());
  session.on('error', () => {});
  const streams = Array.from({ length: 20 }, (_, i) => {
    const s = session.request({ ':path': `/held/${i}` });
    s.on('error', () => {});
    return s;
  });
  assert.ok(await until(() => up.active === 20, 5000), `upstream holds ${up.active} of 20 requests`);
  for (const s of streams) s.close(http2.constants.NGHTTP2_CANCEL);
  assert.ok(await until(() => up.active === 0, 3000), `${up.active} upstream requests still running`);
  assert.ok(await until(() => p.plane.inflight === 0, 1000), 'no request left in flight');
});

/** HTTP/2 frames by hand: a client that sends HEADERS and RST_STREAM back to back, as fast as it can. */
function frame(type: number, flags: number, stream: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(stream, 5);
  return Buffer.concat([head, payload]);
}

function headersAndResets(n: number): Buffer {
  // HPACK: :method GET, :scheme http, :path / (static table), :authority as a literal.
  const authority = Buffer.from('gw.test');
  const block = Buffer.concat([Buffer.from([0x82, 0x86, 0x84, 0x41, authority.length]), authority]);
  const cancel = Buffer.alloc(4);
  cancel.writeUInt32BE(http2.constants.NGHTTP2_CANCEL);
  const frames = [Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), frame(0x4, 0, 0, Buffer.alloc(0))];
  for (let i = 0; i < n; i++) {
    const id = 1 + 2 * i;
    frames.push(frame(0x1, 0x5 /* END_STREAM | END_HEADERS */, id, block), frame(0x3, 0, id, cancel));
  }
  return Buffer.concat(frames);
}

test('HEADERS followed at once by RST_STREAM, 300 times, leave nothing running upstream', async (t) => {
  const up = await holdingUpstream();
  t.after(() => up.close());
  const p = await startProxy(
    config(up.port, '  http: {http2MaxConcurrentStreams: 500}', { global: '  backend: {poolMaxSize: 2}' }),
  );
  t.after(() => p.close());
  const sock = net.connect(p.port(), '127.0.0.1');
  t.after(() => sock.destroy());
  sock.on('error', () => {});
  sock.resume();
  sock.write(headersAndResets(300));
  assert.ok(
    await until(() => p.accessLog.length >= 300, 5000),
    `${p.accessLog.length} of 300 requests ended`,
  );
  // Time for any request that was sent to reach the upstream.
  await sleep(300);
  assert.equal(up.active, 0, 'no upstream request is left running');
  // undici closes a connection whose queued request was cancelled, so connections come and go; at
  // no time are there more than the pool allows, and the reset requests are not sent.
  assert.ok(up.maxOpen <= 2, `${up.maxOpen} upstream connections open at once for poolMaxSize 2`);
  assert.ok(up.requests <= 2, `${up.requests} reset requests reached the upstream`);
  assert.equal(p.plane.inflight, 0);
});

/** An echo upstream behind a TCP relay that counts the connections made to it. */
async function countingUpstream(t: { after: (fn: () => unknown) => void }) {
  let connections = 0;
  const up = await startUpstream('pool', async (_req, res) => {
    await sleep(20);
    res.end('ok');
  });
  t.after(() => up.close());
  const relay = net.createServer((client) => {
    connections++;
    const upstream = net.connect(up.port, '127.0.0.1');
    client.pipe(upstream).pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r));
  t.after(() => new Promise<void>((r) => relay.close(() => r())));
  return {
    port: (relay.address() as AddressInfo).port,
    get connections() {
      return connections;
    },
    /** Requests the upstream answered. */
    get seen() {
      return up.seen.length;
    },
  };
}

/** Sends `n` concurrent GETs on one h2c connection; resolves with their statuses. */
async function streams(port: number, n: number): Promise<number[]> {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  try {
    return await Promise.all(
      Array.from(
        { length: n },
        (_, i) =>
          new Promise<number>((resolve, reject) => {
            const s = session.request({ ':path': `/pool/${i}` });
            s.on('response', (h) => resolve(Number(h[':status'])));
            s.on('error', reject);
            s.resume();
          }),
      ),
    );
  } finally {
    session.destroy();
  }
}

const many = '  http: {http2MaxConcurrentStreams: 250}';

test('200 streams on one HTTP/2 connection use at most poolMaxSize upstream connections', async (t) => {
  const up = await countingUpstream(t);
  const p = await startProxy(config(up.port, many, { global: '  backend: {poolMaxSize: 4}' }));
  t.after(() => p.close());
  assert.deepEqual(new Set(await streams(p.port(), 200)), new Set([200]));
  assert.equal(up.seen, 200);
  assert.ok(up.connections <= 4, `${up.connections} upstream connections for poolMaxSize 4`);
});

test("poolMaxSize is the replica's: each of its workers opens its share", async (t) => {
  const up = await countingUpstream(t);
  const quiet = pino({ level: 'silent' });
  const plane = new DataPlane({ log: quiet, accessLog: quiet, worker: 1, workers: 2 });
  t.after(() => plane.drain(100));
  const { ir } = loadConfigText(
    't.yaml',
    config(up.port, many, { global: '  backend: {poolMaxSize: 4}' }),
    process.cwd(),
  );
  const port = Object.values(await plane.apply(ir))[0] as number;
  assert.deepEqual(new Set(await streams(port, 200)), new Set([200]));
  assert.ok(up.connections <= 2, `one worker of two opened ${up.connections} connections for poolMaxSize 4`);
});

test('upstream pools are bounded unless configured otherwise', () => {
  const yaml = (backend: string) =>
    `${backend}binds: [{port: 0, listeners: [{routes: [{backends: [{host: "127.0.0.1:1"}]}]}]}]\n`;
  assert.equal(loadConfigText('t.yaml', yaml(''), process.cwd()).ir.global.poolMaxSize, 1024);
  assert.equal(
    loadConfigText('t.yaml', yaml('config: {backend: {poolMaxSize: 8}}\n'), process.cwd()).ir.global
      .poolMaxSize,
    8,
  );
  assert.equal(
    loadConfigText('t.yaml', yaml('config: {backend: {poolMaxSize: null}}\n'), process.cwd()).ir.global
      .poolMaxSize,
    null,
  );
});

/** Sends the head and the first part of a body, then stops; resolves with what came back. */
function stalledUpload(port: number): Promise<{ data: string; openMs: number; closed: boolean }> {
  return untilClosed(
    port,
    'POST /upload HTTP/1.1\r\nhost: gw.test\r\ncontent-length: 1000\r\ncontent-type: text/plain\r\n\r\nfirst part',
  );
}

test('a request body that stalls is answered 408 after requestBodyIdleTimeout', async (t) => {
  const up = await holdingUpstream();
  t.after(() => up.close());
  const p = await startProxy(config(up.port, '  http: {requestBodyIdleTimeout: 300ms}'));
  t.after(() => p.close());

  const r = await stalledUpload(p.port());
  assert.ok(r.closed, `the connection was still open after ${Math.round(r.openMs)} ms`);
  assert.match(r.data, /^HTTP\/1\.1 408 /);
  assert.ok(r.openMs >= 280 && r.openMs < 2000, `answered after ${Math.round(r.openMs)} ms`);
  assert.ok(await until(() => up.active === 0, 2000), 'the upstream request was cancelled');

  // The same over HTTP/2.
  const session = http2.connect(`http://127.0.0.1:${p.port()}`);
  t.after(() => session.destroy());
  const start = performance.now();
  const s = session.request({ ':path': '/upload', ':method': 'POST', 'content-length': '1000' });
  s.write('first part');
  const status = await new Promise<number>((resolve, reject) => {
    s.on('response', (h) => resolve(Number(h[':status'])));
    s.on('error', reject);
  });
  assert.equal(status, 408);
  const ms = performance.now() - start;
  assert.ok(ms >= 280 && ms < 2000, `h2 answered after ${Math.round(ms)} ms`);
  assert.ok(await until(() => p.plane.inflight === 0, 2000), 'the h2 request is over');
});

test('a body a policy reads into memory that stalls is answered too: 408 after requestBodyIdleTimeout, the deadline after requestTimeout', async (t) => {
  const up = await startUpstream();
  t.after(() => up.close());
  // a transformation that reads the body and the buffer policy each wait for a body the client
  // stopped sending (as extAuthz with the body, extProc buffered, an LLM, MCP or A2A route's read do)
  const reads = [
    "{transformations: {request: {set: {x-size: 'string(size(request.body))'}}}}",
    '{buffer: {request: {maxBytes: 1000000}}}',
  ];
  for (const route of reads) {
    await using_(
      await startProxy(config(up.port, '  http: {requestBodyIdleTimeout: 300ms}', { route })),
      async (p) => {
        const r = await stalledUpload(p.port());
        assert.ok(r.closed, `${route}: the connection was still open after ${Math.round(r.openMs)} ms`);
        assert.match(r.data, /^HTTP\/1\.1 408 /, route);
        assert.ok(r.openMs < 2000, `${route}: answered after ${Math.round(r.openMs)} ms`);
      },
    );
    await using_(
      await startProxy(
        config(up.port, '  http: {requestBodyIdleTimeout: 60s}', {
          route: route.replace(/^\{/, '{timeout: {requestTimeout: 300ms}, '),
        }),
      ),
      async (p) => {
        const r = await stalledUpload(p.port());
        assert.ok(r.closed, `${route}: the connection was still open after ${Math.round(r.openMs)} ms`);
        assert.match(r.data, /^HTTP\/1\.1 504 /, route);
        assert.ok(r.openMs < 2000, `${route}: answered after ${Math.round(r.openMs)} ms`);
      },
    );
  }
  assert.equal(up.seen.length, 0, 'no stalled request reached the upstream');
});

test('extProc reading a streamed body counts as waiting for it: a stalled body is answered 408 after requestBodyIdleTimeout', async (t) => {
  const up = await startUpstream();
  const proc = await startExtProcServer(passHeaders);
  t.after(async () => {
    await up.close();
    await proc.close();
  });
  // the default body mode streams the body to the service as it arrives (read with for await)
  await using_(
    await startProxy(
      config(up.port, '  http: {requestBodyIdleTimeout: 300ms}', {
        route: `{extProc: {host: "${proc.host}"}}`,
      }),
    ),
    async (p) => {
      const r = await stalledUpload(p.port());
      assert.ok(r.closed, `the connection was still open after ${Math.round(r.openMs)} ms`);
      assert.match(r.data, /^HTTP\/1\.1 408 /);
      assert.ok(r.openMs < 2000, `answered after ${Math.round(r.openMs)} ms`);
    },
  );
});

test('after an early answer, a body still arriving is drained and the connection kept; many on one connection leak nothing', async (t) => {
  const up = await startUpstream();
  t.after(() => up.close());
  const warnings: string[] = [];
  const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`);
  process.on('warning', onWarning);
  t.after(() => process.off('warning', onWarning));
  await using_(
    await startProxy(
      config(up.port, '  http: {requestBodyIdleTimeout: 300ms}', { route: '{apiKey: {keys: [{key: k1}]}}' }),
    ),
    async (p) => {
      const sock = net.connect(p.port(), '127.0.0.1');
      await new Promise((r) => sock.once('connect', r));
      sock.setEncoding('utf8');
      let data = '';
      sock.on('data', (c: string) => {
        data += c;
      });
      const answers = () => data.split('HTTP/1.1 401 ').length - 1;
      // 15 requests on the connection, each refused before its body, which then arrives in pieces
      // 100 ms apart (under the 300 ms idle timeout), for longer than the timeout in all
      for (let n = 1; n <= 15; n++) {
        sock.write('POST /x HTTP/1.1\r\nhost: gw.test\r\ncontent-length: 6\r\n\r\n');
        while (answers() < n) await sleep(5);
        for (const part of n === 1 ? ['ab', 'cd', 'ef'] : ['abcdef']) {
          await sleep(n === 1 ? 100 : 0);
          sock.write(part);
        }
      }
      sock.write('GET /x HTTP/1.1\r\nhost: gw.test\r\n\r\n');
      while (answers() < 16) await sleep(5);
      assert.ok(!sock.destroyed, 'the connection was kept');
      sock.destroy();
    },
  );
  assert.deepEqual(
    warnings.filter((w) => /MaxListeners/.test(w)),
    [],
  );
});

test("a route's requestTimeout ends a request whose extProc service does not answer: 504, not the service's failure", async (t) => {
  const up = await startUpstream();
  const silent = await startExtProcServer(() => new Promise(() => {}));
  t.after(async () => {
    await up.close();
    await silent.close();
  });
  await using_(
    await startProxy(
      config(up.port, '  http: {}', {
        route: `{timeout: {requestTimeout: 300ms}, extProc: {host: "${silent.host}", timeout: 10s}}`,
      }),
    ),
    async (p) => {
      const started = performance.now();
      const r = await httpGet(p.port(), '/x');
      assert.equal(r.status, 504);
      assert.ok(performance.now() - started < 2000);
      assert.equal(up.seen.length, 0);
    },
  );
});

test('after an answer sent before the client sent its body, the client has requestBodyIdleTimeout to send the rest, then loses the connection', async (t) => {
  const up = await startUpstream();
  t.after(() => up.close());
  // refused by an API key check, the body never read; the client then stops sending
  await using_(
    await startProxy(
      config(up.port, '  http: {requestBodyIdleTimeout: 300ms}', { route: '{apiKey: {keys: [{key: k1}]}}' }),
    ),
    async (p) => {
      const r = await stalledUpload(p.port());
      assert.match(r.data, /^HTTP\/1\.1 401 /);
      assert.ok(
        r.closed && r.openMs >= 250 && r.openMs < 2000,
        `closed: ${r.closed} after ${Math.round(r.openMs)} ms`,
      );
      // a request whose body was sent whole keeps its connection
      const whole = await new Promise<string>((resolve) => {
        let data = '';
        const sock = net.connect(p.port(), '127.0.0.1', () =>
          sock.write('POST /x HTTP/1.1\r\nhost: gw.test\r\ncontent-length: 2\r\n\r\nhi'),
        );
        sock.setEncoding('utf8');
        sock.on('data', (c: string) => {
          data += c;
          if (data.includes('\r\n\r\n')) {
            sock.destroy();
            resolve(data);
          }
        });
      });
      assert.match(whole, /^HTTP\/1\.1 401 /);
      assert.doesNotMatch(whole, /\r\nconnection: close\r\n/i);
    },
  );
});

/** Runs `fn` with the proxy, then closes it. */
async function using_(
  p: Awaited<ReturnType<typeof startProxy>>,
  fn: (p: Awaited<ReturnType<typeof startProxy>>) => Promise<void>,
) {
  try {
    await fn(p);
  } finally {
    await p.close();
  }
}

test('a body that keeps arriving, or a route with a request timeout, is not cut by the body idle timeout', async (t) => {
  const up = await startUpstream();
  t.after(() => up.close());
  const p = await startProxy(config(up.port, '  http: {requestBodyIdleTimeout: 1s}'));
  t.after(() => p.close());

  const trickle = async (port: number, gapMs: number, parts: number) => {
    const sock = net.connect(port, '127.0.0.1');
    sock.on('error', () => {});
    await new Promise((r) => sock.once('connect', r));
    let data = '';
    sock.setEncoding('utf8');
    sock.on('data', (c: string) => {
      data += c;
    });
    sock.write(`POST /t HTTP/1.1\r\nhost: gw.test\r\nconnection: close\r\ncontent-length: ${parts}\r\n\r\n`);
    for (let i = 0; i < parts; i++) {
      await sleep(gapMs);
      if (!sock.destroyed) sock.write('x');
    }
    await new Promise((r) => sock.once('close', r));
    return data;
  };
  // Gaps far shorter than the timeout (a busy machine's stall between two of them must not reach it),
  // for longer than it in total.
  assert.match(await trickle(p.port(), 100, 15), /^HTTP\/1\.1 200 /);

  // A route with a request timeout leaves the body to it.
  await p.reload(
    config(up.port, '  http: {requestBodyIdleTimeout: 1s}', { route: '{timeout: {requestTimeout: 5s}}' }),
  );
  assert.match(await trickle(p.port(), 1300, 2), /^HTTP\/1\.1 200 /);
});

test("HTTP/2 clients are told agentgateway's http2WindowSize, http2FrameSize and http2MaxHeaderSize; the connection gets http2ConnectionWindowSize", async (t) => {
  const up = await startUpstream();
  t.after(() => up.close());
  const seen = async (port: number) => {
    const session = http2.connect(`http://127.0.0.1:${port}`);
    try {
      await new Promise((r) => session.once('remoteSettings', r));
      // a round trip, so a WINDOW_UPDATE sent with the settings has arrived
      await new Promise((r) => session.ping(r));
      const { initialWindowSize, maxFrameSize, maxHeaderListSize } = session.remoteSettings;
      return { initialWindowSize, maxFrameSize, maxHeaderListSize, window: session.state.remoteWindowSize };
    } finally {
      session.destroy();
    }
  };
  const p = await startProxy(
    config(
      up.port,
      '  http: {http2WindowSize: 1048576, http2FrameSize: 32768, http2MaxHeaderSize: 8192, http2ConnectionWindowSize: 4194304}',
    ),
  );
  t.after(() => p.close());
  assert.deepEqual(await seen(p.port()), {
    initialWindowSize: 1_048_576,
    maxFrameSize: 32_768,
    maxHeaderListSize: 8192,
    window: 4_194_304,
  });
  const r = await httpGet(p.port(), '/');
  assert.equal(r.status, 200);
  await p.reload(config(up.port, '  http: {}'));
  const after = await seen(p.port());
  assert.deepEqual([after.initialWindowSize, after.maxFrameSize, after.window], [65_535, 16_384, 65_535]);
});

test('maxConnectionDuration: an idle HTTP/1 connection is closed, one answering finishes with connection: close, HTTP/2 gets GOAWAY', async (t) => {
  // an upstream that answers /slow after 600 ms
  const slow = http.createServer((req, res) => {
    setTimeout(() => res.end(`done ${req.url}`), req.url === '/slow' ? 600 : 0);
  });
  await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
  t.after(() => slow.close());
  const port = (slow.address() as AddressInfo).port;
  const p = await startProxy(config(port, '  http: {maxConnectionDuration: 300ms}'));
  t.after(() => p.close());

  const idle = await untilClosed(p.port(), 'GET /fast HTTP/1.1\r\nhost: gw.test\r\n\r\n');
  assert.ok(idle.closed, 'the keep-alive connection was closed');
  assert.match(idle.data, /^HTTP\/1\.1 200 [\s\S]*done \/fast$/);
  assert.ok(idle.openMs >= 250 && idle.openMs < 2000, `closed after ${Math.round(idle.openMs)} ms`);

  const busy = await untilClosed(p.port(), 'GET /slow HTTP/1.1\r\nhost: gw.test\r\n\r\n');
  assert.ok(busy.closed);
  assert.match(busy.data, /^HTTP\/1\.1 200 /, 'the request in flight was answered');
  assert.match(busy.data, /\r\nconnection: close\r\n/i);
  assert.match(busy.data, /done \/slow$/);
  assert.ok(busy.openMs >= 550, `closed after ${Math.round(busy.openMs)} ms, before the answer`);

  const session = http2.connect(`http://127.0.0.1:${p.port()}`);
  const goaway = new Promise<number>((r) => session.once('goaway', (code) => r(code)));
  const start = performance.now();
  const s = session.request({ ':path': '/fast' });
  s.resume();
  await new Promise((r) => s.once('end', r));
  assert.equal(await goaway, http2.constants.NGHTTP2_NO_ERROR);
  assert.ok(performance.now() - start >= 250);
  session.destroy();

  await p.reload(config(port, '  http: {}'));
  const kept = await untilClosed(p.port(), 'GET /fast HTTP/1.1\r\nhost: gw.test\r\n\r\n', 800);
  assert.equal(kept.closed, false, 'without the setting, a keep-alive connection stays open');
});

test('a body that has all arrived is not cut by the body idle timeout while the upstream takes longer', async (t) => {
  // Answers 900 ms after the request's body has ended: three times the idle timeout.
  const slow = http.createServer((req: IncomingMessage, res) => {
    req.resume();
    req.once('end', () => setTimeout(() => res.end('late but whole'), 900));
  });
  await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
  t.after(() => new Promise((r) => slow.close(r)));
  const port = (slow.address() as AddressInfo).port;
  const p = await startProxy(config(port, '  http: {requestBodyIdleTimeout: 300ms}'));
  t.after(() => p.close());

  const r = await untilClosed(
    p.port(),
    'POST /upload HTTP/1.1\r\nhost: gw.test\r\nconnection: close\r\ncontent-length: 5\r\n\r\nwhole',
  );
  assert.match(r.data, /^HTTP\/1\.1 200 /);
  assert.match(r.data, /late but whole$/);
  assert.ok(r.openMs >= 850, `answered after ${Math.round(r.openMs)} ms`);
});

test('http1MaxHeaders: a request with more headers is answered 431, one at the limit passes whole', async (t) => {
  const up = await startUpstream();
  t.after(() => up.close());
  const p = await startProxy(config(up.port, '  http: {http1MaxHeaders: 5}'));
  t.after(() => p.close());
  // host plus n x-h headers
  const ask = (n: number) =>
    untilClosed(
      p.port(),
      `GET /h HTTP/1.1\r\nhost: gw.test\r\nconnection: close\r\n${Array.from({ length: n }, (_, i) => `x-h${i}: ${i}\r\n`).join('')}\r\n`,
    );
  const over = await ask(4);
  assert.match(over.data, /^HTTP\/1\.1 431 /);
  assert.match(over.data, /more than 5 headers/);
  assert.equal(up.seen.length, 0);
  const at = await ask(3);
  assert.match(at.data, /^HTTP\/1\.1 200 /);
  // every header reached the upstream: none dropped
  assert.equal(up.seen[0]?.headers['x-h2'], '2');
});

test('a TLS connection that never sends its ClientHello is closed after firstRequestTimeout (HTTPS and TLS binds)', async (t) => {
  // Node reports such a handshake as timed out and leaves the connection open: gw closes it.
  const { up, tlsOf } = await tlsSetup(t);
  const p = await startProxy(`frontendPolicies:
  http: {firstRequestTimeout: 300ms}
${tlsBinds(tlsOf, up.port)}`);
  t.after(() => p.close());
  for (const n of [0, 1]) {
    const r = await untilClosed(p.port(n), '', 3000);
    assert.ok(r.closed, `bind ${n}: the connection was still open after ${Math.round(r.openMs)} ms`);
    assert.ok(r.openMs >= 280 && r.openMs < 2000, `bind ${n}: closed after ${Math.round(r.openMs)} ms`);
  }
});

test('frontendPolicies.tls.handshakeTimeout: its own deadline for the handshake, changed by a reload', async (t) => {
  const { pki, up, tlsOf } = await tlsSetup(t);
  const yaml = (handshake: string) => `frontendPolicies:
  http: {firstRequestTimeout: 30s}
  tls: {handshakeTimeout: ${handshake}}
${tlsBinds(tlsOf, up.port)}`;
  const p = await startProxy(yaml('300ms'));
  t.after(() => p.close());
  const closedWithin = async (lo: number, hi: number) => {
    for (const n of [0, 1]) {
      const r = await untilClosed(p.port(n), '', 5000);
      assert.ok(r.closed, `bind ${n}: the connection was still open after ${Math.round(r.openMs)} ms`);
      assert.ok(r.openMs >= lo && r.openMs < hi, `bind ${n}: closed after ${Math.round(r.openMs)} ms`);
    }
  };
  // well before firstRequestTimeout (30 s)
  await closedWithin(280, 2000);
  // the same ports keep listening; new connections get the new deadline
  await p.reload(yaml('1500ms'));
  await closedWithin(1400, 4000);
  // a handshake in time completes
  const tls = await import('node:tls');
  const done = await new Promise<string>((resolve) => {
    const c = tls.connect({ port: p.port(0), host: '127.0.0.1', servername: 'gw.test', ca: pki.ca }, () => {
      c.end();
      resolve('secure');
    });
    c.on('error', (e) => resolve(e.message));
  });
  assert.equal(done, 'secure');
});

test('frontendPolicies.tls.alpn: the protocols each TLS port offers, changed by a reload', async (t) => {
  const { pki, up, tlsOf } = await tlsSetup(t);
  const tls = await import('node:tls');
  const http2 = await import('node:http2');
  const yaml = (alpn: string) => `frontendPolicies:
  tls: {${alpn}}
${tlsBinds(tlsOf, up.port)}`;
  /** The protocol the port picks from `offer`, or the TLS error. */
  const picked = (port: number, offer: string[]) =>
    new Promise<string>((resolve) => {
      const c = tls.connect(
        { port, host: '127.0.0.1', servername: 'gw.test', ca: pki.ca, ALPNProtocols: offer },
        () => {
          resolve(String(c.alpnProtocol));
          c.destroy();
        },
      );
      c.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
    });
  const h2Get = (port: number) =>
    new Promise<string>((resolve, reject) => {
      const s = http2.connect(`https://127.0.0.1:${port}`, { servername: 'gw.test', ca: pki.ca });
      s.on('error', reject);
      const req = s.request({ ':path': '/alpn' });
      req.on('response', (h) => {
        req.resume();
        req.on('end', () => {
          s.close();
          resolve(String(h[':status']));
        });
      });
      req.end();
    });

  // unset: HTTPS offers h2 then http/1.1; the TLS port (tcpRoutes) offers nothing
  const p = await startProxy(yaml(''));
  t.after(() => p.close());
  assert.equal(await picked(p.port(0), ['h2', 'http/1.1']), 'h2');
  assert.equal(await picked(p.port(1), ['h2', 'http/1.1']), 'false');

  // http/1.1 only: a client that offers h2 as well gets HTTP/1.1; one that offers only h2 is refused
  await p.reload(yaml('alpn: [http/1.1]'));
  assert.equal(await picked(p.port(0), ['h2', 'http/1.1']), 'http/1.1');
  assert.equal(await picked(p.port(0), ['h2']), 'ERR_SSL_TLSV1_ALERT_NO_APPLICATION_PROTOCOL');
  assert.equal(await picked(p.port(1), ['h2', 'http/1.1']), 'http/1.1');

  // agentgateway's spelling (each id as its bytes); HTTP/2 requests are served end to end
  await p.reload(yaml('alpn: [[104, 50]]'));
  assert.equal(await picked(p.port(0), ['http/1.1', 'h2']), 'h2');
  assert.equal(await h2Get(p.port(0)), '200');
  assert.equal(await picked(p.port(1), ['x', 'h2']), 'h2');

  // back to unset
  await p.reload(yaml(''));
  assert.equal(await picked(p.port(0), ['http/1.1', 'h2']), 'h2');
  assert.equal(await picked(p.port(1), ['h2']), 'false');
});

/** An HTTPS bind and a TLS bind (tcpRoutes) with the same certificate, both to `upPort`. */
const tlsBinds = (tlsOf: string, upPort: number) => `binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - protocol: HTTPS
    tls: ${tlsOf}
    routes: [{backends: [{host: "127.0.0.1:${upPort}"}]}]
- port: 0
  address: 127.0.0.1
  listeners:
  - protocol: TLS
    tls: ${tlsOf}
    tcpRoutes: [{backends: [{host: "127.0.0.1:${upPort}"}]}]
`;

/** A test PKI for gw.test and an upstream, both closed after the test; the listener tls block. */
async function tlsSetup(t: { after(fn: () => unknown): void }) {
  const pki = await makeTestPki(['gw.test']);
  t.after(() => pki.cleanup());
  const up = await startUpstream();
  t.after(() => up.close());
  const cert = pki.servers['gw.test']!;
  const tlsOf = `{cert: ${JSON.stringify(cert.certFile)}, key: ${JSON.stringify(cert.keyFile)}}`;
  return { pki, up, tlsOf };
}

test('maxConcurrentRequests: one request past the limit is answered 503 (gRPC: status 14) at once; a place frees when a response is sent', async (t) => {
  // an upstream that holds each request until told to answer it
  const held: http.ServerResponse[] = [];
  const up = http.createServer((req, res) => {
    req.resume();
    if (req.url === '/hold') held.push(res);
    else res.end(`done ${req.url}`);
  });
  await new Promise<void>((r) => up.listen(0, '127.0.0.1', r));
  t.after(() => {
    up.closeAllConnections();
    up.close();
  });
  const upPort = (up.address() as AddressInfo).port;
  const p = await startProxy(config(upPort, '  http: {maxConcurrentRequests: 2}'));
  t.after(() => p.close());
  const get = (path: string, headers: Record<string, string> = {}) =>
    httpGet(p.port(), path, { host: 'gw.test', headers });

  const first = get('/hold');
  const second = get('/hold');
  assert.ok(await until(() => held.length === 2, 5000), 'both requests reached the upstream');
  const refused = await get('/next');
  assert.equal(refused.status, 503);
  assert.match(refused.body, /request limit exceeded/);
  // HTTP/2 streams count too, and a gRPC client gets its own status
  const session = http2.connect(`http://127.0.0.1:${p.port()}`);
  t.after(() => session.destroy());
  const s = session.request({
    ':method': 'POST',
    ':path': '/pkg.Svc/Call',
    'content-type': 'application/grpc',
    te: 'trailers',
  });
  s.end();
  const head = await new Promise<http2.IncomingHttpHeaders>((r) => s.once('response', r));
  const trailers = await new Promise<http2.IncomingHttpHeaders>((r) => {
    s.once('trailers', r);
    s.once('end', () => r(head));
    s.resume();
  });
  assert.equal(head[':status'], 200);
  assert.equal(trailers['grpc-status'] ?? head['grpc-status'], '14');

  const lines = p.accessLog.filter((l) => String(l.msg).startsWith('request limit reached'));
  assert.equal(lines.length, 1, 'one warning for the burst');
  assert.equal(lines[0]?.limit, 2);

  held[0]?.end('released');
  assert.equal((await first).status, 200);
  const after = await get('/next');
  assert.equal(after.status, 200, 'a place is free once a response was sent');
  assert.equal(after.body, 'done /next');
  held[1]?.end('released');
  assert.equal((await second).status, 200);

  // a reload without the limit lets everything through; held requests keep their count until answered
  await p.reload(config(upPort, '  http: {}'));
  const many = Array.from({ length: 4 }, () => get('/hold'));
  assert.ok(await until(() => held.length === 6, 5000), 'four requests in flight without a limit');
  for (const r of held.slice(2)) r.end('released');
  for (const r of await Promise.all(many)) assert.equal(r.status, 200);
});
