import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConfigError } from '@gw/api';
import { CLOSED_PORT, startUpstream, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { request } from 'undici';
import { loadConfigText } from '../../config/load.ts';

/** A mirror that accepts connections and then neither reads nor answers. */
async function startStalledMirror(): Promise<{ host: string; sockets: Socket[]; close(): Promise<void> }> {
  const sockets: Socket[] = [];
  const server: Server = createServer((s) => {
    s.pause();
    sockets.push(s);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return {
    host: `127.0.0.1:${port}`,
    sockets,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

async function until(what: string, ok: () => boolean, ms = 3_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

const CAP = 64 * 1024;
let up: TestServer;
let mirror: TestServer;
let stalled: Awaited<ReturnType<typeof startStalledMirror>>;
/** The two workloads of a Service: slow to answer, so that copies at once need connections of their own. */
let shadows: TestServer[];
let proxy: TestProxy;
before(async () => {
  up = await startUpstream('main');
  mirror = await startUpstream('mirror');
  shadows = await Promise.all(['shadow-a', 'shadow-b'].map((name) => startUpstream(name, () => sleep(100))));
  stalled = await startStalledMirror();
  const dead = `127.0.0.1:${CLOSED_PORT}`;
  const route = (name: string, host: string, percentage = 1) => `
    - name: ${name}
      matches: [{path: {pathPrefix: /${name}}}]
      policies:
        requestMirror: {backend: {host: "${host}"}, percentage: ${percentage}}
      backends: [{host: "127.0.0.1:${up.port}"}]`;
  proxy = await startProxy(`frontendPolicies:
  http: {maxBufferSize: ${CAP}}
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:${route('copy', `127.0.0.1:${mirror.port}`)}${route('stalled', stalled.host)}${route(
    'dead',
    dead,
  )}${route('some', `127.0.0.1:${mirror.port}`, 0.3)}${route('none', `127.0.0.1:${mirror.port}`, 0)}
    - name: named
      matches: [{path: {pathPrefix: /named}}]
      policies:
        requestMirror: {backend: {backend: shadow}, percentage: 1}
      backends: [{host: "127.0.0.1:${up.port}"}]
    - name: to-service
      matches: [{path: {pathPrefix: /to-service}}]
      policies:
        requestMirror: {backend: {service: {name: shadows/shadow, port: 80}}, percentage: 1}
      backends: [{host: "127.0.0.1:${up.port}"}]
    - name: plain
      matches: [{path: {pathPrefix: /plain}}]
      backends: [{host: "127.0.0.1:${up.port}"}]
backends:
- {name: shadow, host: "127.0.0.1:${mirror.port}"}
services:
- {name: shadow, namespace: shadows, hostname: shadow, vips: [], ports: {"80": 0}}
workloads:
${shadows.map((m, i) => `- {name: shadow-${i}, namespace: shadows, workloadIps: [127.0.0.1], services: {"shadows/shadow": {"80": ${m.port}}}}`).join('\n')}
`);
});
after(async () => {
  await proxy.close();
  await up.close();
  await mirror.close();
  await stalled.close();
  for (const m of shadows ?? []) await m.close();
});

const mirrored = (path: string) => mirror.seen.filter((s) => s.url.startsWith(path));

describe('requestMirror', () => {
  test('the mirror gets the method, path, headers and body; the client gets the backend answer', async () => {
    const res = await request(proxy.url('/copy/a?q=1'), {
      method: 'POST',
      headers: { 'x-test': 'yes', 'content-type': 'text/plain', host: 'api.example.com' },
      body: 'hello mirror',
    });
    assert.equal(res.statusCode, 200);
    const echo = (await res.body.json()) as { server: string; body: string };
    assert.equal(echo.server, 'main');
    assert.equal(echo.body, 'hello mirror');
    await until('the copy', () => mirrored('/copy/a').length === 1);
    const [copy] = mirrored('/copy/a');
    assert.equal(copy?.method, 'POST');
    assert.equal(copy?.url, '/copy/a?q=1');
    assert.equal(copy?.headers['x-test'], 'yes');
    assert.equal(copy?.headers.host, 'api.example.com');
    assert.equal(copy?.body, 'hello mirror');
  });

  test('a mirror given as a Service of services: each connection goes to the next of its workloads', async () => {
    const answers = await Promise.all(
      [0, 1, 2, 3].map(async (i) => {
        const res = await request(proxy.url(`/to-service/${i}`));
        await res.body.text();
        return res.statusCode;
      }),
    );
    assert.deepEqual(answers, [200, 200, 200, 200]);
    const copies = () => shadows.map((m) => m.seen.filter((s) => s.url.startsWith('/to-service/')).length);
    await until('the four copies', () => copies().reduce((n, c) => n + c, 0) === 4);
    const got = copies();
    assert.ok((got[0] ?? 0) > 0 && (got[1] ?? 0) > 0, `one workload got every copy: ${got}`);
  });

  test('a mirror by named backend (agentgateway’s backend: <name>) gets the copies at its address', async () => {
    const res = await request(proxy.url('/named/x'), { method: 'POST', body: 'to the shadow' });
    assert.equal(res.statusCode, 200);
    await res.body.text();
    await until('the copy', () => mirrored('/named/x').length === 1);
    assert.equal(mirrored('/named/x')[0]?.body, 'to the shadow');
  });

  test('a streamed body of unknown length reaches both whole', async () => {
    const chunks = Array.from({ length: 20 }, (_, i) => `chunk ${i};`.repeat(500));
    const res = await request(proxy.url('/copy/stream'), {
      method: 'PUT',
      body: Readable.from(chunks.map((c) => Buffer.from(c))),
    });
    const echo = (await res.body.json()) as { body: string; headers: Record<string, string> };
    assert.equal(echo.body, chunks.join(''));
    await until('the copy', () => mirrored('/copy/stream').length === 1);
    assert.equal(mirrored('/copy/stream')[0]?.body, chunks.join(''));
  });

  test('a mirror that never answers delays nothing, and one that cannot keep up is dropped', async () => {
    const t0 = performance.now();
    const get = await request(proxy.url('/stalled/get'));
    assert.equal(get.statusCode, 200);
    await get.body.dump();
    // Larger than the cap: the stalled mirror reads none of it.
    const big = Buffer.alloc(1024 * 1024, 'x');
    const trace = proxy.trace();
    const res = await request(proxy.url('/stalled/big'), { method: 'POST', body: big });
    assert.equal(res.statusCode, 200);
    const echo = (await res.body.json()) as { body: string };
    assert.equal(echo.body.length, big.length);
    assert.ok(performance.now() - t0 < 2_000, `took ${performance.now() - t0} ms`);
    const events = (await trace).map((e) => e.message as Record<string, unknown>);
    const mirror = events.filter((e) => e.type === 'requestMirror');
    assert.deepEqual(
      mirror.map((e) => e.result),
      ['sent', 'dropped'],
    );
    assert.match(String(mirror[1]?.reason), /fell more than 65536 bytes behind/);
    const text = await proxy.metrics.registry.metrics();
    assert.match(text, /gw_mirrored_requests_total\{route="[^"]*stalled[^"]*",outcome="dropped"\} 1/);
  });

  test('a mirror that refuses connections fails nothing; the trace says it failed', async () => {
    const trace = proxy.trace();
    const res = await request(proxy.url('/dead/x'), { method: 'POST', body: 'payload' });
    assert.equal(res.statusCode, 200);
    assert.equal(((await res.body.json()) as { body: string }).body, 'payload');
    // The trace ends with the response; the failure may be reported before that or not at all.
    const events = (await trace).map((e) => e.message as Record<string, unknown>);
    assert.ok(events.some((e) => e.type === 'requestMirror' && e.result === 'sent'));
    for (const e of events.filter((e) => e.type === 'requestMirror' && e.result !== 'sent'))
      assert.equal(e.result, 'failed');
  });

  test('percentage: about that share of requests is mirrored; 0 mirrors none', async () => {
    const n = 200;
    for (let i = 0; i < n; i++) {
      const a = await request(proxy.url(`/some/${i}`));
      await a.body.dump();
      const b = await request(proxy.url(`/none/${i}`));
      await b.body.dump();
    }
    // the counter moves when a request ends, its copy reaches the mirror a little later: wait until
    // every copy counted has arrived
    const sent = async () =>
      Number(
        /gw_mirrored_requests_total\{route="[^"]*some[^"]*",outcome="sent"\} (\d+)/.exec(
          await proxy.metrics.registry.metrics(),
        )?.[1] ?? -1,
      );
    for (let i = 0; i < 150 && (await sent()) !== mirrored('/some/').length; i++) await sleep(20);
    const got = mirrored('/some/').length;
    assert.equal(await sent(), got, 'each copy counted reached the mirror');
    // 0.3 of 200 is 60 (standard deviation ~6.5)
    assert.ok(got >= 30 && got <= 95, `mirrored ${got} of ${n}`);
    assert.equal(mirrored('/none/').length, 0);
  });

  test('a route without a mirror is untouched', async () => {
    const before = mirror.seen.length;
    const res = await request(proxy.url('/plain'), { method: 'POST', body: 'x' });
    assert.equal(((await res.body.json()) as { body: string }).body, 'x');
    await sleep(50);
    assert.equal(mirror.seen.length, before);
  });
});

describe('requestMirror config errors name the field', () => {
  const issues = (mirrorYaml: string): string[] => {
    try {
      loadConfigText(
        'gw.yaml',
        `binds:
- port: 8080
  listeners:
  - routes:
    - policies:
        requestMirror: ${mirrorYaml}
      backends: [{host: "127.0.0.1:9"}]
`,
        process.cwd(),
        () => undefined,
      );
    } catch (err) {
      assert.ok(err instanceof ConfigError, `expected ConfigError, got ${err}`);
      return err.issues.map((i) => `${i.path}: ${i.message}`);
    }
    assert.fail('config was accepted');
  };
  const at = 'binds[0].listeners[0].routes[0].policies.requestMirror';

  test('percentage outside 0..1, or missing', () => {
    const [over] = issues('{backend: {host: "m:80"}, percentage: 1.5}');
    assert.match(over ?? '', new RegExp(`^${escapeRe(at)}\\.percentage: `));
    const [missing] = issues('{backend: {host: "m:80"}}');
    assert.match(missing ?? '', new RegExp(`^${escapeRe(at)}\\.percentage`));
  });

  test('backend: host:port, a named backend or a Service; exactly one', () => {
    const [bad] = issues('{backend: {host: "no-port"}, percentage: 1}');
    assert.match(bad ?? '', new RegExp(`^${escapeRe(at)}\\.backend\\.host: .*host>:<port`));
    const [none] = issues('{backend: {}, percentage: 1}');
    assert.match(
      none ?? '',
      new RegExp(
        `^${escapeRe(at)}\\.backend\\.host: set host \\(host:port of the mirror\\), backend or service`,
      ),
    );
    const [named] = issues('{backend: {backend: b}, percentage: 1}');
    assert.match(named ?? '', /requestMirror\.backend\.backend: no backend named "b"/);
    const [both] = issues('{backend: {backend: b, host: "m:80"}, percentage: 1}');
    assert.match(
      both ?? '',
      /requestMirror\.backend\.backend: set one of host, backend and service, not host and backend/,
    );
    // a Service of services (the mirror test above calls one)
    const [svc] = issues('{backend: {service: {name: default/s, port: 80}}, percentage: 1}');
    assert.match(
      svc ?? '',
      /requestMirror\.backend\.service\.name: no service "default\/s" in services \(there are none\)/,
    );
  });
});

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
