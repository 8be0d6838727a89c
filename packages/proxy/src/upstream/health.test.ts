// Passive health (the backend policy `health`), against real upstreams: an endpoint that starts
// failing is ejected and traffic moves to the healthy one; it returns after the backoff; Retry-After
// sets the ejection time; with every endpoint ejected requests still go out (panic mode); metrics,
// /config_dump and the trace show it. Active health (health.active, gw's): probes take an endpoint
// out and bring it back, upstreams go down and come back, one prober per proxy across two workers.
import assert from 'node:assert/strict';
import http from 'node:http';
import type net from 'node:net';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConfigDump } from '@gw/api';
import { CLOSED_PORT, freePort } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { startUpstream } from '@gw/testkit/upstream';
import pino from 'pino';
import { request } from 'undici';
import { configDump, workerHealth } from '../admin/config-dump.ts';
import { loadConfigText } from '../config/load.ts';
import { sharedMemoryOf } from '../policies/shared-memory.ts';
import { Supervisor } from '../server/supervisor.ts';
import { EndpointHealth, ejectionRule, retryAfterMs } from './health.ts';

const cleanup: (() => Promise<unknown>)[] = [];
after(async () => {
  for (const c of cleanup.reverse()) await c();
});

/** An upstream whose answer the test sets: a status and headers. */
async function switchable(name: string): Promise<{ port: number; answer: [number, Record<string, string>] }> {
  const out = { port: 0, answer: [200, {}] as [number, Record<string, string>] };
  const s = await startUpstream(name, (_req, res) => {
    const [status, headers] = out.answer;
    res.writeHead(status, { ...headers, 'x-upstream': name, 'content-length': 0 });
    res.end();
  });
  cleanup.push(() => s.close());
  out.port = s.port;
  return out;
}

function config(ports: number[], health: string): string {
  return `binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - backends:
${ports.map((p) => `      - host: "127.0.0.1:${p}"\n        policies: {health: ${health}}`).join('\n')}
`;
}

async function proxy(yaml: string): Promise<TestProxy> {
  const p = await startProxy(yaml);
  cleanup.push(() => p.close());
  return p;
}

async function hits(p: TestProxy, n: number): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (let i = 0; i < n; i++) {
    const r = await fetch(p.url('/'));
    await r.arrayBuffer();
    const who = `${r.headers.get('x-upstream') ?? 'none'} ${r.status}`;
    out[who] = (out[who] ?? 0) + 1;
  }
  return out;
}

test('consecutive 5xx eject an endpoint; traffic moves to the healthy one; it returns after the backoff', async () => {
  const a = await switchable('a');
  const b = await switchable('b');
  const p = await proxy(config([a.port, b.port], '{eviction: {consecutiveFailures: 3, duration: 5s}}'));

  a.answer = [500, {}];
  // Until three 500s in a row came from a, some requests see them; after that, none.
  let seen500 = 0;
  for (let i = 0; i < 200 && seen500 < 3; i++) seen500 += (await hits(p, 1))['a 500'] ?? 0;
  assert.equal(seen500, 3);
  assert.deepEqual(await hits(p, 30), { 'b 200': 30 }, 'a is out of the balancing set');

  const [ha] = p.plane.endpointHealth();
  assert.equal(ha?.endpoint, `127.0.0.1:${a.port}`);
  assert.equal(ha?.healthy, false);
  assert.equal(ha?.lastEjection, 'status 500');
  const metrics = await p.metrics.registry.metrics();
  assert.match(
    metrics,
    new RegExp(`gw_endpoint_healthy\\{backend="[^"]+",endpoint="127.0.0.1:${a.port}"\\} 0`),
  );
  assert.match(
    metrics,
    new RegExp(`gw_endpoint_healthy\\{backend="[^"]+",endpoint="127.0.0.1:${b.port}"\\} 1`),
  );
  assert.match(metrics, new RegExp(`gw_endpoint_ejections_total\\{[^}]*${a.port}"\\} 1`));

  // The trace says which endpoint was picked and that the ejected one was skipped.
  const tracing = p.trace();
  await hits(p, 1);
  const pick = (await tracing).find((e) => e.message.type === 'endpointSelection');
  assert.equal(pick?.message.reason, 'ejected skipped');
  assert.deepEqual(pick?.message.ejected, [ha?.backend]);

  a.answer = [200, {}];
  await sleep(Date.parse(p.plane.endpointHealth()[0]?.ejectedUntil ?? '') - Date.now() + 50);
  const back = await hits(p, 40);
  assert.ok((back['a 200'] ?? 0) > 0, `a is back: ${JSON.stringify(back)}`);
  assert.equal(p.plane.endpointHealth()[0]?.healthy, true);
});

