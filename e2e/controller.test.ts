// The control plane end to end, on the real API server (startKube): `bin/gw-controller` watches it,
// `bin/gw --xds-address … --gateway default/edge` takes its config from the controller (authenticated
// by a service-account token the API server issued and TokenReview checks), `kubectl apply` creates
// Gateway, HTTPRoute, GwBackend and GwPolicy as a user would, real HTTP goes through the proxy, status
// is read back with kubectl, and a policy change reaches traffic (the apply-to-effect time is printed).
// The API server rejects loopback endpoints, so the upstream is a static GwBackend on 127.0.0.1.
// e2e/controller.kind.test.ts runs the same steps on a kind cluster (shared parts: support/controller-e2e.ts).
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type KubeHarness, startKube, startUpstream, type TestServer } from '@gw/testkit';
import {
  applyToEffect,
  brokenPolicyYaml,
  conditionStatus as cond,
  gatewayYaml,
  headersPolicyYaml,
  httpGet,
  maintenancePolicyYaml,
  until as poll,
  routeYaml,
} from './support/controller-e2e.ts';
import { cleanupGw, freePort, type GwProcess, startGw } from './support/gw-process.ts';

const CONTROLLER_BIN = resolve(import.meta.dirname, '../bin/gw-controller');

let kube: KubeHarness;
let upstream: TestServer;
let controller: ChildProcess;
const controllerLog: string[] = [];
let xdsPort: number;
let healthPort: number;
let proxyPort: number;
let gw: GwProcess;

