// The connection and request caps of a bind hold for the whole proxy, not per worker thread: bin/gw
// with two workers sharing the port admits exactly maxConnections connections (maxConcurrentRequests
// requests) and logs why it refuses more.
import assert from 'node:assert/strict';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { after, test } from 'node:test';
import { startUpstream } from '@gw/testkit';
import { cleanupGw, configBlock, startGw } from './support/gw-process.ts';

after(cleanupGw);

/** Opens a connection and sends one keep-alive request; resolves with the socket once answered, or null when closed. */
function served(port: number): Promise<net.Socket | null> {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1', () =>
      sock.write('GET /cap HTTP/1.1\r\nhost: gw.test\r\n\r\n'),
    );
    sock.on('error', () => {});
    sock.once('data', (c: Buffer) => resolve(/^HTTP\/1\.1 200 /.test(c.toString()) ? sock : null));
    sock.once('close', () => resolve(null));
    sock.setTimeout(5000, () => sock.destroy());
  });
}

test('maxConnections is one count for every worker of the proxy', async (t) => {
  const up = await startUpstream();
  t.after(() => up.close());
  const gw = await startGw({
    yaml: `${configBlock('workerThreads: 2', 'logging: {format: json}')}frontendPolicies:
  tcp: {maxConnections: 4}
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes: [{backends: [{host: "127.0.0.1:${up.port}"}]}]
`,
  });
  const port = await gw.proxyPort();
  const open: net.Socket[] = [];
  t.after(() => {
    for (const s of open) s.destroy();
  });
  let refused = 0;
  for (let i = 0; i < 10; i++) {
    const s = await served(port);
    if (s) open.push(s);
    else refused++;
  }
  assert.equal(open.length, 4, `${open.length} of 10 connections were served`);
  assert.equal(refused, 6);
  const warned = await gw.waitForLine(
    (l) => l.includes('connection limit reached') && l.includes('"limit":4'),
  );
  assert.ok(warned, 'the refusals are logged');
});

test('maxConcurrentRequests is one count for every worker of the proxy', async (t) => {
  // an upstream that holds every request until the test ends
  const held: http.ServerResponse[] = [];
  const up = http.createServer((req, res) => {
    req.resume();
    held.push(res);
  });
  await new Promise<void>((r) => up.listen(0, '127.0.0.1', r));
  t.after(() => {
    up.closeAllConnections();
    up.close();
  });
  const gw = await startGw({
    yaml: `${configBlock('workerThreads: 2', 'logging: {format: json}')}frontendPolicies:
  http: {maxConcurrentRequests: 3}
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes: [{backends: [{host: "127.0.0.1:${(up.address() as AddressInfo).port}"}]}]
`,
  });
  const port = await gw.proxyPort();
  // ten requests on ten connections, which the kernel spreads over both workers
  const answers: number[] = [];
  const sockets: net.Socket[] = [];
  t.after(() => {
    for (const s of sockets) s.destroy();
  });
  for (let i = 0; i < 10; i++) {
    const sock = net.connect(port, '127.0.0.1', () =>
      sock.write('GET /held HTTP/1.1\r\nhost: gw.test\r\n\r\n'),
    );
    sock.on('error', () => {});
    sock.once('data', (c: Buffer) => answers.push(Number(/^HTTP\/1\.1 (\d+)/.exec(c.toString())?.[1])));
    sockets.push(sock);
  }
  const end = Date.now() + 10_000;
  while ((answers.length < 7 || held.length < 3) && Date.now() < end)
    await new Promise((r) => setTimeout(r, 20));
  assert.equal(held.length, 3, `${held.length} requests reached the upstream`);
  assert.deepEqual(answers, [503, 503, 503, 503, 503, 503, 503]);
  const warned = await gw.waitForLine((l) => l.includes('request limit reached') && l.includes('"limit":3'));
  assert.ok(warned, 'the refusals are logged');
});
