// frontendPolicies.http.http2KeepaliveInterval/Timeout: gw PINGs each HTTP/2 client connection every
// interval; a client that answers (node's http2 client acks PINGs itself) keeps its connection, and
// requests on it still work; a peer that never answers (a raw h2c connection that sent its preface
// and went silent) is closed once a PING has waited the timeout. Without the setting, no PINGs.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startUpstream, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';

let up: TestServer;
let pinging: TestProxy;
let quiet: TestProxy;

before(async () => {
  up = await startUpstream('echo');
  const binds = `binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes: [{backends: [{host: "127.0.0.1:${up.port}"}]}]
`;
  pinging = await startProxy(
    `frontendPolicies:\n  http:\n    http2KeepaliveInterval: 100ms\n    http2KeepaliveTimeout: 1s\n${binds}`,
  );
  quiet = await startProxy(binds);
});

after(async () => {
  await pinging?.close();
  await quiet?.close();
  await up?.close();
});

/** An h2c session to `proxy`, counting the PINGs it receives, for `ms`; then a request on it. */
async function session(proxy: TestProxy, ms: number): Promise<{ pings: number; status: number | undefined }> {
  const client = http2.connect(`http://127.0.0.1:${proxy.port()}`);
  let pings = 0;
  client.on('ping', () => pings++);
  await new Promise((resolve) => client.once('connect', resolve));
  await sleep(ms);
  const req = client.request({ ':path': '/' });
  const status = await new Promise<number | undefined>((resolve, reject) => {
    req.once('response', (h) => resolve(h[':status'] as number));
    req.once('error', reject);
  });
  req.resume();
  client.close();
  return { pings, status };
}

test('a client that answers gets a PING every interval and keeps its connection', async () => {
  const r = await session(pinging, 550);
  assert.ok(r.pings >= 2 && r.pings <= 8, `pings: ${r.pings}`);
  assert.equal(r.status, 200);
});

test('without the setting, no PINGs', async () => {
  const r = await session(quiet, 350);
  assert.equal(r.pings, 0);
  assert.equal(r.status, 200);
});

/** A raw h2c peer: the preface and an empty SETTINGS frame, then silence; resolves when gw closes it. */
async function silentPeer(
  port: number,
  waitMs: number,
): Promise<{ closedAfterMs: number | undefined; pinged: boolean }> {
  const s = net.connect(port, '127.0.0.1');
  await new Promise((resolve) => s.once('connect', resolve));
  const start = performance.now();
  let pinged = false;
  let seen = Buffer.alloc(0);
  s.on('data', (d: Buffer) => {
    seen = Buffer.concat([seen, d]);
    // frames: 3-byte length, type (6 = PING), flags, stream id
    for (let at = 0; at + 9 <= seen.length; at += 9 + seen.readUIntBE(at, 3))
      if (seen[at + 3] === 6) pinged = true;
  });
  s.write(
    Buffer.concat([
      Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'),
      Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]),
    ]),
  );
  const closed = await Promise.race([
    new Promise<number>((resolve) => s.once('close', () => resolve(performance.now() - start))),
    sleep(waitMs).then(() => undefined),
  ]);
  s.destroy();
  return { closedAfterMs: closed, pinged };
}

test('a peer that never answers a PING is closed after the timeout', async () => {
  const r = await silentPeer(pinging.port(), 4_000);
  assert.ok(r.pinged, 'gw sent a PING');
  // the first PING at 100 ms, closed when it has waited 1 s (a timeout far above a busy machine's
  // stall, so that a client that does answer is never cut in the test above)
  assert.ok(
    r.closedAfterMs !== undefined && r.closedAfterMs >= 1_050 && r.closedAfterMs < 3_500,
    String(r.closedAfterMs),
  );
  // without keepalive the same peer is still connected a second later
  const q = await silentPeer(quiet.port(), 1_000);
  assert.equal(q.closedAfterMs, undefined);
  assert.equal(q.pinged, false);
});