test('a connection failure counts; a success in between resets the count', async () => {
  const b = await switchable('b');
  // A port nothing listens on: every attempt is refused.
  const deadPort = CLOSED_PORT;
  const p = await proxy(config([deadPort, b.port], '{eviction: {consecutiveFailures: 2, duration: 10s}}'));
  let refused = 0;
  for (let i = 0; i < 200 && refused < 2; i++) refused += (await hits(p, 1))['none 503'] ?? 0;
  assert.equal(refused, 2);
  assert.deepEqual(await hits(p, 20), { 'b 200': 20 });
  assert.equal(p.plane.endpointHealth()[0]?.lastEjection, 'GW_ERR_UPSTREAM_CONNECT');

  const h = new EndpointHealth('x', 'x:1', ejectionRule({ consecutiveFailures: 3 }), 1000);
  h.fail(0, 'status 500');
  h.fail(0, 'status 500');
  h.succeed(0);
  h.fail(0, 'status 500');
  assert.ok(h.available(1), 'two failures, a success, one failure: still in');
});

test('healthThreshold: an average of recent answers ejects an endpoint that fails every other request', async () => {
  const b = await switchable('b');
  let answered = 0;
  const flapping = await startUpstream('a', (_req, res) => {
    // 500, 200, 500, 200, …: never two failures in a row
    res.writeHead(answered++ % 2 === 0 ? 500 : 200, { 'x-upstream': 'a', 'content-length': 0 });
    res.end();
  });
  cleanup.push(() => flapping.close());
  const p = await proxy(
    config(
      [flapping.port, b.port],
      '{eviction: {healthThreshold: 0.5, consecutiveFailures: 2, duration: 30s}}',
    ),
  );
  // the score after each of a's answers: 0.7, 0.79, 0.553, 0.687, 0.481 (below 0.5: out)
  for (let i = 0; i < 200 && answered < 5; i++) await hits(p, 1);
  assert.equal(answered, 5);
  assert.deepEqual(await hits(p, 20), { 'b 200': 20 }, 'a is out of the balancing set');
  const [ha] = p.plane.endpointHealth();
  assert.equal(ha?.healthy, false);
  assert.equal(ha?.healthScore, 0.481);
  assert.equal(ha?.lastEjection, 'status 500, health 0.48 below 0.5');
  assert.equal(answered, 5);
});

test('eviction rules: neither set, one failure; both set, either; restoreHealth on return', () => {
  const one = new EndpointHealth('x', 'x:1', ejectionRule({}), 1000);
  one.fail(0, 's');
  assert.ok(!one.available(1), 'neither consecutiveFailures nor healthThreshold: one failure ejects');

  // healthThreshold alone: failures in a row do not count, only the score
  const scored = new EndpointHealth('x', 'x:1', ejectionRule({ healthThreshold: 0.3 }), 1000);
  for (let i = 0; i < 3; i++) scored.fail(0, 's');
  assert.ok(scored.available(1), `three failures leave ${scored.score.toFixed(3)}, not below 0.3`);
  scored.fail(0, 's');
  assert.ok(!scored.available(1), `the fourth leaves ${scored.score.toFixed(3)}`);

  // without restoreHealth the endpoint comes back with the score it left with: one failure ejects again
  scored.fail(1000, 's');
  assert.ok(!scored.available(1001));
  const restored = new EndpointHealth(
    'x',
    'x:1',
    ejectionRule({ healthThreshold: 0.3, restoreHealth: 1 }),
    1000,
  );
  for (let i = 0; i < 4; i++) restored.fail(0, 's');
  assert.ok(!restored.available(1));
  restored.fail(1000, 's');
  assert.ok(restored.available(1001), 'back at 1.0: one failure leaves 0.7');
  assert.equal(restored.score, 0.7);

  // consecutiveFailures 0 is unset
  const zero = new EndpointHealth('x', 'x:1', ejectionRule({ consecutiveFailures: 0 }), 1000);
  zero.fail(0, 's');
  assert.ok(!zero.available(1));
});

