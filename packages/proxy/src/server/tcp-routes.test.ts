// tcpRoutes against real peers on loopback: a TCP listener in front of an echo server (bytes both
// ways, half-close), a TLS passthrough listener in front of two TLS servers chosen by SNI (the
// client verifies each backend's own certificate: the gateway has none), a TLS listener that
// terminates, and what is closed: an unknown server name, garbage and cut-off ClientHellos.
import assert from 'node:assert/strict';
import net, { type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import tls from 'node:tls';
import { makeTestPki, type TestPki } from '@gw/testkit';
import { eventuallyFound } from '@gw/testkit/eventually';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import fc from 'fast-check';
import { loadConfigText } from '../config/load.ts';
import { sharedMemoryOf } from '../policies/shared-memory.ts';

/** A TCP server on port 0: echoes what it gets; at the client's FIN it writes `bye` and ends. */
function echoServer(): Promise<net.Server> {
  const s = net.createServer({ allowHalfOpen: true }, (c) => {
    c.on('data', (d) => c.write(d));
    c.on('end', () => c.end('bye'));
    c.on('error', () => c.destroy());
  });
  return new Promise((r) => s.listen(0, '127.0.0.1', () => r(s)));
}

/** A TLS server on port 0 with `name`'s certificate: answers each connection with its name. */
function namedTlsServer(pki: TestPki, name: string): Promise<tls.Server> {
  const cert = pki.servers[name]!;
  const s = tls.createServer({ cert: cert.cert, key: cert.key }, (c) => {
    c.end(`hello from ${name}`);
    c.on('error', () => c.destroy());
  });
  return new Promise((r) => s.listen(0, '127.0.0.1', () => r(s)));
}

const portOf = (s: net.Server) => (s.address() as net.AddressInfo).port;

/** Reads a connection to its end: the bytes, or how it failed. */
function readAll(s: Socket): Promise<{ data: string; error?: string }> {
  return new Promise((resolve) => {
    let data = '';
    s.on('data', (d) => {
      data += String(d);
    });
    s.once('error', (e: NodeJS.ErrnoException) => resolve({ data, error: e.code ?? e.message }));
    s.once('close', () => resolve({ data }));
  });
}

const until = eventuallyFound;

describe('tcpRoutes', () => {
  let pki: TestPki;
  let echo: net.Server;
  let a: tls.Server;
  let b: tls.Server;
  let p: TestProxy;

  before(async () => {
    pki = await makeTestPki(['a.test', 'b.example.test', 'gw.test']);
    echo = await echoServer();
    a = await namedTlsServer(pki, 'a.test');
    b = await namedTlsServer(pki, 'b.example.test');
    const gw = pki.servers['gw.test']!;
    p = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - protocol: TCP
    tcpRoutes:
    - name: echo
      backends: [{host: "127.0.0.1:${portOf(echo)}"}]
- port: 0
  address: 127.0.0.1
  listeners:
  - protocol: TLS
    tcpRoutes:
    - name: exact
      hostnames: [a.test]
      backends: [{host: "127.0.0.1:${portOf(a)}"}]
    - name: wildcard
      hostnames: ["*.example.test", "*.test"]
      backends: [{host: "127.0.0.1:${portOf(b)}"}]
- port: 0
  address: 127.0.0.1
  listeners:
  - protocol: TLS
    tls: {cert: ${JSON.stringify(gw.certFile)}, key: ${JSON.stringify(gw.keyFile)}}
    tcpRoutes:
    - name: terminated
      backends: [{host: "127.0.0.1:${portOf(echo)}"}]
`);
  });
  after(async () => {
    await p.close();
    for (const s of [echo, a, b]) s.close();
    await pki.cleanup();
  });

  const lineOf = (route: string | undefined, pred: (l: Record<string, unknown>) => boolean = () => true) =>
    until(`the access log line of ${route}`, () =>
      p.accessLog.find((l) => l.route === route && l.protocol !== undefined && pred(l)),
    );

  test('a TCP listener proxies bytes both ways and passes a half-close on', async () => {
    const c = net.connect({ host: '127.0.0.1', port: p.port(0), allowHalfOpen: true });
    const got = readAll(c);
    c.write('ping');
    await until('the echo', () => (c.bytesRead >= 4 ? true : undefined));
    // The client's FIN reaches the backend, which still answers on its half.
    c.end();
    const { data, error } = await got;
    assert.equal(error, undefined);
    assert.equal(data, 'pingbye');
    const line = await lineOf(`bind/0/listener0/echo`, (l) => l['bytes.received'] === 4);
    assert.equal(line.protocol, 'tcp');
    assert.equal(line['bytes.sent'], 7);
    assert.equal(line.endpoint, `127.0.0.1:${portOf(echo)}`);
    assert.equal(line.error, undefined);
  });

  test('big transfers keep flowing through the pipes (backpressure) and arrive whole', async () => {
    const c = net.connect({ host: '127.0.0.1', port: p.port(0), allowHalfOpen: true });
    let n = 0;
    c.on('data', (d) => {
      n += d.length;
    });
    const closed = new Promise((r) => c.once('close', r));
    const chunk = Buffer.alloc(64 * 1024, 7);
    for (let i = 0; i < 64; i++) if (!c.write(chunk)) await new Promise((r) => c.once('drain', r));
    c.end();
    await closed;
    assert.equal(n, 64 * 64 * 1024 + 3);
  });

  for (const [sni, expected, route] of [
    ['a.test', 'a.test', 'exact'],
    ['b.example.test', 'b.example.test', 'wildcard'],
  ] as const) {
    test(`TLS passthrough: SNI ${sni} reaches the backend with ${expected}'s own certificate`, async () => {
      const c = tls.connect({ host: '127.0.0.1', port: p.port(1), servername: sni, ca: pki.ca });
      const connected = new Promise<void>((r) => c.once('secureConnect', r));
      const got = readAll(c);
      await connected;
      // the certificate was verified for `sni` against the test CA; the gateway holds none of these
      assert.equal(c.getPeerCertificate().subject.CN, expected);
      const { data, error } = await got;
      assert.equal(error, undefined);
      assert.equal(data, `hello from ${expected}`);
      const line = await lineOf(`bind/0/listener0/${route}`, (l) => l['tls.sni'] === sni);
      assert.equal(line.protocol, 'tls');
      assert.ok((line['bytes.received'] as number) > 100, 'the ClientHello and the rest were counted');
    });
  }

  test('TLS passthrough: an SNI no route takes is closed and logged', async () => {
    const c = tls.connect({ host: '127.0.0.1', port: p.port(1), servername: 'other.example', ca: pki.ca });
    let secured = false;
    c.once('secureConnect', () => {
      secured = true;
    });
    const { error } = await readAll(c);
    assert.equal(secured, false);
    assert.ok(error, 'the handshake fails: the connection is closed');
    const line = await lineOf(undefined, (l) => l['tls.sni'] === 'other.example');
    assert.match(String(line.error), /no route/);
  });

  test('TLS passthrough: garbage and cut-off ClientHellos are closed, and the listener keeps serving', async () => {
    const send = async (bytes: Buffer, end: boolean) => {
      const c = net.connect({ host: '127.0.0.1', port: p.port(1) });
      c.on('error', () => {});
      c.write(bytes);
      if (end) c.end();
      const done = readAll(c);
      // a hello that claims more than it sends is cut at the first-request timeout (60 s) or the
      // client's close: the test closes it after a moment
      const t = setTimeout(() => c.destroy(), 300);
      const r = await done;
      clearTimeout(t);
      return r;
    };
    const http = await send(Buffer.from('GET / HTTP/1.1\r\nhost: x\r\n\r\n'), false);
    assert.equal(http.data, '', 'nothing is answered to a request that is not TLS');
    const line = await lineOf(undefined, (l) => String(l.error).startsWith('not a TLS ClientHello'));
    assert.equal(line.protocol, 'tls');

    // A real ClientHello, cut anywhere, then ended: closed, never proxied.
    const hello = await clientHelloBytes('a.test');
    for (const cut of [1, 5, 6, 43, Math.floor(hello.length / 2), hello.length - 1]) {
      const r = await send(hello.subarray(0, cut), true);
      assert.equal(r.data, '');
    }
    // Random bytes, some dressed as a handshake record.
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ minLength: 1, maxLength: 300 }),
        fc.boolean(),
        async (raw, dressed) => {
          const bytes = Buffer.from(raw);
          if (dressed) {
            bytes[0] = 0x16;
            if (bytes.length > 2) bytes[1] = 3;
            if (bytes.length > 4) bytes.writeUInt16BE(bytes.length - 5, 3);
          }
          const r = await send(bytes, true);
          assert.equal(r.data, '');
        },
      ),
      { numRuns: 40 },
    );
    // still serving
    const c = tls.connect({ host: '127.0.0.1', port: p.port(1), servername: 'a.test', ca: pki.ca });
    assert.equal((await readAll(c)).data, 'hello from a.test');
  });

  test('TLS terminate: the gateway completes the handshake and proxies the plaintext', async () => {
    const c = tls.connect({ host: '127.0.0.1', port: p.port(2), servername: 'gw.test', ca: pki.ca });
    await new Promise<void>((r) => c.once('secureConnect', r));
    assert.equal(c.getPeerCertificate().subject.CN, 'gw.test');
    const got = readAll(c);
    c.end('plain');
    assert.equal((await got).data, 'plainbye');
    const line = await lineOf('bind/0/listener0/terminated');
    assert.equal(line['tls.sni'], 'gw.test');
    assert.equal(line['bytes.received'], 5);
  });

  test('connections and bytes are counted by route', async () => {
    const m = await p.metrics.registry.getMetricsAsJSON();
    const conns = m.find((x) => x.name === 'gw_tcp_connections_total');
    const proxied = conns?.values.find(
      (v) => v.labels.route === 'bind/0/listener0/echo' && v.labels.outcome === 'proxied',
    );
    assert.ok((proxied?.value ?? 0) >= 2);
    const bytes = m.find((x) => x.name === 'gw_tcp_bytes_total');
    const received = bytes?.values.find(
      (v) => v.labels.route === 'bind/0/listener0/echo' && v.labels.direction === 'received',
    );
    assert.ok((received?.value ?? 0) >= 4 + 64 * 64 * 1024);
    assert.ok(conns?.values.some((v) => v.labels.outcome === 'no_route'));
  });
});

