// The kind workflow, checked where it cannot run (no Docker here): .github/workflows/kind-e2e.yaml runs
// hack/kind-up.sh, which installs gw with helm — charts/gw-crds, then charts/gw as release gw in
// gw-system with hack/kind/values.yaml — instead of the hand-written manifests it used to apply. The
// helm commands are read from the script; the values lint strict and render the images the script
// loads into the nodes, and the scripts and the kind suite name the chart's Deployment.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, describe, test } from 'node:test';
import { parse, parseAllDocuments } from 'yaml';
import { CHARTS, helm } from './support/helm.ts';

const root = resolve(import.meta.dirname, '..');
const read = (p: string) => readFileSync(join(root, p), 'utf8');
const home = mkdtempSync(join(tmpdir(), 'gw-kind-helm-'));
after(() => rmSync(home, { recursive: true, force: true }));

/** The `"$helm" …` commands of hack/kind-up.sh (continuation lines joined), as argument lists. */
function helmCommands(script: string): string[][] {
  const joined = script.replace(/\\\n\s*/g, ' ');
  return joined
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.startsWith('"$helm" '))
    .map((l) =>
      l
        .split(/\s+/)
        .slice(1)
        .map((a) => a.replace(/^"|"$/g, '').replace('$root', root)),
    );
}

describe('the kind workflow installs the charts', () => {
  const script = read('hack/kind-up.sh');
  const commands = helmCommands(script).filter((c) => c[0] === 'upgrade');

  test('the workflow runs hack/kind-up.sh, hack/kind-e2e.sh and hack/kind-conformance.sh', () => {
    const wf = parse(read('.github/workflows/kind-e2e.yaml')) as {
      jobs: Record<string, { steps: { run?: string }[] }>;
    };
    const runs = Object.values(wf.jobs).flatMap((j) => j.steps.flatMap((s) => (s.run ? [s.run.trim()] : [])));
    for (const s of ['hack/kind-up.sh', 'hack/kind-e2e.sh', 'hack/kind-conformance.sh'])
      assert.ok(runs.includes(s), `the workflow runs ${s}`);
  });

  test('hack/kind-up.sh: helm upgrade --install of gw-crds, then of gw in gw-system with hack/kind/values.yaml', () => {
    assert.deepEqual(
      commands.map((c) => c.slice(0, 4)),
      [
        ['upgrade', '--install', 'gw-crds', join(CHARTS, 'gw-crds')],
        ['upgrade', '--install', 'gw', join(CHARTS, 'gw')],
      ],
    );
    const gw = commands[1] ?? [];
    assert.deepEqual(gw.slice(4), [
      '--namespace',
      'gw-system',
      '--create-namespace',
      '--values',
      join(root, 'hack/kind/values.yaml'),
    ]);
    // helm is the one the tests use
    assert.match(script, /^helm=\$\("\$root\/hack\/helm\/build\.sh"\)$/m);
  });

  test('the chart lints strict with those values', async () => {
    for (const c of commands) {
      const chart = c[3] as string;
      const values = c.includes('--values') ? ['--values', c[c.indexOf('--values') + 1] as string] : [];
      const r = await helm(['lint', '--strict', chart, ...values], { home });
      assert.equal(r.code, 0, r.stdout + r.stderr);
    }
  });

  test('helm template with those values: the loaded images, never pulled, and proxies on a ClusterIP Service', async () => {
    const gw = commands[1] as string[];
    const r = await helm(['template', ...gw.slice(2)], { home });
    assert.equal(r.code, 0, r.stderr);
    type Deployment = {
      kind: string;
      metadata: { name: string; namespace: string };
      spec: {
        template: { spec: { containers: { image: string; imagePullPolicy: string; args: string[] }[] } };
      };
    };
    const objects = parseAllDocuments(r.stdout)
      .map((d) => d.toJS() as Deployment | null)
      .filter((o): o is Deployment => o !== null);
    const dep = objects.find((o) => o.kind === 'Deployment');
    assert.deepEqual([dep?.metadata.name, dep?.metadata.namespace], ['gw', 'gw-system']);
    const c = dep?.spec.template.spec.containers[0];
    assert.equal(c?.image, 'gw-controller:dev');
    assert.equal(c?.imagePullPolicy, 'Never');
    for (const arg of [
      '--proxy-image=gw-proxy:dev',
      '--proxy-service-type=ClusterIP',
      '--xds-mode=tls',
      '--proxy-xds-address=https://gw.gw-system.svc:9978',
    ])
      assert.ok(c?.args.includes(arg), `${arg} in ${c?.args.join(' ')}`);
  });

  test('the hand-written manifests are gone and nothing names them or their controller Deployment', () => {
    for (const gone of ['hack/kind/controller.yaml', 'hack/kind/proxy-for-gateway.sh'])
      assert.ok(!existsSync(join(root, gone)), `${gone} still exists`);
    for (const file of [
      'hack/kind-up.sh',
      'hack/kind-e2e.sh',
      'hack/kind-conformance.sh',
      'hack/kind/lib.sh',
      '.github/workflows/kind-e2e.yaml',
      'e2e/controller.kind.test.ts',
    ]) {
      const text = read(file);
      assert.doesNotMatch(text, /controller\.yaml|proxy-for-gateway/, file);
      // the chart's Deployment is gw (the release's name), not gw-controller
      assert.doesNotMatch(text, /deployment\/gw-controller/, file);
    }
  });
});