test('Retry-After on a 503 or 429 ejects at once for that time', async () => {
  const a = await switchable('a');
  const b = await switchable('b');
  const p = await proxy(config([a.port, b.port], '{eviction: {consecutiveFailures: 5, duration: 100ms}}'));
  a.answer = [429, { 'retry-after': '5' }];
  let limited = 0;
  for (let i = 0; i < 200 && limited < 1; i++) limited += (await hits(p, 1))['a 429'] ?? 0;
  a.answer = [200, {}];
  const [ha] = p.plane.endpointHealth();
  assert.equal(ha?.lastEjection, '429 Retry-After');
  const until = Date.parse(ha?.ejectedUntil ?? '');
  assert.ok(until - Date.now() > 3500, 'ejected for about five seconds, not the 100ms duration');
  assert.deepEqual(await hits(p, 20), { 'b 200': 20 });
  await sleep(until - Date.now() + 50);
  assert.ok(((await hits(p, 40))['a 200'] ?? 0) > 0, 'a is back after Retry-After');

  const now = Date.parse('2026-01-01T00:00:00Z');
  assert.equal(retryAfterMs('120', now), 120_000);
  assert.equal(retryAfterMs('Thu, 01 Jan 2026 00:00:30 GMT', now), 30_000);
  assert.equal(retryAfterMs('soon', now), undefined);
});

test('with every endpoint ejected, requests still go to them (panic mode) and the trace says so', async () => {
  const a = await switchable('a');
  const b = await switchable('b');
  const p = await proxy(config([a.port, b.port], '{eviction: {duration: 10s}}'));
  a.answer = [502, {}];
  b.answer = [502, {}];
  await hits(p, 20);
  assert.deepEqual(
    p.plane.endpointHealth().map((h) => h.healthy),
    [false, false],
  );
  a.answer = [200, {}];
  const tracing = p.trace();
  const got = await hits(p, 20);
  assert.ok((got['a 200'] ?? 0) > 0, JSON.stringify(got));
  const pick = (await tracing).find((e) => e.message.type === 'endpointSelection');
  assert.match(String(pick?.message.reason), /panic/);
  assert.equal(pick?.severity, 'warn');
});

test('backoff grows with ejections in a row, capped; it starts over after a long healthy stretch', () => {
  const h = new EndpointHealth('x', 'x:1', ejectionRule({}), 1000);
  h.fail(0, 's');
  assert.equal(h.ejectedUntil, 1000);
  h.fail(1000, 's');
  assert.equal(h.ejectedUntil, 3000);
  h.fail(3000, 's');
  assert.equal(h.ejectedUntil, 6000);
  for (let i = 0; i < 400; i++) h.fail(h.ejectedUntil, 's');
  const at = h.ejectedUntil;
  h.fail(at, 's');
  assert.equal(h.ejectedUntil - at, 300_000, 'capped at 300s');
  const later = h.ejectedUntil + 300_001;
  h.fail(later, 's');
  assert.equal(h.ejectedUntil - later, 1000);
});

test('/config_dump shows the policy and each worker’s endpoint health', async () => {
  const a = await switchable('a');
  a.answer = [500, {}];
  const yaml = config([a.port], '{eviction: {duration: 10s}}');
  const p = await proxy(yaml);
  await hits(p, 1);
  const { ir, startup } = loadConfigText('test.yaml', yaml, process.cwd());
  const supervisor = { ir, ports: {}, workers: [{ index: 0, version: ir.version }] } as unknown as Supervisor;
  const dump = configDump(supervisor, startup, undefined, [p.plane.endpointHealth()]);
  assert.deepEqual(ConfigDump.parse(dump), dump);
  assert.deepEqual(dump.backends[0]?.policies.health, { eviction: { duration: '10s' } });
  const [h] = dump.workers[0]?.endpointHealth ?? [];
  assert.equal(h?.endpoint, `127.0.0.1:${a.port}`);
  assert.equal(h?.healthy, false);
  assert.equal(h?.ejections, 1);
});

