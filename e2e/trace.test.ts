// `gwctl proxy trace --raw` against the real `bin/gw` with two workers: inject and watch modes, traces
// served by either worker, redaction end to end, no effect on what the client gets, and clear errors.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { CLOSED_PORT, startUpstream, type TestServer } from '@gw/testkit';
import { Agent, request } from 'undici';
import { cleanupGw, configBlock, type GwProcess, startGw } from './support/gw-process.ts';
import { cleanupGwctl, runGwctl, startGwctl } from './support/gwctl-process.ts';

interface TraceEvent {
  eventStart: number | null;
  eventEnd: number;
  severity: string;
  // biome-ignore lint/suspicious/noExplicitAny: tests read event fields freely
  message: { type: string; stage?: string } & Record<string, any>;
}

const SECRET = 'sk-e2e-trace-secret-7f3a91';
const POLICY_SECRET = 'sk-e2e-policy-secret-0c55e2';
/** A gw of its own for the tests that stop it: one listener answering by itself. */
const SMALL = `${configBlock()}binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - name: small
    routes:
    - name: hi
      policies: { directResponse: { status: 200, body: "hi" } }
`;
const ARMED = /tracing armed; waiting for the next request/;

let upstream: TestServer;
let g: GwProcess;
let port: number;
let adminPort: number;

before(async () => {
  upstream = await startUpstream('echo', (req, res) => {
    // A reply that does not echo the request, so a secret cannot come back in the response body.
    if (req.url?.startsWith('/noecho')) {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok\n');
    }
  });
  g = await startGw({
    args: ['--workers', '2'],
    yaml: `${configBlock('sensitiveHeaders: [x-api-key]', 'logging: { level: trace, format: json }')}binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - name: plain
    routes:
    - name: policy-secret
      matches: [{ path: { pathPrefix: /policy-secret } }]
      policies:
        requestHeaderModifier: { set: { x-api-key: ${POLICY_SECRET} } }
      backends: [{ host: 127.0.0.1:${upstream.port} }]
    - name: up
      matches: [{ path: { pathPrefix: / } }]
      policies:
        responseHeaderModifier: { set: { x-route: up } }
      backends:
      - host: 127.0.0.1:${upstream.port}
        policies: { requestHeaderModifier: { set: { x-backend: b } } }
`,
  });
  port = await g.proxyPort(0);
  adminPort = Number(new URL(g.admin).port);
});

after(async () => {
  cleanupGwctl();
  await cleanupGw();
  await upstream?.close();
});

function parseLines(stdout: string): TraceEvent[] {
  return stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as TraceEvent);
}

const label = (e: TraceEvent) => `${e.message.type}${e.message.stage ? `:${e.message.stage}` : ''}`;

/** Asserts `want` appears in `events` in this order (other events may sit between). */
function assertInOrder(events: TraceEvent[], want: string[]): void {
  const got = events.map(label);
  let at = 0;
  for (const w of want) {
    const i = got.indexOf(w, at);
    assert.ok(i !== -1, `${w} missing after position ${at} in ${got.join(', ')}`);
    at = i + 1;
  }
  assert.equal(got[0], 'requestStarted');
  assert.equal(got.at(-1), 'requestFinished');
}

const find = (events: TraceEvent[], type: string, stage?: string) =>
  events.find((e) => e.message.type === type && (stage === undefined || e.message.stage === stage))?.message;

/** One request on a connection of its own, so the kernel may hand it to either worker. */
async function freshRequest(path: string, headers: Record<string, string> = {}, body?: string) {
  const agent = new Agent();
  try {
    const res = await request(`http://127.0.0.1:${port}${path}`, {
      dispatcher: agent,
      method: body === undefined ? 'GET' : 'POST',
      headers,
      ...(body === undefined ? {} : { body }),
    });
    return { status: res.statusCode, headers: res.headers, body: await res.body.text() };
  } finally {
    await agent.close();
  }
}

/** Starts a raw watch-mode trace and waits until gwctl says every worker is armed. */
async function watch(extra: string[] = [], on = adminPort) {
  const w = startGwctl(['proxy', 'trace', '--raw', '-p', String(on), ...extra]);
  await w.waitForStderr(ARMED);
  return w;
}

async function requestsPerWorker(): Promise<Map<string, number>> {
  const text = await (await fetch(`${g.stats}/metrics`)).text();
  const per = new Map<string, number>();
  for (const m of text.matchAll(/^gw_requests_total\{[^}]*worker="(\d+)"[^}]*\} (\d+)/gm)) {
    per.set(m[1] as string, (per.get(m[1] as string) ?? 0) + Number(m[2]));
  }
  return per;
}

