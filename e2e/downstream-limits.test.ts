// The connection cap of a bind holds for the whole proxy, not per worker thread: bin/gw with two
// workers sharing the port admits exactly maxConnections connections and logs why it refuses more.
import assert from 'node:assert/strict';
import net from 'node:net';
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