test('the standalone schema: agentgateway field names; the scores are 0.0 to 1.0', async () => {
  const bad = (h: string, field: string) =>
    assert.throws(
      () => loadConfigText('t.yaml', config([1], h), process.cwd()),
      new RegExp(`policies\\.health\\.eviction\\.${field} should be less than or equal to 1`),
    );
  bad('{eviction: {healthThreshold: 50}}', 'healthThreshold');
  bad('{eviction: {restoreHealth: 100}}', 'restoreHealth');
  assert.throws(() => loadConfigText('t.yaml', config([1], '{eviction: {consecutive: 2}}'), process.cwd()));
  const { ir } = loadConfigText(
    't.yaml',
    config([1], "{unhealthyExpression: 'response.code == 429'}"),
    process.cwd(),
  );
  assert.ok(ir);
});

test('unhealthyExpression decides what is unhealthy: here a 429 without Retry-After, and not a 500', async () => {
  const a = await switchable('a');
  const b = await switchable('b');
  const p = await proxy(
    config([a.port, b.port], "{unhealthyExpression: 'response.code == 429', eviction: {duration: 10s}}"),
  );
  a.answer = [500, {}];
  await hits(p, 20);
  assert.equal(p.plane.endpointHealth()[0]?.healthy, true, 'a 500 is not unhealthy here');
  a.answer = [429, {}];
  let limited = 0;
  for (let i = 0; i < 200 && limited < 1; i++) limited += (await hits(p, 1))['a 429'] ?? 0;
  assert.equal(p.plane.endpointHealth()[0]?.healthy, false);
  assert.deepEqual(await hits(p, 10), { 'b 200': 10 });
  await assert.rejects(p.reload(config([a.port], "{unhealthyExpression: 'response.code =='}")));
});

// ---------- health.active: probes, one prober per endpoint per proxy ----------

/** An upstream that can go down (its port closed) and come back on the same port; /healthz answers `health`. */
async function flaky(name: string) {
  const state = { health: 200, probes: 0, port: 0 };
  const server = http.createServer((req, res) => {
    if (req.url === '/healthz') {
      state.probes++;
      res.writeHead(state.health, { 'content-length': 0 });
      res.end();
      return;
    }
    res.writeHead(200, { 'x-upstream': name, 'content-length': 0 });
    res.end();
  });
  const listen = (port: number) => new Promise<void>((r) => server.listen(port, '127.0.0.1', () => r()));
  // a port nothing else can take while the server is down (listen(0) could hand it to another)
  await listen(await freePort());
  state.port = (server.address() as net.AddressInfo).port;
  const down = () =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  cleanup.push(() => (server.listening ? down() : Promise.resolve()));
  return { state, down, up: () => listen(state.port) };
}

