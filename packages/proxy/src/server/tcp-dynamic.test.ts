// A tcp route's dynamic backend: each TLS passthrough connection dialled at its server name (SNI) on
// the port it came to, or where dynamic.target's CEL (source.*, destination.*) says; the client's
// TLS session is with the server it reached. What cannot be dialled closes the connection, logged.
import assert from 'node:assert/strict';
import type net from 'node:net';
import type { Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import tls from 'node:tls';
import { makeTestPki, type TestPki } from '@gw/testkit';
import { eventuallyFound } from '@gw/testkit/eventually';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { loadConfigText } from '../config/load.ts';

/** A TLS server with `name`'s certificate that answers each connection with its name. */
function namedTlsServer(pki: TestPki, name: string, host: string, port = 0): Promise<tls.Server> {
  const cert = pki.servers[name] as { cert: string; key: string };
  const s = tls.createServer({ cert: cert.cert, key: cert.key }, (c) => {
    c.end(`hello from ${name} at ${c.localAddress}`);
    c.on('error', () => c.destroy());
  });
  return new Promise((resolve, reject) => {
    s.once('error', reject);
    s.listen(port, host, () => resolve(s));
  });
}

const portOf = (s: net.Server) => (s.address() as net.AddressInfo).port;

/** A TLS connection to gw with `servername`, verified against the test CA: what came back, or the error. */
function tlsRead(port: number, servername: string, ca: string, host = '127.0.0.1'): Promise<string> {
  return new Promise((resolve) => {
    let data = '';
    const s: Socket = tls.connect({ host, port, servername, ca });
    s.on('data', (d) => {
      data += String(d);
    });
    s.once('error', (e: NodeJS.ErrnoException) => resolve(`error: ${e.code ?? e.message}`));
    s.once('close', () => resolve(data));
  });
}

const until = eventuallyFound;

describe('tcp route dynamic backend', () => {
  let pki: TestPki;
  let a: tls.Server;
  let p: TestProxy;
  before(async () => {
    pki = await makeTestPki(['a.test', 'localhost']);
    a = await namedTlsServer(pki, 'a.test', '127.0.0.1');
    p = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - protocol: TLS
    tcpRoutes:
    - name: by-target
      hostnames: ["*.test"]
      backends:
      - dynamic:
          target: 'destination.hostname == "a.test" ? "127.0.0.1:${portOf(a)}" : destination.hostname'
`);
  });
  after(async () => {
    await p.close();
    a.close();
    await pki.cleanup();
  });

  test('dynamic.target: the CEL reads the server name; the client talks TLS with the server reached', async () => {
    assert.equal(await tlsRead(p.port(), 'a.test', pki.ca), 'hello from a.test at 127.0.0.1');
    const line = await until('the access log line', () =>
      p.accessLog.find((l) => l.protocol === 'tls' && l['tls.sni'] === 'a.test'),
    );
    assert.equal(line.backend, 'dynamic');
    assert.equal(line.endpoint, `127.0.0.1:${portOf(a)}`);
  });

  test('a target that is not host:port closes the connection, and the log says why', async () => {
    const got = await tlsRead(p.port(), 'b.test', pki.ca);
    assert.match(got, /^error: |^$/);
    const line = await until('the access log line', () =>
      p.accessLog.find((l) => l.protocol === 'tls' && l['tls.sni'] === 'b.test'),
    );
    assert.equal(line.error, 'dynamic.target gave "b.test", not host:port');
  });
});

test('without a target: the server name at the port the client connected to', async (t) => {
  // gw on 127.0.0.2, the backend on 127.0.0.1 at the same port: localhost names the backend
  const pki = await makeTestPki(['localhost']);
  t.after(() => pki.cleanup());
  const p = await startProxy(`binds:
- port: 0
  address: 127.0.0.2
  listeners:
  - protocol: TLS
    tcpRoutes: [{backends: [{dynamic: {}}]}]
`);
  t.after(() => p.close());
  let backend: tls.Server;
  try {
    backend = await namedTlsServer(pki, 'localhost', '127.0.0.1', p.port());
  } catch (err) {
    t.skip(`port ${p.port()} is taken on 127.0.0.1: ${(err as Error).message}`);
    return;
  }
  t.after(() => backend.close());
  assert.equal(
    await tlsRead(p.port(), 'localhost', pki.ca, '127.0.0.2'),
    'hello from localhost at 127.0.0.1',
  );
  // a client that names no server has nothing to be dialled at
  const none = await new Promise<string>((resolve) => {
    const s = tls.connect({ host: '127.0.0.2', port: p.port(), rejectUnauthorized: false });
    s.once('error', (e: NodeJS.ErrnoException) => resolve(`error: ${e.code ?? e.message}`));
    s.once('close', () => resolve('closed'));
  });
  assert.match(none, /^error: |^closed$/);
  const line = await until('the access log line', () =>
    p.accessLog.find((l) => l.protocol === 'tls' && typeof l.error === 'string'),
  );
  assert.equal(line.error, 'the client sent no server name for the dynamic backend to dial');
});

test('a TCP listener’s dynamic backend needs a target; a target that is not CEL is refused', () => {
  const load = (listener: string) => () =>
    loadConfigText('t.yaml', `binds:\n- port: 9000\n  listeners:\n  - ${listener}\n`, process.cwd());
  assert.throws(
    load('protocol: TCP\n    tcpRoutes: [{backends: [{dynamic: {}}]}]'),
    /tcpRoutes\[0\]\.backends\[0\]\.dynamic: a TCP listener’s connections name no server to dial: set dynamic\.target/,
  );
  assert.throws(
    load('protocol: TLS\n    tcpRoutes: [{backends: [{dynamic: {target: "destination.("}}]}]'),
    /tcpRoutes\[0\]\.backends\[0\]\.dynamic\.target: /,
  );
  const ok = loadConfigText(
    't.yaml',
    'binds:\n- port: 9000\n  listeners:\n  - protocol: TCP\n    tcpRoutes: [{backends: [{dynamic: {target: \'"10.0.0.1:" + string(destination.port)\'}}]}]\n',
    process.cwd(),
  ).ir;
  assert.deepEqual(ok.binds[0]?.listeners[0]?.tcpRoutes?.[0]?.backends[0]?.target, {
    kind: 'dynamic',
    target: '"10.0.0.1:" + string(destination.port)',
  });
});

test('a server name that leads back to the gateway’s own port is refused, not dialled again and again', async (t) => {
  const pki = await makeTestPki(['localhost']);
  t.after(() => pki.cleanup());
  const p = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - protocol: TLS
    tcpRoutes: [{backends: [{dynamic: {}}]}]
`);
  t.after(() => p.close());
  const got = await tlsRead(p.port(), 'localhost', pki.ca);
  assert.match(got, /^error: |^$/);
  const line = await until('the access log line', () =>
    p.accessLog.find((l) => String(l.error ?? '').includes('itself')),
  );
  assert.equal(line.error, `the dynamic backend would dial this gateway itself (localhost:${p.port()})`);
  await sleep(200);
  const dialled = p.accessLog.filter((l) => l.protocol === 'tls' && l.backend === 'dynamic').length;
  assert.ok(dialled <= 2, `${dialled} connections went through the dynamic backend`);
});
