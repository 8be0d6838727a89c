// The admin, stats and readiness servers of the real `bin/gw`, and its JSON access log: one gw
// (two workers) serves every test in this file.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { makeTestPki, startUpstream, type TestPki, type TestServer } from '@gw/testkit';
import { Profile } from 'pprof-format';
import { Client } from 'undici';
import { cleanupGw, configBlock, GW_BIN, type GwProcess, sleep, startGw } from './support/gw-process.ts';

const run = promisify(execFile);

let pki: TestPki;
let upstream: TestServer;
let g: GwProcess;
let port: number;

before(async () => {
  pki = await makeTestPki(['secure.test']);
  upstream = await startUpstream('echo', async (req) => {
    if (req.url?.startsWith('/slow')) await sleep(1500);
  });
  const server = pki.servers['secure.test'];
  assert.ok(server);
  g = await startGw({
    args: ['--workers', '2'],
    yaml: `${configBlock('logging: { level: info, format: json }')}frontendPolicies:
  accessLog:
    filter: 'request.path != "/quiet"'
    add:
      ua: 'request.headers["user-agent"]'
    remove: [src.addr]
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - gatewayName: admin-e2e
    name: plain
    routes:
    - name: up
      matches: [{ path: { pathPrefix: / } }]
      backends: [{ host: 127.0.0.1:${upstream.port} }]
    - name: quiet
      matches: [{ path: { exact: /quiet } }]
      policies:
        directResponse: { status: 200, body: "shh\\n" }
    - name: mtls
      matches: [{ path: { pathPrefix: /mtls } }]
      backends:
      - host: 127.0.0.1:9
        policies:
          backendTLS:
            cert: { file: ${JSON.stringify(pki.client.certFile)} }
            key: { file: ${JSON.stringify(pki.client.keyFile)} }
            root: { file: ${JSON.stringify(pki.caFile)} }
- port: 0
  address: 127.0.0.1
  listeners:
  - gatewayName: admin-e2e
    name: secure
    protocol: HTTPS
    tls:
      cert: { file: ${JSON.stringify(server.certFile)} }
      key: { file: ${JSON.stringify(server.keyFile)} }
    routes:
    - name: secure-hello
      policies:
        directResponse: { status: 200, body: "secure\\n" }
`,
  });
  port = await g.proxyPort(0);
});

after(async () => {
  await cleanupGw();
  await upstream?.close();
  await pki?.cleanup();
});

/** One request on a new connection, so the two workers share the work. */
function get(path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** JSON lines of gw's stdout that are access log records. */
function accessLines(): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const l of g.stdout) {
    if (!l.startsWith('{')) continue;
    const o = JSON.parse(l) as Record<string, unknown>;
    if (o.module === 'request') out.push(o);
  }
  return out;
}

