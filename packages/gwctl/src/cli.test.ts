// gwctl's entry point as a user runs it: a reader that closes the pipe early (`| head`) ends gwctl
// quietly, with exit 0 and no stack trace, whichever command was writing.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import { after, test } from 'node:test';
import type { ConfigDump } from '@gw/api/admin/config-dump';
import type { TraceEvent } from '@gw/api/admin/trace-event';
import { tempDir } from '@gw/testkit/temp-dir';

const gwctl = join(import.meta.dirname, '..', '..', '..', 'bin', 'gwctl');

/** Runs gwctl, reads its first chunk of stdout, then closes the pipe as `head -c` would. */
async function runClosedEarly(args: string[]) {
  const child = spawn(gwctl, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (c: string) => {
    stderr += c;
  });
  const closed = once(child, 'close') as Promise<[number | null, NodeJS.Signals | null]>;
  const [first] = (await once(child.stdout, 'data')) as [Buffer];
  child.stdout.destroy();
  const [code, signal] = await closed;
  clearTimeout(timer);
  return { first: first.toString(), code, signal, stderr };
}

// An admin interface whose trace never finishes: gwctl keeps printing events until it cannot.
const event: TraceEvent = {
  eventStart: null,
  eventEnd: 1,
  severity: 'info',
  message: { type: 'note', text: 'x'.repeat(200) },
};
const sockets = new Set<Socket>();
const admin = http.createServer((req, res) => {
  if (req.url !== '/debug/trace') {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.write(': armed\n\n');
  const timer = setInterval(() => res.write(`data: ${JSON.stringify(event)}\n\n`), 1);
  res.on('close', () => clearInterval(timer));
});
admin.on('connection', (s) => {
  sockets.add(s);
  s.on('close', () => sockets.delete(s));
});
admin.listen(0, '127.0.0.1');
await once(admin, 'listening');
const adminPort = (admin.address() as AddressInfo).port;
after(() => {
  for (const s of sockets) s.destroy();
  admin.close();
});

test('proxy trace --raw piped to a reader that stops early exits 0 without a stack trace', async () => {
  const r = await runClosedEarly(['proxy', 'trace', '--raw', '-p', String(adminPort)]);
  assert.match(r.first, /^\{"eventStart":null/);
  // The armed line may or may not come out before the reader goes away; nothing else may.
  assert.match(r.stderr, /^(gwctl: tracing armed; waiting for the next request\n)?$/);
  assert.deepEqual({ code: r.code, signal: r.signal }, { code: 0, signal: null });
});

test('a command that writes once (proxy config all) also stops quietly when the pipe closes', async () => {
  // Far more than a pipe holds, so gwctl is still writing when the reader goes away.
  const dump: ConfigDump = {
    version: 'v1',
    source: '/etc/gw/config.yaml',
    config: {
      adminAddr: '127.0.0.1:15000',
      statsAddr: '0.0.0.0:15020',
      readinessAddr: '0.0.0.0:15021',
      workerThreads: 'auto',
      logLevel: 'info',
      logFormat: 'text',
    },
    binds: [],
    routes: Array.from({ length: 10_000 }, (_, i) => ({
      key: `default/default/route-${i}`,
      name: `route-${i}`,
      definedAt: `binds[0].listeners[0].routes[${i}]`,
      hostnames: [`host-${i}.example`],
      matches: [{}],
      backends: [{ name: `127.0.0.1:${8000 + (i % 1000)}`, weight: 1 }],
    })),
    backends: [],
    policies: [],
    workloads: [],
    services: [],
    workers: [{ index: 0, version: 'v1' }],
  };
  const file = join(tempDir('gwctl-cli-'), 'dump.json');
  writeFileSync(file, JSON.stringify(dump));
  const r = await runClosedEarly(['proxy', 'config', 'all', '--file', file, '-o', 'json']);
  assert.match(r.first, /^\{\n {2}"version": "v1"/);
  assert.equal(r.stderr, '');
  assert.deepEqual({ code: r.code, signal: r.signal }, { code: 0, signal: null });
});
