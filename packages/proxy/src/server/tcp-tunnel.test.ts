// backendTunnel on tcp route backends: each connection goes through an HTTP forward proxy (the
// `proxy` npm package, a real one) by CONNECT, with the proxy's credential; a backend's backendTLS
// runs inside the tunnel; a dynamic backend's dial goes through it too; a proxy that refuses closes
// the client's connection with the proxy's answer logged.
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import http from 'node:http';
import https from 'node:https';
import net, { type AddressInfo, type Socket } from 'node:net';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import tls from 'node:tls';
import { makeTestPki, type TestPki } from '@gw/testkit';
import { eventuallyFound } from '@gw/testkit/eventually';
import { startProxy } from '@gw/testkit/proxy';
import { createProxy, type ProxyServer } from 'proxy';
import { loadConfigText } from '../config/load.ts';

let pki: TestPki;
let echo: net.Server;
let secureEcho: tls.Server;
let forward: ProxyServer;
/** What the forward proxy was asked: `CONNECT host:port` and the credential sent. */
const seen: { line: string; auth: string | undefined }[] = [];

const portOf = (s: { address(): AddressInfo | string | null }) => (s.address() as AddressInfo).port;

before(async () => {
  pki = await makeTestPki(['backend.internal', 'proxy.internal']);
  const cert = pki.servers['backend.internal'] as { cert: string; key: string };
  echo = net.createServer((c) => {
    c.on('data', (d) => c.write(`echo: ${String(d)}`));
    c.on('error', () => c.destroy());
  });
  secureEcho = tls.createServer({ cert: cert.cert, key: cert.key }, (c) => {
    c.on('data', (d) => c.write(`tls echo: ${String(d)}`));
    c.on('error', () => c.destroy());
  });
  forward = createProxy(http.createServer());
  forward.prependListener('connect', (req: IncomingMessage) =>
    seen.push({ line: `${req.method} ${req.url}`, auth: req.headers['proxy-authorization'] }),
  );
  forward.authenticate = (req) => req.headers['proxy-authorization'] === 'Bearer tunnel-key';
  await Promise.all(
    [echo, secureEcho, forward].map(
      (s) => new Promise<void>((r) => (s as net.Server).listen(0, '127.0.0.1', () => r())),
    ),
  );
});
after(async () => {
  echo.close();
  secureEcho.close();
  forward.closeAllConnections();
  forward.close();
  await pki.cleanup();
});

/** Writes `line` on a connection to `port` and reads until the answer to it arrived (or the close). */
async function exchange(port: number, line: string): Promise<string> {
  const s: Socket = net.connect(port, '127.0.0.1');
  s.on('error', () => {});
  let got = '';
  s.setEncoding('utf8');
  s.on('data', (d: string) => {
    got += d;
  });
  s.write(line);
  const end = Date.now() + 5000;
  while (!got.endsWith(line) && !s.destroyed && Date.now() < end) await sleep(10);
  s.destroy();
  return got;
}

const tunnel = (key = 'tunnel-key') =>
  `{proxy: {host: "127.0.0.1:${portOf(forward)}"}, policies: {backendAuth: {key: ${key}}}}`;

test('a TCP route backend through a backendTunnel: CONNECT with the credential, then the bytes; backendTLS inside it', async (t) => {
  const p = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - protocol: TCP
    tcpRoutes:
    - backends:
      - host: "127.0.0.1:${portOf(echo)}"
        policies: {backendTunnel: ${tunnel()}}
- port: 0
  address: 127.0.0.1
  listeners:
  - protocol: TCP
    tcpRoutes:
    - backends:
      - host: "127.0.0.1:${portOf(secureEcho)}"
        policies:
          backendTLS: {root: ${JSON.stringify(pki.caFile)}, hostname: backend.internal}
          backendTunnel: ${tunnel()}
`);
  t.after(() => p.close());
  seen.length = 0;
  assert.equal(await exchange(p.port(0), 'hi\n'), 'echo: hi\n');
  assert.deepEqual(seen, [{ line: `CONNECT 127.0.0.1:${portOf(echo)}`, auth: 'Bearer tunnel-key' }]);
  assert.equal(await exchange(p.port(1), 'secret\n'), 'tls echo: secret\n');
  assert.equal(seen[1]?.line, `CONNECT 127.0.0.1:${portOf(secureEcho)}`);
});

test('a dynamic backend dials through the tunnel; a proxy that refuses closes the connection, its answer logged', async (t) => {
  const p = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - protocol: TCP
    tcpRoutes:
    - backends:
      - dynamic: {target: '"127.0.0.1:${portOf(echo)}"'}
        policies: {backendTunnel: ${tunnel()}}
- port: 0
  address: 127.0.0.1
  listeners:
  - protocol: TCP
    tcpRoutes:
    - backends:
      - host: "127.0.0.1:${portOf(echo)}"
        policies: {backendTunnel: ${tunnel('wrong-key')}}
`);
  t.after(() => p.close());
  seen.length = 0;
  assert.equal(await exchange(p.port(0), 'dyn\n'), 'echo: dyn\n');
  assert.equal(seen[0]?.line, `CONNECT 127.0.0.1:${portOf(echo)}`);
  assert.equal(await exchange(p.port(1), 'nope\n'), '', 'nothing reaches the backend');
  const line = await eventuallyFound('the log line', () =>
    p.accessLog.find((l) => typeof l.error === 'string' && String(l.error).includes('CONNECT')),
  );
  assert.equal(
    line.error,
    `backendTunnel: the proxy 127.0.0.1:${portOf(forward)} answered CONNECT 127.0.0.1:${portOf(echo)} with 407`,
  );
});