async function waitFor<T>(
  what: string,
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 5000,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

const admin = (path: string, init?: RequestInit) => fetch(`${g.admin}${path}`, init);

describe('admin /config_dump', () => {
  test('shows binds, listeners, routes, backends and policies', async () => {
    const res = await admin('/config_dump');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /application\/json/);
    const d = JSON.parse(await res.text());
    assert.match(d.version, /^[0-9a-f]{16}$/);
    assert.equal(d.source, g.file);
    assert.equal(d.binds.length, 2);
    assert.deepEqual(
      d.binds.map((b: { protocol: string; port: number }) => [b.protocol, b.port > 0]),
      [
        ['HTTP', true],
        ['HTTPS', true],
      ],
    );
    assert.deepEqual(
      d.binds[0].listeners.map((l: { name: string; routes: string[] }) => [l.name, l.routes]),
      [['plain', ['admin-e2e/plain/up', 'admin-e2e/plain/quiet', 'admin-e2e/plain/mtls']]],
    );
    assert.deepEqual(
      d.routes.map((r: { key: string }) => r.key),
      [
        'admin-e2e/plain/up',
        'admin-e2e/plain/quiet',
        'admin-e2e/plain/mtls',
        'admin-e2e/secure/secure-hello',
      ],
    );
    assert.deepEqual(
      d.backends.map((b: { name: string }) => b.name).sort(),
      ['127.0.0.1:9', `127.0.0.1:${upstream.port}`].sort(),
    );
    assert.ok(
      d.policies.some(
        (p: { target: { route: string }; policy: Record<string, unknown> }) =>
          p.target.route === 'admin-e2e/plain/quiet' && 'directResponse' in p.policy,
      ),
    );
    assert.deepEqual(
      d.workers.map((w: { version: string }) => w.version),
      [d.version, d.version],
    );
    assert.deepEqual(d.workloads, []);
    assert.deepEqual(d.services, []);
    assert.equal(d.frontendPolicies.accessLog.filter, 'request.path != "/quiet"');
  });

  test('private keys never appear: listener TLS and backendTLS keys show as [redacted]', async () => {
    const text = await (await admin('/config_dump')).text();
    assert.doesNotMatch(text, /PRIVATE KEY/);
    // Not even the key material without its PEM armour.
    for (const pem of [pki.client.key, pki.servers['secure.test']?.key ?? '']) {
      const body = pem.split('\n').filter((l) => l && !l.startsWith('-----'))[0] ?? '';
      assert.ok(body.length > 20);
      assert.ok(!text.includes(body), 'key material leaked into the dump');
    }
    const d = JSON.parse(text);
    assert.equal(d.binds[1].listeners[0].tls.key, '[redacted]');
    const mtls = d.backends.find((b: { name: string }) => b.name === '127.0.0.1:9');
    assert.equal(mtls.policies.backendTLS.key, '[redacted]');
    // What is not secret is still shown.
    assert.match(mtls.policies.backendTLS.cert, /BEGIN CERTIFICATE/);
  });
});

describe('access log (logging.format json, frontendPolicies.accessLog)', () => {
  test('one JSON line per request with status, route and added fields; filtered and removed ones absent', async (t) => {
    const ua = `e2e-${process.pid}-${Date.now()}`;
    // The filtered request and a logged marker go on one keep-alive connection, so one worker serves
    // both and writes their lines in order: once the marker's line is here, a /quiet line would be too.
    const conn = new Client(`http://127.0.0.1:${port}`);
    t.after(() => conn.close());
    const onConn = async (path: string) => {
      const r = await conn.request({ path, method: 'GET', headers: { 'user-agent': ua } });
      await r.body.text();
      return r.statusCode;
    };
    assert.equal(await onConn('/quiet'), 200);
    assert.equal(await onConn('/marker'), 200);
    const paths = ['/a', '/b?x=1', '/status/404', '/c'];
    for (const p of paths) await get(p, { 'user-agent': ua });
    const expected = [...paths, '/marker'];
    const mine = await waitFor('access log lines', () => {
      const l = accessLines().filter((o) => o.ua === ua);
      return l.length >= expected.length && l;
    });
    const all = accessLines().filter((o) => o.ua === ua);
    assert.equal(all.length, expected.length, JSON.stringify(all));
    assert.deepEqual(mine.map((o) => o['http.path']).sort(), [...expected].sort());
    for (const o of all) {
      assert.equal(o.route, 'admin-e2e/plain/up');
      assert.equal(o.gateway, 'admin-e2e');
      assert.equal(o.listener, 'plain');
      assert.equal(o['http.method'], 'GET');
      assert.equal(o['http.status'], o['http.path'] === '/status/404' ? 404 : 200);
      assert.equal(o.level, 30);
      assert.ok(!('src.addr' in o), 'src.addr was removed by accessLog.remove');
      assert.equal(typeof o.duration, 'string');
    }
  });
});