/** The first flight of a real node:tls client for `servername`, as sent on the wire. */
async function clientHelloBytes(servername: string): Promise<Buffer> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const got = new Promise<Buffer>((resolve) =>
    server.once('connection', (s) => {
      s.once('data', (d) => {
        resolve(d);
        s.destroy();
      });
    }),
  );
  const c = tls.connect({ host: '127.0.0.1', port: portOf(server), servername });
  c.on('error', () => {});
  const hello = await got;
  c.destroy();
  server.close();
  return hello;
}

describe('tcpRoutes config errors', () => {
  const load = (yaml: string) => () => loadConfigText('gw.yaml', yaml, process.cwd());
  const listener = (body: string) => `binds:
- port: 9
  listeners:
  - ${body}
`;
  const cases: [string, string, RegExp][] = [
    [
      'tcpRoutes on an HTTP listener',
      listener('tcpRoutes: [{backends: [{host: "127.0.0.1:1"}]}]'),
      /binds\[0\]\.listeners\[0\]\.tcpRoutes: tcpRoutes need protocol TCP or TLS, not HTTP/,
    ],
    [
      'routes on a TCP listener',
      listener('protocol: TCP\n    routes: [{backends: [{host: "127.0.0.1:1"}]}]'),
      /binds\[0\]\.listeners\[0\]\.routes: protocol TCP takes tcpRoutes, not routes/,
    ],
    [
      'hostnames on a TCP listener',
      listener('protocol: TCP\n    tcpRoutes: [{hostnames: [a.test], backends: [{host: "127.0.0.1:1"}]}]'),
      /binds\[0\]\.listeners\[0\]\.tcpRoutes\[0\]\.hostnames: hostnames are matched against the TLS server name/,
    ],
    [
      'an invalid hostname',
      listener('protocol: TLS\n    tcpRoutes: [{hostnames: ["a..b"], backends: [{host: "127.0.0.1:1"}]}]'),
      /tcpRoutes\[0\]\.hostnames\[0\]: invalid hostname "a\.\.b"/,
    ],
    [
      'tls on a TCP listener',
      listener('protocol: TCP\n    tls: {cert: c.pem, key: k.pem}\n    tcpRoutes: []'),
      /binds\[0\]\.listeners\[0\]\.tls: tls is set but protocol is TCP \(use TLS\)/,
    ],
    [
      'an unknown named backend',
      listener('protocol: TCP\n    tcpRoutes: [{backends: [{backend: nope}]}]'),
      /tcpRoutes\[0\]\.backends\[0\]\.backend: no backend named "nope"/,
    ],
    [
      'a service backend the file does not declare',
      listener('protocol: TCP\n    tcpRoutes: [{backends: [{service: {name: default/x, port: 80}}]}]'),
      /tcpRoutes\[0\]\.backends\[0\]\.service\.name: no service "default\/x" in services \(there are none\)/,
    ],
    [
      'a backendTunnel whose proxy is no backend (tcp-tunnel.test.ts runs one that is)',
      listener(
        'protocol: TCP\n    tcpRoutes: [{backends: [{host: "127.0.0.1:1", policies: {backendTunnel: {proxy: {backend: nope}}}}]}]',
      ),
      /backendTunnel\.proxy\.backend: /,
    ],
    [
      'the HBONE protocol',
      listener('protocol: HBONE'),
      /binds\[0\]\.listeners\[0\]\.protocol: the HBONE listener protocol is not supported by this build of gw yet/,
    ],
  ];
  for (const [what, yaml, message] of cases)
    test(what, () => {
      assert.throws(load(yaml), (err: Error) => {
        assert.match(err.message, message);
        return true;
      });
    });

  test('two TCP listeners on one port', () => {
    assert.throws(
      load(`binds:
- port: 9
  listeners:
  - {protocol: TCP, tcpRoutes: []}
  - {name: two, protocol: TCP, tcpRoutes: []}
`),
      /binds\[0\]\.listeners\[1\]: port 9 already has a TCP listener/,
    );
  });

  test('top-level tcpRoutes attach to gateways; an HTTP listener refuses them', () => {
    const { ir } = loadConfigText(
      'gw.yaml',
      `gateways:
  default: {port: 9, protocol: TLS}
  web: {port: 10}
tcpRoutes:
- hostnames: [a.test]
  backends: [{host: "127.0.0.1:1", weight: 3}, {host: "127.0.0.1:2", weight: 0}]
`,
      process.cwd(),
    );
    const l = ir.binds.find((bd) => bd.port === 9)?.listeners[0];
    assert.equal(l?.protocol, 'TLS');
    assert.deepEqual(
      l?.tcpRoutes?.map((r) => [r.key, r.hostnames, r.backends.map((bk) => [bk.name, bk.weight])]),
      [
        [
          'default/default/tcproute0',
          ['a.test'],
          [
            ['127.0.0.1:1', 3],
            ['127.0.0.1:2', 0],
          ],
        ],
      ],
    );
    assert.throws(
      load(`gateways:
  web: {port: 10}
tcpRoutes:
- gateways: web
  backends: [{host: "127.0.0.1:1"}]
`),
      /tcpRoutes\[0\]\.gateways: tcpRoutes need a TCP or TLS listener; web\/default is HTTP/,
    );
  });
});

