// freePort: ports a test can bind later, which neither this process nor another test process is handed
// twice, and which no listen(0) on the machine can take in the meantime.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { freePort } from './http-client.ts';

const ephemeralLow = Number(
  readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0],
);

test('ports asked for at once are distinct, bindable, and below the ephemeral range', async () => {
  const ports = await Promise.all(Array.from({ length: 20 }, () => freePort()));
  assert.equal(new Set(ports).size, 20, ports.join(','));
  for (const p of ports) assert.ok(p >= 20_000 && p < ephemeralLow, `${p}`);
  const servers = await Promise.all(
    ports.map(
      (p) =>
        new Promise<net.Server>((resolve, reject) => {
          const s = net.createServer();
          s.once('error', reject);
          s.listen(p, '127.0.0.1', () => resolve(s));
        }),
    ),
  );
  for (const s of servers) s.close();
});

test('a port held by another live test process is not handed out here', async () => {
  // another process takes 300 ports and reports them while it still runs (its reservations stand
  // until it exits): none of ours may be among them
  const script = `import { freePort } from ${JSON.stringify(new URL('./http-client.ts', import.meta.url).href)};
const ps = []; for (let i = 0; i < 300; i++) ps.push(await freePort());
process.stdout.write(ps.join(','));
await new Promise((r) => process.stdin.once('data', r));`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const theirs = await new Promise<Set<number>>((resolve) => {
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c;
      if (out.split(',').length === 300) resolve(new Set(out.split(',').map(Number)));
    });
  });
  try {
    const ours = await Promise.all(Array.from({ length: 300 }, () => freePort()));
    assert.deepEqual(
      ours.filter((p) => theirs.has(p)),
      [],
    );
  } finally {
    child.stdin.end('done\n');
    await new Promise((r) => child.once('exit', r));
  }
  // once it has exited its reservations are gone
  const left = [...theirs].filter((p) => existsSync(join(tmpdir(), 'gw-test-ports', String(p))));
  assert.deepEqual(left, []);
});