describe('admin /logging', () => {
  test('GET states the current level', async () => {
    const res = await admin('/logging');
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'current log level is info\n');
  });

  test('POST ?level= changes it; bad levels are refused with a reason', async (t) => {
    t.after(() => admin('/logging?level=info', { method: 'POST' }));
    let res = await admin('/logging?level=debug', { method: 'POST' });
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'current log level is debug\n');
    assert.equal(await (await admin('/logging')).text(), 'current log level is debug\n');

    res = await admin('/logging?level=bogus', { method: 'POST' });
    assert.equal(res.status, 400);
    assert.match(
      await res.text(),
      /invalid log level "bogus": expected one of trace, debug, info, warn, error/,
    );
    res = await admin('/logging', { method: 'POST' });
    assert.equal(res.status, 400);
    assert.match(await res.text(), /level/);
    // A refused change leaves the level alone.
    assert.equal(await (await admin('/logging')).text(), 'current log level is debug\n');
  });

  test('per-module filters apply to the workers too: request=warn silences the access log', async (t) => {
    t.after(() => admin('/logging?level=info', { method: 'POST' }));
    const res = await admin('/logging?level=info,request=warn', { method: 'POST' });
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'current log level is info,request=warn\n');

    // Quiet and loud requests share one keep-alive connection, so one worker serves them all and writes
    // in order: once a loud line is here, any line of the quiet requests would have come before it.
    const conn = new Client(`http://127.0.0.1:${port}`);
    t.after(() => conn.close());
    const onConn = async (ua: string) => {
      const r = await conn.request({ path: '/x', method: 'GET', headers: { 'user-agent': ua } });
      await r.body.text();
    };
    const quietUa = `silenced-${Date.now()}`;
    for (let i = 0; i < 6; i++) await onConn(quietUa);

    await admin('/logging?level=info', { method: 'POST' });
    const loudUa = `loud-${Date.now()}`;
    await waitFor('access log after restoring info', async () => {
      await onConn(loudUa);
      return accessLines().some((o) => o.ua === loudUa);
    });
    assert.equal(accessLines().filter((o) => o.ua === quietUa).length, 0);
  });
});

describe('admin /memory and /debug/tasks', () => {
  test('/memory has process and per-worker heap numbers', async () => {
    const res = await admin('/memory');
    assert.equal(res.status, 200);
    const m = (await res.json()) as {
      process: NodeJS.MemoryUsage;
      workers: { worker: number; heap: { used_heap_size: number; total_heap_size: number } }[];
    };
    assert.ok(m.process.rss > 0 && m.process.heapUsed > 0);
    assert.equal(m.workers.length, 2);
    assert.deepEqual(m.workers.map((w: { worker: number }) => w.worker).sort(), [0, 1]);
    for (const w of m.workers) {
      assert.ok(w.heap.used_heap_size > 0 && w.heap.total_heap_size >= w.heap.used_heap_size);
    }
  });

  test('/debug/tasks lists the workers and their in-flight requests', async () => {
    const slow = get('/slow/task');
    type Tasks = {
      workers: { worker: number; inflight: { path: string; route: string; ageMs: number }[] }[];
    };
    let tasks: Tasks | undefined;
    const end = Date.now() + 5000;
    while (Date.now() < end) {
      const t = (await (await admin('/debug/tasks')).json()) as Tasks;
      if (t.workers.some((w) => w.inflight.some((x) => x.path === '/slow/task'))) {
        tasks = t;
        break;
      }
      await sleep(20);
    }
    assert.ok(tasks, 'the slow request never showed in /debug/tasks');
    assert.deepEqual(tasks.workers.map((w) => w.worker).sort(), [0, 1]);
    const task = tasks.workers.flatMap((w) => w.inflight).find((x) => x.path === '/slow/task');
    assert.equal(task?.route, 'admin-e2e/plain/up');
    assert.equal((await slow).status, 200);
  });
});

