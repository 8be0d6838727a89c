import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { type KubeHarness, startKube } from './kube.ts';

const gatewayCrds = [
  'gateways',
  'httproutes',
  'listenersets',
  'gatewayclasses',
  'referencegrants',
  'grpcroutes',
];

describe('startKube', () => {
  let kube: KubeHarness;

  // The first run on a machine builds the apiserver (minutes); afterwards it takes seconds.
  before(
    async () => {
      kube = await startKube();
    },
    { timeout: 30 * 60_000 },
  );

  after(() => kube?.stop());

  test('serves the pinned Kubernetes version', async () => {
    const r = await kube.kubectl(['version', '-o', 'json']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).serverVersion.gitVersion, 'v1.36.3');
  });

  test('the Gateway API CRDs are Established', async () => {
    const names = gatewayCrds.map((n) => `${n}.gateway.networking.k8s.io`);
    const r = await kube.kubectl(['get', 'crd', ...names, '-o', 'json']);
    assert.equal(r.code, 0, r.stderr);
    const items = JSON.parse(r.stdout).items as {
      metadata: { name: string };
      status: { conditions: { type: string; status: string }[] };
    }[];
    const established = items
      .filter((c) => c.status.conditions.some((x) => x.type === 'Established' && x.status === 'True'))
      .map((c) => c.metadata.name);
    assert.deepEqual(established.sort(), names.sort());
  });

  test('a GatewayClass, Gateway and HTTPRoute can be applied', async () => {
    const manifest = `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: { name: gw }
spec: { controllerName: gw.dev/controller }
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: web, namespace: default }
spec:
  gatewayClassName: gw
  listeners: [{ name: http, port: 80, protocol: HTTP }]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: api, namespace: default }
spec:
  parentRefs: [{ name: web }]
  rules:
    - matches: [{ path: { type: PathPrefix, value: /api } }]
      backendRefs: [{ name: api, port: 8080 }]
`;
    const applied = await kube.kubectl(['apply', '--server-side', '-f', '-'], { input: manifest });
    assert.equal(applied.code, 0, applied.stderr);
    const got = await kube.kubectl(['get', 'gateway/web', 'httproute/api', '-n', 'default', '-o', 'name']);
    assert.equal(got.code, 0, got.stderr);
    assert.deepEqual(got.stdout.trim().split('\n'), [
      'gateway.gateway.networking.k8s.io/web',
      'httproute.gateway.networking.k8s.io/api',
    ]);
  });

  test('RBAC is enforced: the unprivileged user may not list namespaces, the admin may', async () => {
    const nobody = await kube.kubectl(['--context', 'gw-nobody', 'get', 'namespaces']);
    assert.notEqual(nobody.code, 0);
    assert.match(nobody.stderr, /Forbidden.*User "gw-nobody" cannot list resource "namespaces"/);
    const admin = await kube.kubectl(['get', 'namespaces', '-o', 'name']);
    assert.equal(admin.code, 0, admin.stderr);
    assert.match(admin.stdout, /namespace\/kube-system/);
  });

  test('stop() ends the apiserver and removes its dir', async () => {
    await kube.stop();
    assert.equal(existsSync(kube.dir), false);
    assert.throws(() => process.kill(kube.pid, 0), { code: 'ESRCH' });
  });
});