test('inject mode: gwctl sends the request itself; the URL host is only the Host header', async () => {
  const seen = upstream.seen.length;
  const r = await runGwctl([
    'proxy',
    'trace',
    '--raw',
    '-p',
    String(adminPort),
    '--port',
    String(port),
    '--',
    'http://anything.example/path',
    '-H',
    'x-test: 1',
    '-d',
    'body',
  ]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /^HTTP\/1\.1 200 OK$/m);
  const events = parseLines(r.stdout);
  assertInOrder(events, [
    'requestStarted',
    'requestSnapshot:initial request',
    'routeSelection',
    'requestSnapshot:final request',
    'backendCallStart',
    'bodySnapshot:final request',
    'backendCallResult',
    'responseSnapshot:final response',
    'requestFinished',
  ]);
  const initial = find(events, 'requestSnapshot', 'initial request')?.requestState.request;
  assert.equal(initial.host, 'anything.example');
  assert.equal(initial.method, 'POST', '-d implies POST');
  assert.equal(initial.path, '/path');
  assert.equal(initial.headers['x-test'], '1');
  assert.equal(Buffer.from(find(events, 'bodySnapshot', 'final request')?.body, 'base64').toString(), 'body');
  assert.equal(find(events, 'backendCallResult')?.status, 200);
  // The name was never resolved: the request reached the upstream through 127.0.0.1:<port>.
  const echo = upstream.seen.at(-1);
  assert.equal(upstream.seen.length, seen + 1);
  assert.equal(echo?.headers.host, 'anything.example');
  assert.equal(echo?.body, 'body');
  assert.equal(echo?.headers['x-test'], '1');
});

test('inject mode: -X, repeated -H and --data-binary', async () => {
  const r = await runGwctl([
    'proxy',
    'trace',
    '--raw',
    '-p',
    String(adminPort),
    '--port',
    String(port),
    '--',
    'http://bin.example:8080/put?q=1',
    '-X',
    'PUT',
    '-H',
    'x-a: 1',
    '-H',
    'x-b: 2',
    '--data-binary',
    'line1\nline2',
  ]);
  assert.equal(r.code, 0, r.stderr);
  const req = find(parseLines(r.stdout), 'requestSnapshot', 'initial request')?.requestState.request;
  assert.equal(req.method, 'PUT');
  assert.equal(req.host, 'bin.example');
  assert.equal(req.pathAndQuery, '/put?q=1');
  assert.equal(req.headers['x-a'], '1');
  assert.equal(req.headers['x-b'], '2');
  assert.equal(upstream.seen.at(-1)?.body, 'line1\nline2');
  assert.equal(upstream.seen.at(-1)?.headers.host, 'bin.example:8080');
});

test('watch mode: traces the next request from any client', async () => {
  const w = await watch();
  const res = await freshRequest('/watched?from=test', { 'x-watch': 'yes' });
  assert.equal(res.status, 200);
  const r = await w.result();
  assert.equal(r.code, 0, r.stderr);
  const events = parseLines(r.stdout);
  assertInOrder(events, ['requestStarted', 'requestSnapshot:initial request', 'requestFinished']);
  const req = find(events, 'requestSnapshot', 'initial request')?.requestState.request;
  assert.equal(req.pathAndQuery, '/watched?from=test');
  assert.equal(req.headers['x-watch'], 'yes');
  assert.equal(find(events, 'responseSnapshot', 'final response')?.requestState.response.code, 200);
});

test('watch mode with --expression traces only the matching request', async () => {
  const w = await watch(['--expression', 'request.path == "/picked"']);
  await freshRequest('/not-this-one');
  await freshRequest('/picked');
  const r = await w.result();
  assert.equal(r.code, 0, r.stderr);
  assert.equal(
    find(parseLines(r.stdout), 'requestSnapshot', 'initial request')?.requestState.request.path,
    '/picked',
  );
});

