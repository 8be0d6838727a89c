// `gwctl trace gateway/<name>` as a user runs it: command-line and kubeconfig mistakes, pod lookup
// against a fake API server, and a whole trace through the fake's port-forward to a real gw.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { tempDir } from '@gw/testkit/temp-dir';
import { type FakeKubeApi, type FakeKubeOptions, startFakeKubeApi } from './support/fake-kube-api.ts';
import { cleanupGw, configBlock, freePort, type GwProcess, startGw } from './support/gw-process.ts';
import { cleanupGwctl, runGwctl, startGwctl } from './support/gwctl-process.ts';

const LABEL = 'gateway.networking.k8s.io/gateway-name';
const home = tempDir('gwctl-home-');

/** The test's environment, minus any kubeconfig or cluster of the machine running it. */
function env(vars: Record<string, string> = {}): NodeJS.ProcessEnv {
  const e: NodeJS.ProcessEnv = { ...process.env, HOME: home, ...vars };
  if (!('KUBECONFIG' in vars)) delete e.KUBECONFIG;
  delete e.KUBERNETES_SERVICE_HOST;
  return e;
}

const fakes: FakeKubeApi[] = [];
async function fake(o: FakeKubeOptions): Promise<FakeKubeApi> {
  const f = await startFakeKubeApi(o);
  fakes.push(f);
  return f;
}

after(async () => {
  cleanupGwctl();
  await cleanupGw();
  for (const f of fakes) await f.close();
});

function pod(
  name: string,
  extra: { namespace?: string; gateway?: string; phase?: string; ready?: boolean; created?: string } = {},
) {
  return {
    name,
    namespace: extra.namespace ?? 'prod',
    labels: { [LABEL]: extra.gateway ?? 'web', app: 'gw' },
    phase: extra.phase ?? 'Running',
    ready: extra.ready ?? true,
    created: extra.created ?? '2026-01-01T00:00:00Z',
  };
}

describe('before any cluster is asked', () => {
  test('a target that is not gateway/<name> exits 2 with usage', async () => {
    for (const target of ['pod/web', 'gateway/', 'gateway/Web_1']) {
      const r = await runGwctl(['trace', target, '--raw'], { env: env() });
      assert.equal(r.code, 2, target);
      assert.match(r.stderr, new RegExp(`expected gateway/<name>, got ${target}\\n\\nUsage:`));
    }
    const none = await runGwctl(['trace', '--raw'], { env: env() });
    assert.equal(none.code, 2);
    assert.match(none.stderr, /expected gateway\/<name>, got nothing/);
  });

  test('inject mode without --port and the view without a terminal exit 2, kubeconfig or not', async () => {
    const e = env({ KUBECONFIG: join(home, 'missing') });
    const noPort = await runGwctl(['trace', 'gateway/web', '--raw', '--', 'http://x/'], { env: e });
    assert.equal(noPort.code, 2);
    assert.match(noPort.stderr, /inject mode needs --port <listener port>: the proxy pod's port/);
    const noTty = await runGwctl(['trace', 'gateway/web'], { env: e });
    assert.equal(noTty.code, 2);
    assert.match(noTty.stderr, /needs a terminal; use --raw/);
  });

  test('a KUBECONFIG naming a file that does not exist is a clear error', async () => {
    const missing = join(home, 'nope', 'config');
    const r = await runGwctl(['trace', 'gateway/web', '--raw'], { env: env({ KUBECONFIG: missing }) });
    assert.equal(r.code, 1);
    assert.equal(r.stderr, `gwctl: KUBECONFIG names ${missing}, which does not exist\n`);
  });

  test('no kubeconfig anywhere says where it looked', async () => {
    const r = await runGwctl(['trace', 'gateway/web', '--raw'], { env: env() });
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      /no kubeconfig: KUBECONFIG is not set, .*\.kube\/config does not exist and gwctl is not running in a cluster/,
    );
  });

  test('an API server on a closed port is named in the error', async () => {
    const closed = await freePort();
    const f = await fake({});
    const file = f.kubeconfig();
    // The same kubeconfig, pointed at a port nothing listens on.
    writeFileSync(file, readFileSync(file, 'utf8').replace(f.url, `http://127.0.0.1:${closed}`));
    const r = await runGwctl(['trace', 'gateway/web', '--raw'], { env: env({ KUBECONFIG: file }) });
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      new RegExp(
        `cannot reach the API server at http://127\\.0\\.0\\.1:${closed} \\(context main\\): ECONNREFUSED`,
      ),
    );
  });
});

