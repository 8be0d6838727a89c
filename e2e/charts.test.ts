// The Helm charts with a real helm (hack/helm/build.sh): `helm lint` on both, `helm template` of
// charts/gw for each value set in charts/gw/tests/*.values.yaml against its golden
// (*.golden.yaml; REFRESH_GOLDEN=1 rewrites them, review the diff), values.schema.json refusing bad
// values, and the RBAC kept to what the controller's code calls.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { DAEMONSET_KIND, DEPLOYMENT_KIND, MODEL_KIND, WATCHED } from '@gw/controller/provider/kube';
import { parseAllDocuments } from 'yaml';
import { CHARTS, helm } from './support/helm.ts';

const home = mkdtempSync(join(tmpdir(), 'gw-helm-'));
after(() => rmSync(home, { recursive: true, force: true }));
const refresh = process.env['REFRESH_GOLDEN'] === '1';
const TESTS = join(CHARTS, 'gw/tests');

async function template(chart: string, ...args: string[]): Promise<string> {
  const r = await helm(['template', 'gw', join(CHARTS, chart), '--namespace', 'gw-system', ...args], {
    home,
  });
  assert.equal(r.code, 0, `helm template ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}
interface Obj {
  kind: string;
  metadata: { name: string; namespace?: string };
  rules?: Rule[];
}
const objects = (yaml: string) =>
  parseAllDocuments(yaml)
    .map((d) => d.toJS() as Obj | null)
    .filter((o): o is Obj => o !== null);

describe('helm lint', () => {
  for (const chart of ['gw', 'gw-crds']) {
    test(`charts/${chart} lints clean (strict)`, async () => {
      const r = await helm(['lint', '--strict', join(CHARTS, chart)], { home });
      assert.equal(r.code, 0, r.stdout + r.stderr);
      assert.match(r.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
    });
  }
});

describe('helm template goldens (charts/gw/tests)', () => {
  const cases = readdirSync(TESTS)
    .filter((f) => f.endsWith('.values.yaml'))
    .map((f) => f.slice(0, -'.values.yaml'.length))
    .sort();
  test('there are value sets', () => assert.ok(cases.length >= 15, `${cases.length} value sets`));
  for (const name of cases) {
    test(name, async () => {
      const out = await template('gw', '--values', join(TESTS, `${name}.values.yaml`));
      const golden = join(TESTS, `${name}.golden.yaml`);
      if (refresh) writeFileSync(golden, out);
      assert.equal(
        out,
        readFileSync(golden, 'utf8'),
        `${name}: rerun with REFRESH_GOLDEN=1 and review the diff`,
      );
    });
  }
  test('every golden has its value set', () => {
    for (const f of readdirSync(TESTS).filter((f) => f.endsWith('.golden.yaml')))
      assert.ok(cases.includes(f.slice(0, -'.golden.yaml'.length)), `${f} has no .values.yaml`);
  });
  test('gw-crds renders the four gw.dev CRDs, with the keep annotation on request', async () => {
    const crds = objects(await template('gw-crds'));
    assert.deepEqual(crds.map((o) => o.metadata.name).sort(), [
      'gwbackends.gw.dev',
      'gwmodels.gw.dev',
      'gwparameters.gw.dev',
      'gwpolicies.gw.dev',
    ]);
    assert.match(await template('gw-crds', '--set', 'keep=true'), /helm\.sh\/resource-policy: keep/);
  });
});

describe('values.schema.json and the chart refuse bad values', () => {
  const bad: [string, string[], RegExp][] = [
    ['an xDS mode', ['--set', 'controller.xds.mode=mtls'], /xds\/mode.*one of/],
    ['a port', ['--set', 'controller.service.ports.agwGrpc=70000'], /agwGrpc/],
    ['an unknown key', ['--set', 'controller.replicas=2'], /additional properties 'replicas'/],
    ['a proxy Service type', ['--set', 'proxy.serviceType=External'], /serviceType/],
    ['a namespace name', ['--set', 'rbac.gatewayNamespaces[0]=Team_A'], /gatewayNamespaces/],
    ['a misspelt resources field', ['--set', 'resources.limit.memory=1Gi'], /additional properties 'limit'/],
    [
      'a misspelt security context field',
      ['--set', 'securityContext.readOnlyRootFileSystem=true'],
      /additional properties 'readOnlyRootFileSystem'/,
    ],
    [
      'no controller Service and no other xDS address',
      ['--set', 'controller.service.enabled=false'],
      /set proxy\.xdsAddress/,
    ],
  ];
  for (const [what, args, message] of bad) {
    test(what, async () => {
      const r = await helm(['template', 'gw', join(CHARTS, 'gw'), ...args], { home });
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, message);
    });
  }
});

describe('the RBAC is what the controller calls', () => {
  const plural = (path: string) => path.split('/').at(-1) ?? '';
  const group = (apiVersion: string) => (apiVersion.includes('/') ? apiVersion.split('/')[0] : '') ?? '';
  const grants = (rules: Rule[], g: string, resource: string) =>
    new Set(
      rules.filter((r) => r.apiGroups.includes(g) && r.resources.includes(resource)).flatMap((r) => r.verbs),
    );

  test('list and watch on every watched kind, and reads on nothing else', async () => {
    const all = objects(await template('gw', '--set', 'agentgatewayModels.enabled=true,istio.enabled=false'));
    const read = all.find((o) => o.kind === 'ClusterRole' && o.metadata.name === 'gw')?.rules ?? [];
    const watched = [...WATCHED, MODEL_KIND];
    // the deployer's workloads, watched by label for Programmed
    for (const k of [...watched, DEPLOYMENT_KIND, DAEMONSET_KIND]) {
      const verbs = grants(read, group(k.apiVersion), plural(k.path));
      assert.ok(verbs.has('list') && verbs.has('watch'), `${k.kind}: ${[...verbs]}`);
    }
    const readable = read
      .filter((r) => r.verbs.includes('list'))
      .flatMap((r) => r.resources.map((res) => `${r.apiGroups[0]}/${res}`))
      .sort();
    const expected = [
      ...watched.map((k) => `${group(k.apiVersion)}/${plural(k.path)}`),
      // deployer/deployer.ts: the proxies' objects, listed to prune (workloads also watched by label)
      'apps/deployments',
      'apps/daemonsets',
      '/serviceaccounts',
      'policy/poddisruptionbudgets',
      'autoscaling/horizontalpodautoscalers',
    ].sort();
    assert.deepEqual(readable, expected);
    assert.ok(
      read.every((r) => !r.verbs.some((v) => ['get', 'update', 'delete', '*'].includes(v))),
      'no get, update, delete or * cluster-wide',
    );
  });

  test('xDS over TLS with its own CA: get and update on that one Secret of the release namespace, nothing more', async () => {
    const byMode = async (...args: string[]) => objects(await template('gw', ...args));
    const own = await byMode();
    const secret = own.find((o) => o.kind === 'Secret');
    assert.deepEqual([secret?.metadata.name, secret?.metadata.namespace], ['gw-xds-ca', 'gw-system']);
    assert.equal((secret as unknown as { data?: unknown }).data, undefined, 'created empty');
    const role = own.find((o) => o.kind === 'Role' && o.metadata.name === 'gw-xds-ca');
    assert.equal(role?.metadata.namespace, 'gw-system');
    assert.deepEqual(role?.rules, [
      { apiGroups: [''], resources: ['secrets'], resourceNames: ['gw-xds-ca'], verbs: ['get', 'update'] },
    ]);
    // with a certificate Secret, or in plaintext, the chart keeps no CA and grants nothing for one
    for (const args of [
      ['--set', 'controller.xds.tls.secretName=gw-xds-tls'],
      ['--set', 'controller.xds.mode=plaintext'],
    ]) {
      const other = await byMode(...args);
      assert.ok(!other.some((o) => o.metadata.name === 'gw-xds-ca'), args.join(' '));
    }
  });

  test('rbac.gatewayNamespaces turns the writes into a Role per namespace', async () => {
    const all = objects(await template('gw', '--values', join(TESTS, 'gateway-namespaces.values.yaml')));
    const roles = all.filter((o) => o.kind === 'Role' && o.metadata.name === 'gw-write');
    assert.deepEqual(roles.map((o) => o.metadata.namespace).sort(), ['team-a', 'team-b']);
    assert.ok(!all.some((o) => o.kind === 'ClusterRole' && o.metadata.name === 'gw-write'));
    const cluster = all.find((o) => o.kind === 'ClusterRole')?.rules ?? [];
    assert.ok(
      cluster.every((r) => !r.verbs.includes('patch') || r.resources.includes('gatewayclasses/status')),
      'the only cluster-wide patch is the GatewayClass status',
    );
  });
});