async function kubectl(args: string[], input?: string): Promise<string> {
  const r = await kube.kubectl(args, input === undefined ? {} : { input });
  assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

const until = <T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> =>
  poll(what, fn, { timeoutMs, context: () => `\ncontroller log:\n${controllerLog.slice(-20).join('')}` });

const get = (path = '/') => httpGet(proxyPort, path);

const manifests = () => `${gatewayYaml('default', proxyPort)}
---
apiVersion: gw.dev/v1alpha1
kind: GwBackend
metadata: { name: echo, namespace: default }
spec:
  static: { host: 127.0.0.1, port: ${upstream.port} }
---${routeYaml('default', '{ group: gw.dev, kind: GwBackend, name: echo }')}`;

before(async () => {
  [kube, upstream, xdsPort, healthPort, proxyPort] = await Promise.all([
    startKube(),
    startUpstream('echo'),
    freePort(),
    freePort(),
    freePort(),
  ]);
  const metricsPort = await freePort();
  controller = spawn(
    CONTROLLER_BIN,
    [
      '--xds-port',
      String(xdsPort),
      '--xds-address',
      '127.0.0.1',
      '--health-port',
      String(healthPort),
      '--metrics-port',
      String(metricsPort),
    ],
    { env: { ...process.env, KUBECONFIG: kube.kubeconfig }, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  controller.stderr?.on('data', (c: Buffer) => controllerLog.push(c.toString()));
  await until('the controller to be ready', async () => {
    const r = await fetch(`http://127.0.0.1:${healthPort}/readyz`).catch(() => undefined);
    return r?.status === 200 ? true : undefined;
  });
});

after(async () => {
  await cleanupGw();
  if (controller && controller.exitCode === null) {
    const exited = new Promise((r) => controller.once('exit', r));
    controller.kill('SIGTERM');
    await exited;
  }
  await upstream?.close();
  await kube?.stop();
});

describe('controller + proxy on the real API server', () => {
  test('the controller creates its GatewayClass and accepts it', async () => {
    const status = await until('GatewayClass gw Accepted', async () => {
      const out = await kubectl([
        'get',
        'gatewayclass',
        'gw',
        '-o',
        'jsonpath={.status.conditions[?(@.type=="Accepted")].status}',
      ]);
      return out === 'True' ? out : undefined;
    });
    assert.equal(status, 'True');
    assert.equal(
      await kubectl(['get', 'gatewayclass', 'gw', '-o', 'jsonpath={.spec.controllerName}']),
      'gw.dev/gw',
    );
  });

  test('kubectl apply of Gateway, GwBackend and HTTPRoute: status is written and traffic flows', async () => {
    await kubectl(['apply', '--server-side', '-f', '-'], manifests());
    // the proxy's identity: a service account named after its Gateway, and a token the API server issues
    await kubectl(['create', 'serviceaccount', 'edge', '-n', 'default']);
    const token = (await kubectl(['create', 'token', 'edge', '-n', 'default'])).trim();
    const tokenFile = join(kube.dir, 'edge.token');
    writeFileSync(tokenFile, token);
    gw = await startGw({
      args: [
        '--xds-address',
        `http://127.0.0.1:${xdsPort}`,
        '--gateway',
        'default/edge',
        '--xds-token-file',
        tokenFile,
        '--admin-addr',
        '127.0.0.1:0',
        '--stats-addr',
        '127.0.0.1:0',
        '--readiness-addr',
        '127.0.0.1:0',
      ],
    });
    const r = await until('traffic through the proxy', async () => {
      const x = await get('/hello').catch(() => undefined);
      return x?.status === 200 ? x : undefined;
    });
    assert.equal(r.headers['x-upstream'], 'echo');

    const gwStatus = JSON.parse(await kubectl(['get', 'gateway', 'edge', '-o', 'json'])).status;
    assert.equal(cond(gwStatus.conditions, 'Accepted'), 'True');
    assert.equal(cond(gwStatus.conditions, 'Programmed'), 'True');
    assert.equal(gwStatus.listeners[0].attachedRoutes, 1);
    const routeStatus = JSON.parse(await kubectl(['get', 'httproute', 'web', '-o', 'json'])).status;
    assert.equal(routeStatus.parents[0].controllerName, 'gw.dev/gw');
    assert.equal(cond(routeStatus.parents[0].conditions, 'Accepted'), 'True');
    assert.equal(cond(routeStatus.parents[0].conditions, 'ResolvedRefs'), 'True');
    assert.equal(
      await kubectl(['get', 'gwbackend', 'echo', '-o', 'jsonpath={.status.conditions[0].status}']),
      'True',
    );
  });

  test('a GwPolicy change reaches traffic; Accepted/Attached are written', async () => {
    const policy = (status: number) => maintenancePolicyYaml('default', status);
    const times: number[] = [];
    for (const status of [503, 418, 503]) {
      const start = performance.now();
      await kubectl(['apply', '--server-side', '-f', '-'], policy(status));
      await until(`status ${status} through the proxy`, async () => {
        const x = await get('/');
        return x.status === status ? true : undefined;
      });
      times.push(performance.now() - start);
    }
    await kubectl(['delete', 'gwpolicy', 'maintenance']);
    const start = performance.now();
    await until('the policy removed', async () => ((await get('/')).status === 200 ? true : undefined));
    times.push(performance.now() - start);
    console.log(applyToEffect(times));
  });

  test('the policy status says Accepted and Attached', async () => {
    await kubectl(['apply', '--server-side', '-f', '-'], headersPolicyYaml('default'));
    await until('the header through the proxy', async () =>
      (await get('/')).headers['x-policy'] === 'applied' ? true : undefined,
    );
    const out = await until('the policy status', async () => {
      const s = JSON.parse(await kubectl(['get', 'gwpolicy', 'headers', '-o', 'json'])).status;
      return s?.ancestors?.[0] ? s : undefined;
    });
    const conds = out.ancestors[0].conditions as { type: string; status: string }[];
    assert.equal(conds.find((c) => c.type === 'Accepted')?.status, 'True');
    assert.equal(conds.find((c) => c.type === 'Attached')?.status, 'True');
    const printed = await kubectl(['get', 'gwpol', 'headers']);
    assert.match(printed, /headers\s+True\s+True/);
  });

  test('a configuration the proxy refuses is a Warning Event on the Gateway, and traffic keeps flowing', async () => {
    await kubectl(['apply', '--server-side', '-f', '-'], brokenPolicyYaml('default'));
    const events = await until('a Warning Event on the Gateway', async () => {
      const out = await kubectl([
        'get',
        'events',
        '-n',
        'default',
        '--field-selector',
        'involvedObject.kind=Gateway,involvedObject.name=edge,type=Warning',
        '-o',
        'json',
      ]);
      const items = JSON.parse(out).items as { reason: string; message: string }[];
      return items.length > 0 ? items : undefined;
    });
    assert.equal(events[0]?.reason, 'ConfigRejected');
    assert.match(events[0]?.message ?? '', /rejected its configuration/);
    // the proxy says why in its config dump, and the last good configuration still serves
    const dump = await gw.configDump();
    assert.match(dump.lastReloadError ?? '', /matchExpressions|CEL|expression/i);
    const r = await get('/');
    assert.equal(r.status, 200);
    await kubectl(['delete', 'gwpolicy', 'broken']);
  });

  test('a proxy without a valid token is refused', async () => {
    const tokenFile = join(kube.dir, 'bad.token');
    writeFileSync(tokenFile, 'not-a-token');
    const refused = await startGw({
      args: [
        '--xds-address',
        `http://127.0.0.1:${xdsPort}`,
        '--gateway',
        'default/edge',
        '--xds-token-file',
        tokenFile,
        '--admin-addr',
        '127.0.0.1:0',
        '--stats-addr',
        '127.0.0.1:0',
        '--readiness-addr',
        '127.0.0.1:0',
      ],
      waitReady: false,
    });
    await until('the refusal in the controller log', async () =>
      controllerLog.join('').includes('proxy stream refused') ? true : undefined,
    );
    const ready = await fetch(`${refused.readiness}/healthz/ready`).catch(() => undefined);
    assert.notEqual(ready?.status, 200, 'a refused proxy must not report ready');
  });
});