describe('pod lookup against a fake API server', () => {
  test('403 on the pods list names the missing permission', async () => {
    const f = await fake({ listStatus: 403 });
    const r = await runGwctl(['trace', 'gateway/web', '-n', 'prod', '--raw'], {
      env: env({ KUBECONFIG: f.kubeconfig() }),
    });
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      /forbidden: context main may not list pods in namespace prod \(403 from http:\/\/127/,
    );
    assert.match(r.stderr, /missing RBAC permission is verb "list" on "pods" in namespace prod/);
    assert.match(r.stderr, /cannot list resource "pods"/, "the server's own message is kept");
  });

  test('no pods with the label: the namespace defaults to the context, the token is sent', async () => {
    const f = await fake({ pods: [pod('other-1', { gateway: 'other', namespace: 'team' })] });
    const r = await runGwctl(['trace', 'gateway/web', '--raw'], {
      env: env({ KUBECONFIG: f.kubeconfig({ namespace: 'team' }) }),
    });
    assert.equal(r.code, 1);
    assert.equal(r.stderr, `gwctl: no proxy pods for Gateway team/web (label ${LABEL}=web)\n`);
    assert.deepEqual(f.requests, [
      `GET /api/v1/namespaces/team/pods?labelSelector=${encodeURIComponent(`${LABEL}=web`)}`,
    ]);
    assert.deepEqual(f.auth, ['Bearer t0ken']);
  });

  test('without a namespace anywhere it is default; --context and -n choose', async () => {
    const f = await fake({});
    const file = f.kubeconfig({ extraContext: { name: 'other', namespace: 'ops' } });
    const a = await runGwctl(['trace', 'gateway/web', '--raw'], { env: env({ KUBECONFIG: file }) });
    assert.match(a.stderr, /no proxy pods for Gateway default\/web/);
    const b = await runGwctl(['trace', 'gateway/web', '--raw', '--context', 'other'], {
      env: env({ KUBECONFIG: file }),
    });
    assert.match(b.stderr, /no proxy pods for Gateway ops\/web/);
    const c = await runGwctl(['trace', 'gateway/web', '--raw', '--context', 'other', '-n', 'x'], {
      env: env({ KUBECONFIG: file }),
    });
    assert.match(c.stderr, /no proxy pods for Gateway x\/web/);
    const d = await runGwctl(['trace', 'gateway/web', '--raw', '--context', 'nope'], {
      env: env({ KUBECONFIG: file }),
    });
    assert.equal(d.code, 1);
    assert.match(d.stderr, /context nope is not in .*kubeconfig-\d+\.yaml \(contexts: main, other\)/);
  });

  test('pods that are not ready are listed with their phases', async () => {
    const f = await fake({
      pods: [pod('web-a', { phase: 'Pending', ready: false }), pod('web-b', { ready: false })],
    });
    const r = await runGwctl(['trace', 'gateway/web', '-n', 'prod', '--raw'], {
      env: env({ KUBECONFIG: f.kubeconfig() }),
    });
    assert.equal(r.code, 1);
    assert.equal(
      r.stderr,
      'gwctl: no ready proxy pod for Gateway prod/web: web-a (Pending), web-b (Running, not ready)\n',
    );
  });

  const ready = [
    pod('web-old', { created: '2026-01-01T00:00:00Z' }),
    pod('web-new', { created: '2026-02-01T00:00:00Z' }),
    pod('web-newest-pending', { created: '2026-03-01T00:00:00Z', phase: 'Pending', ready: false }),
  ];

  test('a refused port-forward names the newest ready pod and the missing permission', async () => {
    const f = await fake({ pods: ready, upgrade: 403 });
    const r = await runGwctl(['trace', 'gateway/web', '-n', 'prod', '--raw'], {
      env: env({ KUBECONFIG: f.kubeconfig() }),
    });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /forbidden: context main may not create pods\/portforward in namespace prod/);
    assert.equal(f.requests[1], 'GET /api/v1/namespaces/prod/pods/web-new/portforward?ports=15000');
    assert.equal(f.auth[1], 'Bearer t0ken');
  });

  test('an API server that cannot upgrade the connection is a clear error', async () => {
    const f = await fake({ pods: ready, upgrade: 'hang-up' });
    const r = await runGwctl(['trace', 'gateway/web', '-n', 'prod', '--raw'], {
      env: env({ KUBECONFIG: f.kubeconfig() }),
    });
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      new RegExp(`^gwctl: port-forward to pod prod/web-new port 15000 through ${f.url} failed: .+\\n$`),
    );
    const g = await fake({ pods: ready, upgrade: 400 });
    const s = await runGwctl(['trace', 'gateway/web', '-n', 'prod', '--raw'], {
      env: env({ KUBECONFIG: g.kubeconfig() }),
    });
    assert.equal(s.code, 1);
    assert.match(
      s.stderr,
      /port-forward to pod prod\/web-new port 15000: the API server at .* refused the connection upgrade \(HTTP 400\)/,
    );
  });
});