test('watch traces complete whichever worker serves the request', { timeout: 300_000 }, async (t) => {
  const before = await requestsPerWorker();
  let traces = 0;
  const grew = async () => {
    const now = await requestsPerWorker();
    return ['0', '1'].filter((w) => (now.get(w) ?? 0) > (before.get(w) ?? 0));
  };
  // Ten traces; a few more only in the rare case the kernel gave all ten connections to one worker.
  while (traces < 10 || ((await grew()).length < 2 && traces < 30)) {
    const w = await watch();
    const res = await freshRequest(`/worker-spread/${traces}`);
    assert.equal(res.status, 200);
    const r = await w.result();
    assert.equal(r.code, 0, `trace ${traces}: ${r.stderr}`);
    const events = parseLines(r.stdout);
    assert.equal(events.at(-1)?.message.type, 'requestFinished', `trace ${traces}`);
    assert.equal(
      find(events, 'requestSnapshot', 'initial request')?.requestState.request.path,
      `/worker-spread/${traces}`,
    );
    traces++;
  }
  t.diagnostic(`${traces} traces; workers that served: ${(await grew()).join(', ')}`);
  assert.deepEqual(await grew(), ['0', '1'], 'both workers served traced requests');
});

test('secrets in authorization and sensitiveHeaders never reach traces, logs or the config dump', async () => {
  const logLines = g.stdout.length + g.stderr.length;
  const w = await watch();
  const res = await freshRequest('/noecho/secret', {
    authorization: `Bearer ${SECRET}`,
    'x-api-key': SECRET,
  });
  assert.equal(res.status, 200);
  assert.equal(res.body, 'ok\n');
  // The real values still reach the upstream: redaction is for diagnostics only.
  assert.equal(upstream.seen.at(-1)?.headers.authorization, `Bearer ${SECRET}`);
  assert.equal(upstream.seen.at(-1)?.headers['x-api-key'], SECRET);
  const r = await w.result();
  assert.equal(r.code, 0, r.stderr);
  const events = parseLines(r.stdout);
  assert.ok(events.length > 5);
  for (const line of r.stdout.split('\n'))
    assert.equal(line.includes(SECRET), false, `trace line leaks: ${line}`);
  for (const e of events.filter((e) => e.message.type === 'bodySnapshot')) {
    assert.equal(Buffer.from(e.message.body, 'base64').toString().includes(SECRET), false);
  }
  const headers = find(events, 'requestSnapshot', 'final request')?.requestState.request.headers;
  assert.equal(headers.authorization, '<redacted>');
  assert.equal(headers['x-api-key'], '<redacted>');
  // the access log line is written as the response ends, by a worker that flushes its log in blocks
  assert.ok(
    await g.waitForLine((l) => l.includes('/noecho/secret')),
    `gw logged the request; stdout:\n${g.stdout.slice(logLines).join('\n')}`,
  );
  const logs = [...g.stdout, ...g.stderr];
  assert.ok(logs.length > logLines, 'gw logged the request');
  for (const l of logs) assert.equal(l.includes(SECRET), false, `gw log leaks: ${l}`);
  const dump = await (await fetch(`${g.admin}/config_dump`)).text();
  assert.equal(dump.includes(SECRET), false, 'config dump leaks');
});

test('a sensitive header value set by a route policy is redacted in policySelection and /config_dump', async () => {
  const w = await watch();
  const res = await freshRequest('/policy-secret/noecho');
  assert.equal(res.status, 200);
  assert.equal(upstream.seen.at(-1)?.headers['x-api-key'], POLICY_SECRET, 'the policy did set it');
  const r = await w.result();
  assert.equal(r.code, 0, r.stderr);
  const events = parseLines(r.stdout);
  assert.equal(
    find(events, 'requestSnapshot', 'final request')?.requestState.request.headers['x-api-key'],
    '<redacted>',
  );
  const leaks = events.filter((e) => JSON.stringify(e).includes(POLICY_SECRET)).map(label);
  assert.deepEqual(leaks, [], 'events that show the secret');
  const dump = await (await fetch(`${g.admin}/config_dump`)).text();
  assert.equal(dump.includes(POLICY_SECRET), false, 'config dump shows the secret');
});

test('a traced request gets exactly what an untraced one gets', async () => {
  const send = () => freshRequest('/same?x=1', { 'x-client': 'c', 'content-type': 'text/plain' }, 'payload');
  const comparable = (r: Awaited<ReturnType<typeof send>>) => {
    const { date: _d, ...headers } = r.headers;
    return { status: r.status, headers, body: r.body };
  };
  const plain = await send();
  const w = await watch();
  const traced = await send();
  const r = await w.result();
  assert.equal(r.code, 0, r.stderr);
  assert.equal(
    find(parseLines(r.stdout), 'requestSnapshot', 'initial request')?.requestState.request.path,
    '/same',
  );
  assert.deepEqual(comparable(traced), comparable(plain));
  assert.equal(plain.headers['x-route'], 'up');
});