describe('admin /debug/pprof', () => {
  const decode = (buf: Buffer) => {
    assert.deepEqual([...buf.subarray(0, 2)], [0x1f, 0x8b], 'gzip magic');
    const p = Profile.decode(gunzipSync(buf));
    const str = (i: number | bigint) => p.stringTable.strings[Number(i)];
    return { p, types: p.sampleType.map((t) => `${str(t.type)}/${str(t.unit)}`) };
  };
  const goBin = [
    '/usr/local/go/bin/go',
    ...(process.env.PATH ?? '').split(':').map((d) => join(d, 'go')),
  ].find((f) => existsSync(f));

  async function goPprofTop(t: { diagnostic: (m: string) => void }, data: Buffer, name: string) {
    // Go is part of the set-up (the test API server is built with it), so its absence is a failure.
    assert.ok(
      goBin,
      'go not found: make kube-build needs it, and this test reads the profile with go tool pprof',
    );
    const file = join(g.dir, name);
    writeFileSync(file, data);
    const { stdout } = await run(goBin, ['tool', 'pprof', '-top', file], {
      timeout: 120_000,
      env: { ...process.env, HOME: process.env.HOME ?? g.dir },
    });
    assert.match(stdout, /flat%/);
    t.diagnostic(`go tool pprof -top ${name}: ${stdout.split('\n').length} lines`);
  }

  test('profile?seconds=1 is a gzipped pprof CPU profile with samples', { timeout: 180_000 }, async (t) => {
    // Keep the worker busy while it is profiled, so there is something to sample.
    let busy = true;
    const load = (async () => {
      while (busy) await get('/busy');
    })();
    const res = await admin('/debug/pprof/profile?seconds=1&frequency=500');
    busy = false;
    await load;
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/octet-stream');
    assert.match(res.headers.get('content-disposition') ?? '', /cpu\.pb\.gz/);
    const buf = Buffer.from(await res.arrayBuffer());
    const { p, types } = decode(buf);
    assert.ok(types.length > 0, 'sample types');
    assert.ok(
      types.some((x) => /nanoseconds/.test(x)),
      `sample types: ${types.join(', ')}`,
    );
    assert.ok(p.sample.length > 0, 'samples');
    assert.ok(p.function.length > 0, 'functions');
    t.diagnostic(`cpu profile: ${p.sample.length} samples, types ${types.join(', ')}`);
    await goPprofTop(t, buf, 'cpu.pb.gz');
  });

  test('profile parameters out of range are refused with a reason', async () => {
    const cases: [string, RegExp][] = [
      ['seconds=0', /seconds must be an integer from 1 to 300/],
      ['seconds=301', /seconds must be an integer from 1 to 300/],
      ['seconds=1.5', /seconds must be an integer from 1 to 300/],
      ['frequency=2000', /frequency must be an integer from 1 to 1000/],
      ['frequency=0', /frequency must be an integer from 1 to 1000/],
      ['seconds=1&worker=7', /worker must be 0\.\.1/],
    ];
    for (const [q, reason] of cases) {
      const res = await admin(`/debug/pprof/profile?${q}`);
      assert.equal(res.status, 400, q);
      assert.match(await res.text(), reason, q);
    }
  });

  test('heap is a gzipped pprof heap profile', { timeout: 180_000 }, async (t) => {
    for (const worker of [0, 1]) {
      const res = await admin(`/debug/pprof/heap?worker=${worker}`);
      assert.equal(res.status, 200);
      const buf = Buffer.from(await res.arrayBuffer());
      const { p, types } = decode(buf);
      assert.ok(types.includes('inuse_space/bytes'), `sample types: ${types.join(', ')}`);
      assert.ok(p.sample.length > 0, 'allocation samples');
      if (worker === 0) await goPprofTop(t, buf, 'heap.pb.gz');
    }
  });
});