describe('a trace through the fake port-forward to a real gw', () => {
  let gw: GwProcess;
  let f: FakeKubeApi;
  let kubeconfig: string;
  before(async () => {
    gw = await startGw({
      yaml: `${configBlock()}binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - name: web
    routes:
    - name: hello
      hostnames: [hello.example]
      policies: { directResponse: { status: 200, body: "hello from gw" } }
`,
    });
    f = await fake({
      pods: [pod('web-1')],
      podPorts: { 15000: Number(new URL(gw.admin).port), 8080: await gw.proxyPort(0) },
    });
    kubeconfig = f.kubeconfig({ namespace: 'prod' });
  });

  test('inject mode: the request goes to the pod listener port with the URL host as Host', async () => {
    const r = await runGwctl(
      ['trace', 'gateway/web', '--raw', '--port', '8080', '--', 'http://hello.example/hi'],
      { env: env({ KUBECONFIG: kubeconfig }) },
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stderr,
      /pod prod\/web-1 of Gateway prod\/web: admin port 15000 forwarded to 127\.0\.0\.1:\d+/,
    );
    assert.match(r.stderr, /HTTP\/1\.1 200 OK/);
    const events = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { message: { type: string } });
    assert.equal(events[0]?.message.type, 'requestStarted');
    assert.equal(events.at(-1)?.message.type, 'requestFinished');
    assert.match(r.stdout, /hello\.example/, 'the Host header reached the proxy');
    const forwards = f.requests.filter((q) => q.includes('/portforward'));
    assert.ok(forwards.includes('GET /api/v1/namespaces/prod/pods/web-1/portforward?ports=15000'));
    assert.ok(forwards.includes('GET /api/v1/namespaces/prod/pods/web-1/portforward?ports=8080'));
  });

  test('watch mode: a request from any client is traced', async () => {
    const w = startGwctl(['trace', 'gateway/web', '--raw'], { env: env({ KUBECONFIG: kubeconfig }) });
    await w.waitForStderr(/tracing armed; waiting for the next request/);
    const port = await gw.proxyPort(0);
    const body = await new Promise<string>((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port, path: '/watched', headers: { host: 'hello.example' } }, (res) => {
          let b = '';
          res.setEncoding('utf8').on('data', (c: string) => {
            b += c;
          });
          res.on('end', () => resolve(b));
        })
        .on('error', reject);
    });
    assert.equal(body, 'hello from gw');
    const r = await w.result();
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /\/watched/);
    assert.match(r.stdout, /"requestFinished"/);
  });

  test('Ctrl-C while watching closes the forwards and exits 130', async () => {
    const w = startGwctl(['trace', 'gateway/web', '--raw'], { env: env({ KUBECONFIG: kubeconfig }) });
    await w.waitForStderr(/tracing armed/);
    w.child.kill('SIGINT');
    const r = await w.result(10_000);
    assert.equal(r.code, 130, r.stderr);
  });

  test('a listener port the pod does not serve reports the forward error, not a local reset', async () => {
    const r = await runGwctl(
      ['trace', 'gateway/web', '--raw', '--port', '9999', '--', 'http://hello.example/'],
      {
        env: env({ KUBECONFIG: kubeconfig }),
      },
    );
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      /gwctl: port-forward to pod prod\/web-1 port 9999 failed: error forwarding port 9999 to pod prod\/web-1: .*ECONNREFUSED/,
    );
  });
});