async function until(what: string, f: () => boolean, timeoutMs = 5_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!f()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

// A probe timeout far above a busy machine's stall: the servers answer in this thread, and a healthy
// endpoint timed out twice would leave the set.
const ACTIVE =
  '{active: {path: /healthz, interval: 50ms, timeout: 2s, unhealthyThreshold: 2, healthyThreshold: 2}}';

test('active: an endpoint failing its probes leaves the balancing set and comes back after healthyThreshold passes; requests are not what decides', async () => {
  const a = await flaky('a');
  const b = await flaky('b');
  const p = await proxy(config([a.state.port, b.state.port], ACTIVE));
  await until('first probes', () => a.state.probes > 0 && b.state.probes > 0);
  assert.ok((await hits(p, 40))['a 200'], 'both serve while their probes pass');

  a.state.health = 503;
  const active = () => p.plane.endpointHealth()[0]?.active;
  await until('a unhealthy', () => active()?.state === 'unhealthy');
  assert.deepEqual(await hits(p, 30), { 'b 200': 30 }, 'a is out of the balancing set');
  const [ha] = p.plane.endpointHealth();
  assert.equal(ha?.healthy, false);
  assert.equal(ha?.ejectedUntil, null, 'not ejected: failing its probes');
  assert.equal(ha?.active?.lastResult, 'status 503');
  assert.ok((ha?.active?.consecutiveFailures ?? 0) >= 2);

  const metrics = await p.metrics.registry.metrics();
  assert.match(
    metrics,
    new RegExp(`gw_endpoint_healthy\\{backend="[^"]+",endpoint="127.0.0.1:${a.state.port}"\\} 0`),
  );
  const fails = new RegExp(
    `gw_endpoint_health_checks_total\\{backend="[^"]+",endpoint="127.0.0.1:${a.state.port}",result="fail"\\} (\\d+)`,
  ).exec(metrics);
  assert.ok(Number(fails?.[1]) >= 2, metrics);

  const tracing = p.trace();
  await hits(p, 1);
  const pick = (await tracing).find((e) => e.message.type === 'endpointSelection');
  assert.equal(pick?.message.reason, 'failing health checks skipped');
  assert.deepEqual(pick?.message.unhealthy, [ha?.backend]);
  assert.equal(pick?.message.endpoint, `127.0.0.1:${b.state.port}`);

  // one passed probe is not enough (healthyThreshold 2): count the passes as they come
  a.state.health = 200;
  await until('a healthy again', () => active()?.state === 'healthy');
  assert.ok((active()?.consecutivePasses ?? 0) >= 2);
  await until('a serves again', () => p.plane.endpointHealth()[0]?.healthy === true);
  assert.ok(((await hits(p, 40))['a 200'] ?? 0) > 0, 'a is back');
});

test('active: an upstream that goes down (port closed) and comes back on the same port', async () => {
  const a = await flaky('a');
  const b = await flaky('b');
  const p = await proxy(config([a.state.port, b.state.port], ACTIVE));
  await until('first probes', () => a.state.probes > 0);
  await a.down();
  const active = () => p.plane.endpointHealth()[0]?.active;
  await until('a unhealthy', () => active()?.state === 'unhealthy');
  assert.equal(active()?.lastResult, 'connection refused or unreachable');
  assert.deepEqual(await hits(p, 20), { 'b 200': 20 }, 'no request is sent to the closed port');
  await a.up();
  await until('a back', () => active()?.state === 'healthy');
  assert.ok(((await hits(p, 40))['a 200'] ?? 0) > 0);
});

test('active: a probe without an answer in `timeout` fails; expectedStatuses decides what passes', async () => {
  const a = await flaky('a');
  const b = await flaky('b');
  // a answers /healthz with 200, which expectedStatuses [204] does not take
  const p = await proxy(
    config(
      [a.state.port, b.state.port],
      '{active: {path: /healthz, interval: 50ms, timeout: 2s, unhealthyThreshold: 1, expectedStatuses: [200, 204]}}',
    ),
  );
  await until('probes', () => a.state.probes > 1);
  assert.equal(p.plane.endpointHealth()[0]?.active?.state, 'healthy');
  await p.reload(
    config(
      [a.state.port, b.state.port],
      '{active: {path: /healthz, interval: 50ms, timeout: 2s, unhealthyThreshold: 1, expectedStatuses: [204]}}',
    ),
  );
  await until('200 is not expected', () => p.plane.endpointHealth()[0]?.active?.lastResult === 'status 200');
  assert.equal(p.plane.endpointHealth()[0]?.active?.state, 'unhealthy');

  // a probe the server does not answer within a 200 ms timeout (it would after 5 s)
  const stall = await startUpstream('stall', (req) => (req.url === '/healthz' ? sleep(5_000) : undefined));
  cleanup.push(() => stall.close());
  const q = await proxy(
    config(
      [stall.port, b.state.port],
      '{active: {path: /healthz, interval: 50ms, timeout: 200ms, unhealthyThreshold: 2, healthyThreshold: 2}}',
    ),
  );
  await until('timed out', () => q.plane.endpointHealth()[0]?.active?.state === 'unhealthy');
  assert.equal(q.plane.endpointHealth()[0]?.active?.lastResult, 'timeout');
});

test('active alone has no passive checks: 5xx answers to requests eject nothing; with eviction both apply', async () => {
  const a = await switchable('a');
  const b = await switchable('b');
  a.answer = [500, {}];
  const p = await proxy(config([a.port, b.port], '{active: {interval: 1h}}'));
  const got = await hits(p, 30);
  assert.ok((got['a 500'] ?? 0) > 3, `a keeps getting requests: ${JSON.stringify(got)}`);
  assert.equal(p.plane.endpointHealth()[0]?.ejections, 0);
  const q = await proxy(config([a.port, b.port], '{active: {interval: 1h}, eviction: {duration: 10s}}'));
  await hits(q, 20);
  const [h] = q.plane.endpointHealth();
  assert.equal(h?.healthy, false);
  assert.notEqual(h?.ejectedUntil, null, 'ejected by the passive check');
  assert.equal(h?.active?.state, 'unknown', 'one failed probe of the 3 that would take it out');
});

test('active: one prober per endpoint per proxy, whatever the workers; every worker skips the endpoint', async (t) => {
  const a = await flaky('a');
  const b = await flaky('b');
  const sup = new Supervisor({
    workers: 2,
    logFilter: 'error',
    logFormat: 'json',
    log: pino({ level: 'silent' }),
  });
  t.after(() => sup.stop(1000));
  const yaml = config(
    [a.state.port, b.state.port],
    '{active: {path: /healthz, interval: 100ms, timeout: 2s, unhealthyThreshold: 2}}',
  );
  const ir = loadConfigText('test.yaml', yaml, process.cwd()).ir;
  await sup.apply(ir, sharedMemoryOf(ir));
  const port = Object.values(sup.ports)[0] as number;
  const before = a.state.probes;
  await sleep(1_500);
  const probes = a.state.probes - before;
  // 100ms apart: about 15 in 1.5s from one prober (fewer on a busy machine), about 30 from two
  assert.ok(probes >= 3 && probes <= 20, `${probes} probes of a in 1.5s`);

  a.state.health = 500;
  const workerActive = async () => (await workerHealth(sup)).map((w) => w?.[0]?.active?.state);
  const end = Date.now() + 5_000;
  while ((await workerActive()).some((s) => s !== 'unhealthy') && Date.now() < end) await sleep(50);
  assert.deepEqual(
    await workerActive(),
    ['unhealthy', 'unhealthy'],
    'both workers see the one prober’s verdict',
  );
  // new connections spread over both workers: none goes to a
  const seen: Record<string, number> = {};
  for (let i = 0; i < 30; i++) {
    const r = await request(`http://127.0.0.1:${port}/`, { reset: true });
    await r.body.dump();
    const who = String(r.headers['x-upstream']);
    seen[who] = (seen[who] ?? 0) + 1;
  }
  assert.deepEqual(seen, { b: 30 });
  const dump = configDump(
    sup,
    loadConfigText('test.yaml', yaml, process.cwd()).startup,
    undefined,
    await workerHealth(sup),
  );
  assert.deepEqual(ConfigDump.parse(dump), dump);
  assert.equal(dump.workers.length, 2);
  for (const w of dump.workers) assert.equal(w.endpointHealth?.[0]?.active?.state, 'unhealthy');
});

test('active: the config names what it refuses', () => {
  const load = (backend: string, health: string) =>
    loadConfigText(
      't.yaml',
      `binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - backends:
      - ${backend}
        policies: {health: ${health}}
`,
      process.cwd(),
    );
  assert.throws(
    () => load('dynamic: {}', '{active: {}}'),
    /health\.active: health\.active probes the one endpoint of a host, a2a or unix backend, not a dynamic forward proxy/,
  );
  assert.throws(
    () => load('host: 127.0.0.1:1', '{active: {interval: 0s}}'),
    /health\.active\.interval: interval must be more than 0/,
  );
  assert.throws(() => load('host: 127.0.0.1:1', '{active: {path: healthz}}'), /path must start with \//);
  assert.throws(() => load('host: 127.0.0.1:1', '{active: {unhealthyThreshold: 0}}'), /unhealthyThreshold/);
  assert.ok(load('host: 127.0.0.1:1', '{active: {}}').ir);
});
