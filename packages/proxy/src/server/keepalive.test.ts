// frontendPolicies.tcp.keepalives: the kernel arms a keepalive timer on each client connection, on
// HTTP and TCP binds alike; without it, none. `ss` (iproute2) reads the timer off the socket.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startUpstream, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';

const hasSs = spawnSync('ss', ['-V']).status === 0;

let up: TestServer;
let withKa: TestProxy;
let without: TestProxy;
before(async () => {
  up = await startUpstream('echo');
  const binds = `binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes: [{backends: [{host: "127.0.0.1:${up.port}"}]}]
- port: 0
  address: 127.0.0.1
  listeners:
  - protocol: TCP
    tcpRoutes: [{backends: [{host: "127.0.0.1:${up.port}"}]}]
`;
  withKa = await startProxy(
    `frontendPolicies:\n  tcp:\n    keepalives: {time: 7s, interval: 3s, retries: 4}\n${binds}`,
  );
  without = await startProxy(binds);
});
after(async () => {
  await withKa?.close();
  await without?.close();
  await up?.close();
});

/** The gw side's timer of an open client connection to `port`, as ss shows it (e.g. `keepalive,6.9sec,0`). */
async function timerOf(port: number): Promise<string> {
  const s = net.connect(port, '127.0.0.1');
  await new Promise((resolve) => s.once('connect', resolve));
  try {
    const local = s.localPort;
    let line = '';
    // the accept (and the setsockopt after it) may trail the client's connect a little
    for (let i = 0; i < 50 && !line.includes('timer:'); i++) {
      if (i > 0) await sleep(20);
      line = execFileSync(
        'ss',
        ['-tnoH', 'state', 'established', `( sport = :${port} and dport = :${local} )`],
        {
          encoding: 'utf8',
        },
      );
      if (line.trim() && !line.includes('timer:') && i > 10) break;
    }
    return /timer:\(([^)]*)\)/.exec(line)?.[1] ?? '';
  } finally {
    s.destroy();
  }
}

test('keepalives: the timer is armed with `time` on HTTP and TCP binds; without the policy there is none', {
  skip: !hasSs && 'ss (iproute2) is not installed',
}, async () => {
  for (const bind of [0, 1]) {
    const t = await timerOf(withKa.port(bind));
    // iproute2 prints the time left as seconds, whatever unit it writes after them (6.976ms here)
    const m = /^keepalive,([0-9.]+)(?:ms|sec),/.exec(t);
    assert.ok(m, `bind ${bind}: ${t}`);
    const secs = Number(m[1]);
    assert.ok(secs > 5 && secs <= 7, `bind ${bind}: ${t}`);
    assert.equal(await timerOf(without.port(bind)), '', `bind ${bind} without keepalives`);
  }
});