test('through an https proxy: TLS to the proxy (its own CA and name), CONNECT inside it', async (t) => {
  const cert = pki.servers['proxy.internal'] as { cert: string; key: string };
  const secureForward = createProxy(https.createServer({ cert: cert.cert, key: cert.key }));
  const lines: string[] = [];
  secureForward.prependListener('connect', (req: IncomingMessage) => lines.push(`${req.method} ${req.url}`));
  await new Promise<void>((r) => secureForward.listen(0, '127.0.0.1', () => r()));
  t.after(() => {
    secureForward.closeAllConnections();
    secureForward.close();
  });
  const p = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - protocol: TCP
    tcpRoutes:
    - backends:
      - host: "127.0.0.1:${portOf(echo)}"
        policies:
          backendTunnel:
            proxy: {host: "127.0.0.1:${portOf(secureForward)}"}
            policies: {backendTLS: {root: ${JSON.stringify(pki.caFile)}, hostname: proxy.internal}}
`);
  t.after(() => p.close());
  assert.equal(await exchange(p.port(), 'over tls\n'), 'echo: over tls\n');
  assert.deepEqual(lines, [`CONNECT 127.0.0.1:${portOf(echo)}`]);
});

test('a proxy that never answers CONNECT: the connect timeout closes both connections', async (t) => {
  // accepts, reads, never answers; counts what is still open
  const open = new Set<net.Socket>();
  const silent = net.createServer((s) => {
    open.add(s);
    s.on('close', () => open.delete(s));
    s.on('error', () => s.destroy());
    s.resume();
  });
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
  t.after(() => silent.close());
  const p = await startProxy(`backends:
- name: slow
  host: "127.0.0.1:${portOf(echo)}"
  policies:
    tcp: {connectTimeout: 300ms}
    backendTunnel: {proxy: {host: "127.0.0.1:${portOf(silent)}"}}
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - protocol: TCP
    tcpRoutes: [{backends: [{backend: slow}]}]
`);
  t.after(() => p.close());
  const start = Date.now();
  assert.equal(await exchange(p.port(), 'anyone?\n'), '');
  assert.ok(Date.now() - start < 4000);
  for (let i = 0; i < 100 && open.size > 0; i++) await sleep(20);
  assert.equal(open.size, 0, 'the connection to the proxy was closed');
  const line = p.accessLog.find((l) => typeof l.error === 'string');
  assert.match(String(line?.error), /no answer to CONNECT within 300ms|timeout after 300ms/);
});

test('a unix socket backend takes no backendTunnel (tcp and HTTP routes)', () => {
  const load = (yaml: string) => () => loadConfigText('t.yaml', yaml, process.cwd());
  const tunnelTo = '{backendTunnel: {proxy: {host: "127.0.0.1:3128"}}}';
  assert.throws(
    load(
      `binds:\n- port: 9000\n  listeners:\n  - protocol: TCP\n    tcpRoutes: [{backends: [{host: "unix:/run/x.sock", policies: ${tunnelTo}}]}]\n`,
    ),
    /backends\[0\]\.policies\.backendTunnel: a unix socket backend is reached on this host/,
  );
  assert.throws(
    load(
      `binds:\n- port: 9000\n  listeners:\n  - routes: [{backends: [{host: "unix:/run/x.sock", policies: ${tunnelTo}}]}]\n`,
    ),
    /backendTunnel: a unix socket backend is reached on this host/,
  );
});