describe('stats and readiness', () => {
  test('/metrics counts requests by route and status, with a duration histogram', async () => {
    for (let i = 0; i < 5; i++) assert.equal((await get('/metrics-check')).status, 200);
    assert.equal((await get('/status/404')).status, 404);
    const res = await fetch(`${g.stats}/metrics`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /text\/plain/);
    const text = await res.text();
    const requests = text
      .split('\n')
      .filter(
        (l) =>
          l.startsWith('gw_requests_total{') &&
          l.includes('route="admin-e2e/plain/up"') &&
          l.includes('status="200"'),
      );
    assert.ok(requests.length > 0, 'gw_requests_total for the route with status 200');
    const total = requests.reduce((n, l) => n + Number(l.split(' ').pop()), 0);
    assert.ok(total >= 5, `counted ${total}`);
    assert.match(text, /^gw_request_duration_seconds_bucket\{.*route="admin-e2e\/plain\/up".*\} \d+$/m);
    assert.match(text, /^gw_requests_total\{.*status="404".*\} \d+$/m);
    // Also under the Envoy-style path.
    assert.equal((await fetch(`${g.stats}/stats/prometheus`)).status, 200);
  });

  test('/metrics serves the process figures, the build, and each worker event loop and heap', async () => {
    const text = await (await fetch(`${g.stats}/metrics`)).text();
    // Well-formed exposition text: every sample's family has one TYPE line, none twice.
    const types = new Map<string, number>();
    for (const m of text.matchAll(/^# TYPE (\S+) (counter|gauge|histogram)$/gm))
      types.set(m[1] as string, (types.get(m[1] as string) ?? 0) + 1);
    for (const [name, n] of types) assert.equal(n, 1, `TYPE ${name} ${n} times`);
    for (const line of text.split('\n')) {
      if (line === '' || line.startsWith('#')) continue;
      const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$/.exec(line);
      assert.ok(m, `not a sample line: ${line}`);
      const family = (m[1] as string).replace(/_(bucket|sum|count)$/, '');
      assert.ok(types.has(m[1] as string) || types.has(family), `no TYPE for ${line}`);
      assert.ok(!Number.isNaN(Number(m[3])), `value of ${line}`);
    }
    const value = (re: RegExp) => Number(re.exec(text)?.[1] ?? Number.NaN);
    // Whole-process figures: RSS and CPU are gw's (the workers are threads of it).
    const pid = g.pid;
    const rss = value(/^process_resident_memory_bytes (\S+)$/m);
    const statusRss = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'latin1'))?.[1];
    assert.ok(Math.abs(rss / 1024 - Number(statusRss)) < 32 * 1024, `rss ${rss} against ${statusRss} kB`);
    assert.ok(value(/^process_cpu_seconds_total (\S+)$/m) > 0);
    assert.ok(value(/^process_open_fds (\S+)$/m) > 10);
    assert.ok(value(/^process_threads (\S+)$/m) >= 3, 'the main thread and two workers at least');
    const started = value(/^process_start_time_seconds (\S+)$/m);
    assert.ok(started > Date.now() / 1000 - 600 && started < Date.now() / 1000, String(started));
    const version = (await run(GW_BIN, ['--version'])).stdout;
    const build = /^gw_build_info\{version="([^"]+)",node_version="(v[^"]+)"\} 1$/m.exec(text);
    assert.ok(build && version.includes(build[1] as string), `${build?.[0]} against ${version}`);
    for (const w of ['0', '1']) {
      const busy = value(
        new RegExp(`^gw_worker_event_loop_busy_seconds_total\\{worker="${w}"\\} (\\S+)$`, 'm'),
      );
      assert.ok(busy > 0 && busy < process.uptime() + 60, `worker ${w} busy ${busy}`);
      const used = value(new RegExp(`^gw_worker_heap_bytes\\{kind="used",worker="${w}"\\} (\\S+)$`, 'm'));
      const limit = value(new RegExp(`^gw_worker_heap_bytes\\{kind="limit",worker="${w}"\\} (\\S+)$`, 'm'));
      assert.ok(used > 1024 * 1024 && used < limit, `worker ${w} heap ${used} of ${limit}`);
    }
  });

  test('readiness answers 200 while serving', async () => {
    const res = await fetch(`${g.readiness}/healthz/ready`);
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'ready\n');
  });
});