test('a TCP listener on two workers (SO_REUSEPORT): every connection is proxied', async (t) => {
  const { Supervisor } = await import('./supervisor.ts');
  const pino = (await import('pino')).default;
  const echo = await echoServer();
  const sup = new Supervisor({
    workers: 2,
    logFilter: 'error',
    logFormat: 'json',
    log: pino({ level: 'silent' }),
  });
  t.after(async () => {
    await sup.stop(1000);
    echo.close();
  });
  const yaml = `binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - protocol: TCP
    tcpRoutes: [{backends: [{host: "127.0.0.1:${portOf(echo)}"}]}]
`;
  const ir = loadConfigText('gw.yaml', yaml, process.cwd()).ir;
  await sup.apply(ir, sharedMemoryOf(ir));
  const port = Object.values(sup.ports)[0] as number;
  const answers = await Promise.all(
    Array.from({ length: 12 }, async (_, i) => {
      const c = net.connect({ host: '127.0.0.1', port, allowHalfOpen: true });
      const got = readAll(c);
      c.end(`n${i}`);
      return (await got).data;
    }),
  );
  assert.deepEqual(
    answers,
    Array.from({ length: 12 }, (_, i) => `n${i}bye`),
  );
});

test('a tcp route to a Service: each connection goes to one of its workloads, by capacity; unhealthy ones get none', async () => {
  // two TCP servers that each say who they are
  const named = (name: string) =>
    new Promise<net.Server>((r) => {
      const s = net.createServer((c) => {
        c.end(name);
        c.on('error', () => c.destroy());
      });
      s.listen(0, '127.0.0.1', () => r(s));
    });
  const one = await named('one');
  const two = await named('two');
  const down = await named('down');
  const p = await startProxy(`services:
- {name: db, namespace: data, hostname: db.data.svc, vips: [], ports: {"5432": 0}}
workloads:
- {namespace: data, workloadIps: [127.0.0.1], services: {"data/db.data.svc": {"5432": ${portOf(one)}}}}
- {namespace: data, workloadIps: [127.0.0.1], capacity: 3, services: {"data/db.data.svc": {"5432": ${portOf(two)}}}}
- {namespace: data, workloadIps: [127.0.0.1], status: Unhealthy, services: {"data/db.data.svc": {"5432": ${portOf(down)}}}}
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - protocol: TCP
    tcpRoutes:
    - backends: [{service: {name: data/db.data.svc, port: 5432}}]
`);
  try {
    const seen: Record<string, number> = {};
    for (let i = 0; i < 40; i++) {
      const got = await readAll(net.connect(p.port(), '127.0.0.1'));
      seen[got.data] = (seen[got.data] ?? 0) + 1;
    }
    assert.equal(seen['down'], undefined, JSON.stringify(seen));
    assert.equal((seen['one'] ?? 0) + (seen['two'] ?? 0), 40, JSON.stringify(seen));
    // capacity 3 against 1
    assert.ok((seen['two'] ?? 0) > (seen['one'] ?? 0) && (seen['one'] ?? 0) > 0, JSON.stringify(seen));
  } finally {
    await p.close();
    for (const s of [one, two, down]) s.close();
  }
});