describe('errors', () => {
  test('a closed admin port is a clear error, in watch and inject mode', async () => {
    const closed = String(CLOSED_PORT);
    for (const args of [
      ['proxy', 'trace', '--raw', '-p', closed],
      ['proxy', 'trace', '--raw', '-p', closed, '--port', String(port), '--', 'http://x.example/'],
    ]) {
      const r = await runGwctl(args);
      assert.equal(r.code, 1, r.stderr);
      assert.match(
        r.stderr,
        new RegExp(
          `cannot reach the gw admin interface at 127\\.0\\.0\\.1:${closed} \\(ECONNREFUSED\\); is gw running\\?`,
        ),
      );
      assert.equal(r.stdout, '');
    }
  });

  test('an invalid expression is refused by the proxy and reported', async () => {
    const r = await runGwctl([
      'proxy',
      'trace',
      '--raw',
      '-p',
      String(adminPort),
      '--expression',
      'request.path ==',
    ]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /admin \/debug\/trace\?expression=.* answered 400: invalid expression/);
  });

  test('a closed proxy port in inject mode fails the request, not the trace', async () => {
    const closed = String(CLOSED_PORT);
    const r = await runGwctl([
      'proxy',
      'trace',
      '--raw',
      '-p',
      String(adminPort),
      '--port',
      closed,
      '--',
      'http://x/',
    ]);
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      new RegExp(`the request to 127\\.0\\.0\\.1:${closed} \\(Host x\\) failed: ECONNREFUSED`),
    );
  });

  test('command-line mistakes exit 2 with usage', async () => {
    const noPort = await runGwctl(['proxy', 'trace', '--raw', '-p', String(adminPort), '--', 'http://x/']);
    assert.equal(noPort.code, 2);
    assert.match(noPort.stderr, /inject mode needs --port/);
    const badCurl = await runGwctl([
      'proxy',
      'trace',
      '--raw',
      '--port',
      '1',
      '--',
      'http://x/',
      '--proxy',
      'y',
    ]);
    assert.equal(badCurl.code, 2);
    assert.match(badCurl.stderr, /unsupported curl argument --proxy/);
    const noTty = await runGwctl(['proxy', 'trace', '-p', String(adminPort)]);
    assert.equal(noTty.code, 2);
    assert.match(noTty.stderr, /needs a terminal; use --raw/);
    const gateway = await runGwctl(['trace', 'gw/web', '-n', 'prod', '--raw']);
    assert.equal(gateway.code, 2);
    assert.match(gateway.stderr, /expected gateway\/<name>, got gw\/web/);
  });

  test('a malformed event from the admin interface is a clear error', async () => {
    const fake = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': armed\n\n');
      res.write(
        'data: {"eventStart":0,"eventEnd":0.1,"severity":"info","message":{"type":"requestStarted"}}\n\n',
      );
      res.write('data: {"eventStart": nope\n\n');
    });
    await new Promise<void>((r) => fake.listen(0, '127.0.0.1', r));
    try {
      const p = (fake.address() as { port: number }).port;
      const r = await runGwctl(['proxy', 'trace', '--raw', '-p', String(p)]);
      assert.equal(r.code, 1);
      assert.match(r.stderr, /the admin interface sent a malformed trace event .*: \{"eventStart": nope/);
      assert.equal(parseLines(r.stdout).length, 1, 'the good event before it was printed');
    } finally {
      fake.closeAllConnections();
      await new Promise((r) => fake.close(r));
    }
  });

  test('gw killed mid-watch: the stream ended early', async () => {
    const g2 = await startGw({ yaml: SMALL });
    const w = await watch([], Number(new URL(g2.admin).port));
    g2.child.kill('SIGKILL');
    const r = await w.result();
    assert.equal(r.code, 1);
    assert.match(r.stderr, /gwctl: trace stream ended before the request finished\n$/);
    await g2.stop();
  });

  test('gw stopped gracefully mid-watch: gw exits promptly and gwctl reports the early end', async () => {
    const g2 = await startGw({ yaml: SMALL });
    const w = await watch([], Number(new URL(g2.admin).port));
    const t0 = Date.now();
    const exit = await g2.stop(10_000);
    assert.equal(exit.code, 0, 'gw drained and exited by itself, not killed after the grace period');
    assert.ok(Date.now() - t0 < 5000, `gw took ${Date.now() - t0} ms to stop with a trace open`);
    const r = await w.result();
    assert.equal(r.code, 1);
    assert.match(r.stderr, /trace stream ended before the request finished/);
  });
});
