// Installing gw with Helm on the real API server (startKube): `helm install gw-crds charts/gw-crds` and
// `helm install gw charts/gw`, then gw-controller started with exactly the arguments and environment of
// the Deployment helm created — there is no kubelet here, so the test is the kubelet: the downward API
// values are filled in and the in-cluster service account becomes a kubeconfig holding a token the API
// server issued for the chart's ServiceAccount, so the controller runs under the chart's RBAC and
// nothing more. It reconciles a Gateway (status, provisioned proxy objects, pruning), and
// `helm uninstall` of both releases leaves none of their objects behind.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type KubeHarness, startKube } from '@gw/testkit';
import { parseAllDocuments } from 'yaml';
import { conditionStatus, gatewayYaml, until as poll } from './support/controller-e2e.ts';
import { freePort } from './support/gw-process.ts';
import { CHARTS, helm as runHelm } from './support/helm.ts';

const CONTROLLER_BIN = resolve(import.meta.dirname, '../bin/gw-controller');
const NS = 'gw-system';

let kube: KubeHarness;
let home: string;
let controller: ChildProcess | undefined;
const controllerLog: string[] = [];
let ports: { xds: number; health: number; metrics: number };

async function helm(...args: string[]): Promise<string> {
  const r = await runHelm(args, { kubeconfig: kube.kubeconfig, home });
  assert.equal(r.code, 0, `helm ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}
async function kubectl(args: string[], input?: string): Promise<string> {
  const r = await kube.kubectl(args, input === undefined ? {} : { input });
  assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}
async function getJson<T>(args: string[]): Promise<T | undefined> {
  const r = await kube.kubectl([...args, '-o', 'json']);
  return r.code === 0 ? (JSON.parse(r.stdout) as T) : undefined;
}
const until = <T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> =>
  poll(what, fn, { timeoutMs, context: () => `\ncontroller log:\n${controllerLog.slice(-20).join('')}` });

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { fieldRef?: { fieldPath: string } };
}
interface Container {
  name: string;
  args: string[];
  env: EnvVar[];
  ports: { name: string; containerPort: number }[];
  readinessProbe: { httpGet: { path: string; port: string } };
  livenessProbe: { httpGet: { path: string; port: string } };
}
interface Deployment {
  kind: 'Deployment';
  metadata: { name: string; namespace: string };
  spec: { template: { spec: { serviceAccountName: string; containers: Container[] } } };
}
interface Conditions {
  status?: { conditions?: { type: string; status: string }[] };
}

/** The kubelet's part: the container's env with the downward API fields of a pod named `pod`. */
function containerEnv(c: Container, pod: string): Record<string, string> {
  const fields: Record<string, string> = { 'metadata.namespace': NS, 'metadata.name': pod };
  const env: Record<string, string> = {};
  for (const e of c.env) {
    const field = e.valueFrom?.fieldRef?.fieldPath;
    const v = e.value ?? (field ? fields[field] : undefined);
    assert.ok(v !== undefined, `env ${e.name}: only values and these downward API fields are mapped here`);
    env[e.name] = v;
  }
  return env;
}

/** What the chart's objects are, by the release label, in every kind it makes. */
const CHART_KINDS =
  'serviceaccounts,secrets,services,deployments,roles,rolebindings,clusterroles,clusterrolebindings,gatewayclasses,customresourcedefinitions';
async function releaseObjects(release: string): Promise<string[]> {
  const out = await kubectl([
    'get',
    CHART_KINDS,
    '--all-namespaces',
    '-l',
    `app.kubernetes.io/instance=${release}`,
    '-o',
    'name',
  ]);
  return out.split('\n').filter(Boolean).sort();
}

before(async () => {
  home = mkdtempSync(join(tmpdir(), 'gw-helm-e2e-'));
  // The Gateway API CRDs as a cluster would have them; the gw.dev ones come from the gw-crds chart.
  [kube, ports] = await Promise.all([
    startKube({ crdDirs: [] }),
    (async () => ({ xds: await freePort(), health: await freePort(), metrics: await freePort() }))(),
  ]);
});

after(async () => {
  if (controller && controller.exitCode === null) {
    const exited = new Promise((r) => controller?.once('exit', r));
    controller.kill('SIGTERM');
    await exited;
  }
  await kube?.stop();
  rmSync(home, { recursive: true, force: true });
});

describe('helm install, the controller under the chart’s RBAC, helm uninstall', () => {
  let deployment: Deployment;

  test('helm install gw-crds and gw', async () => {
    await helm('install', 'gw-crds', join(CHARTS, 'gw-crds'));
    await kubectl([
      'wait',
      '--for=condition=Established',
      'crd',
      '-l',
      'app.kubernetes.io/instance=gw-crds',
      '--timeout=30s',
    ]);
    // the controller's ports moved off the defaults: tests bind free ports only
    await helm(
      'install',
      'gw',
      join(CHARTS, 'gw'),
      '--namespace',
      NS,
      '--create-namespace',
      '--set',
      `controller.service.ports.agwGrpc=${ports.xds},controller.service.ports.health=${ports.health},controller.service.ports.metrics=${ports.metrics}`,
    );
    const manifest = parseAllDocuments(await helm('get', 'manifest', 'gw', '--namespace', NS)).map(
      (d) => d.toJS() as { kind: string } | null,
    );
    const d = manifest.find((o): o is Deployment => o?.kind === 'Deployment');
    assert.ok(d, 'the release has a Deployment');
    deployment = d;
    assert.deepEqual(
      (await releaseObjects('gw')).filter((n) => !n.includes('rbac')),
      [
        'deployment.apps/gw',
        'gatewayclass.gateway.networking.k8s.io/gw',
        // created empty for the controller's own xDS CA (controller.xds.mode tls by default)
        'secret/gw-xds-ca',
        'service/gw',
        'serviceaccount/gw',
      ],
    );
    assert.equal((await releaseObjects('gw-crds')).length, 4);
  });

  test('the controller starts with the Deployment’s args and env and its ServiceAccount’s token', async () => {
    const pod = deployment.spec.template.spec;
    const c = pod.containers[0];
    assert.ok(c);
    assert.ok(c.args.includes(`--proxy-xds-address=https://gw.${NS}.svc:${ports.xds}`), c.args.join(' '));
    assert.ok(c.args.includes('--xds-mode=tls'), c.args.join(' '));
    assert.ok(c.args.includes('--xds-token-audience=gw-xds'));
    const token = (
      await kubectl(['create', 'token', pod.serviceAccountName, '--namespace', NS, '--duration=1h'])
    ).trim();
    // In a pod: the mounted token and KUBERNETES_SERVICE_HOST; here a kubeconfig with the same token.
    const kubeconfig = join(home, 'in-cluster.kubeconfig');
    writeFileSync(
      kubeconfig,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [
          {
            name: 'in-cluster',
            cluster: {
              server: kube.server,
              'certificate-authority-data': Buffer.from(kube.ca).toString('base64'),
            },
          },
        ],
        users: [{ name: `system:serviceaccount:${NS}:${pod.serviceAccountName}`, user: { token } }],
        contexts: [
          {
            name: 'in-cluster',
            context: { cluster: 'in-cluster', user: `system:serviceaccount:${NS}:${pod.serviceAccountName}` },
          },
        ],
        'current-context': 'in-cluster',
      }),
    );
    // that identity is the chart's grants and no more (reads are list/watch only, no get)
    const can = async (...a: string[]) => {
      const r = await kube.kubectl(['--token', token, 'auth', 'can-i', ...a]);
      return `${r.stdout.trim()}${r.stderr ? ` (${r.stderr.trim()})` : ''}`;
    };
    assert.equal(await can('list', 'secrets', '--all-namespaces'), 'yes');
    assert.equal(await can('get', 'secrets', '--namespace', 'default'), 'no');
    // the one Secret it keeps its xDS CA in, and no other
    assert.equal(await can('update', 'secret/gw-xds-ca', '--namespace', NS), 'yes');
    assert.equal(await can('get', 'secret/other', '--namespace', NS), 'no');
    assert.equal(await can('delete', 'gateways.gateway.networking.k8s.io', '--namespace', 'default'), 'no');
    assert.equal(
      await can(
        'patch',
        'gateways.gateway.networking.k8s.io',
        '--subresource=status',
        '--namespace',
        'default',
      ),
      'yes',
    );
    const env = containerEnv(c, 'gw-7d4b9c-x2x5q');
    assert.equal(env['POD_NAMESPACE'], NS);
    controller = spawn(CONTROLLER_BIN, c.args, {
      env: { PATH: process.env['PATH'] ?? '', HOME: home, ...env, KUBECONFIG: kubeconfig },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    controller.stderr?.on('data', (b: Buffer) => controllerLog.push(b.toString()));
    // the probes the Deployment declares, on the port it names
    const port = (name: string) => c.ports.find((p) => p.name === name)?.containerPort;
    assert.equal(port(c.readinessProbe.httpGet.port), ports.health);
    await until('the readiness probe', async () => {
      const r = await fetch(`http://127.0.0.1:${ports.health}${c.readinessProbe.httpGet.path}`).catch(
        () => undefined,
      );
      return r?.status === 200 ? true : undefined;
    });
    const live = await fetch(
      `http://127.0.0.1:${port(c.livenessProbe.httpGet.port)}${c.livenessProbe.httpGet.path}`,
    );
    assert.equal(live.status, 200);
    const metrics = await fetch(`http://127.0.0.1:${port('metrics')}/metrics`);
    assert.match(await metrics.text(), /gw_controller_translations_total/);
  });

  test('it accepts the chart’s GatewayClass, reconciles a Gateway and provisions its proxy', async () => {
    await until('GatewayClass gw Accepted', async () => {
      const gc = await getJson<Conditions>(['get', 'gatewayclass', 'gw']);
      return conditionStatus(gc?.status?.conditions, 'Accepted') === 'True' ? true : undefined;
    });
    await kubectl(['apply', '--server-side', '-f', '-'], gatewayYaml('default', 8080));
    for (const kind of ['serviceaccount', 'service', 'deployment']) {
      await until(`the proxy ${kind}`, () => getJson(['get', kind, 'edge', '--namespace', 'default']));
    }
    const dep = await getJson<{
      spec: { template: { spec: { containers: { image: string; args: string[] }[] } } };
    }>(['get', 'deployment', 'edge', '--namespace', 'default']);
    const proxy = dep?.spec.template.spec.containers[0];
    assert.equal(proxy?.image, 'ghcr.io/gw-dev/gw-proxy:0.1.0');
    assert.deepEqual(proxy?.args.slice(0, 2), ['--xds-address', `https://gw.${NS}.svc:${ports.xds}`]);
    // the CA the controller stored in the chart's Secret reaches the proxy
    const secret = await getJson<{ data?: Record<string, string> }>(['get', 'secret', 'gw-xds-ca', '-n', NS]);
    const ca = Buffer.from(secret?.data?.['ca.crt'] ?? '', 'base64').toString();
    assert.match(ca, /BEGIN CERTIFICATE/);
    const cm = await until('the xDS CA ConfigMap', () =>
      getJson<{ data?: Record<string, string> }>([
        'get',
        'configmap',
        'edge-xds-ca',
        '--namespace',
        'default',
      ]),
    );
    assert.equal(cm.data?.['ca.crt'], ca);
    assert.ok(proxy?.args.includes('--xds-ca-file'), proxy?.args.join(' '));
    await until('Gateway edge Accepted', async () => {
      const gw = await getJson<Conditions>(['get', 'gateway', 'edge', '--namespace', 'default']);
      return conditionStatus(gw?.status?.conditions, 'Accepted') === 'True' ? true : undefined;
    });
    // deleting the Gateway prunes its proxy (the API server here has no garbage collector)
    await kubectl(['delete', 'gateway', 'edge', '--namespace', 'default']);
    await until('the proxy objects pruned', async () => {
      const left = await kubectl([
        'get',
        'serviceaccounts,secrets,configmaps,services,deployments',
        '--namespace',
        'default',
        '-l',
        'app.kubernetes.io/managed-by=gw-controller',
        '-o',
        'name',
      ]);
      return left.trim() === '' ? true : undefined;
    });
    // a watch of a CRD installed a moment ago may meet its storage still starting (429): retried
    const warnings = controllerLog
      .join('')
      .match(/.*"level":"(warn|error)".*/g)
      ?.filter((l) => !l.includes('storage is (re)initializing'));
    assert.deepEqual(warnings ?? [], [], 'the controller warned');
    const denied = controllerLog.join('').match(/.*(forbidden|HTTP 403).*/i);
    assert.equal(denied, null, `the chart's RBAC refused the controller: ${denied?.[0]}`);
  });

  test('helm uninstall leaves nothing of either release behind', async () => {
    await helm('uninstall', 'gw', '--namespace', NS, '--wait');
    // the kubelet would stop the pod of the deleted Deployment
    assert.ok(controller && controller.exitCode === null, 'the controller is still running');
    const exited = new Promise<number | null>((r) => controller?.once('exit', r));
    controller.kill('SIGTERM');
    // the controller bounds its own graceful stop (10 s) and names the step that overran it
    assert.equal(await exited, 0, `the controller's stop:\n${controllerLog.slice(-10).join('')}`);
    await helm('uninstall', 'gw-crds', '--wait');
    assert.deepEqual(await releaseObjects('gw'), []);
    assert.deepEqual(await releaseObjects('gw-crds'), []);
    assert.equal((await kubectl(['get', 'crd', '-o', 'name'])).includes('gw.dev'), false);
    assert.equal(await kubectl(['get', 'gatewayclasses', '-o', 'name']), '');
    assert.equal((await helm('list', '--all-namespaces', '--short')).trim(), '');
  });
});
