// A cluster without every Gateway API CRD the controller can read: the real API server with the
// standard channel's CRDs less GRPCRoute and ListenerSet (as an older Gateway API release has). The
// controller must still reconcile (it used to wait for those lists for ever, so nothing got a
// status), say once which kinds it cannot read, and read a CRD installed later without a restart.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { gatewayApiCrdDir, type KubeHarness, startKube } from '@gw/testkit';
import { gatewayYaml, routeAccepted, routeYaml } from './support/controller-e2e.ts';
import {
  type ControllerProcess,
  kubectlOk,
  startController,
  untilWithLogs,
} from './support/controller-process.ts';

let kube: KubeHarness;
let controller: ControllerProcess;
let standard: string;
const kubectl = kubectlOk(() => kube);
const until = untilWithLogs(() => [['controller log', controller?.log ?? []]]);
const LEFT_OUT = ['gateway.networking.k8s.io_grpcroutes.yaml', 'gateway.networking.k8s.io_listenersets.yaml'];

before(async () => {
  standard = join(await gatewayApiCrdDir(), 'standard');
  const files = readdirSync(standard)
    .filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml' && !f.includes('_vap_'))
    .filter((f) => !LEFT_OUT.includes(f))
    .map((f) => join(standard, f));
  kube = await startKube({
    gatewayApi: false,
    crdDirs: [...files, resolve(import.meta.dirname, '../crds')],
  });
  controller = await startController(kube.kubeconfig);
});

after(async () => {
  await controller?.stop();
  await kube?.stop();
});

test('without the GRPCRoute and ListenerSet CRDs the controller reconciles, and says once why it skips them', async () => {
  await kubectl(['apply', '--server-side', '-f', '-'], gatewayYaml('default', 18080));
  await kubectl(
    ['apply', '--server-side', '-f', '-'],
    routeYaml('default', '{ group: "", kind: Service, name: missing, port: 80 }'),
  );
  const accepted = await until('the HTTPRoute status', () => routeAccepted(kubectl, 'httproute/web'));
  assert.equal(accepted, 'True');
  const warned = (kind: string) =>
    controller.log
      .join('')
      .split('\n')
      .filter((l) => l.includes('does not serve this kind') && l.includes(`"kind":"${kind}"`));
  // the controller's stdout reaches the test on its own schedule: wait for the lines, then count
  await until('the warnings for the kinds left out', async () =>
    warned('GRPCRoute').length > 0 && warned('ListenerSet').length > 0 ? true : undefined,
  );
  assert.equal(warned('GRPCRoute').length, 1, controller.log.join(''));
  assert.equal(warned('ListenerSet').length, 1, controller.log.join(''));
  const failed = controller.log
    .join('')
    .split('\n')
    .filter((l) => l.includes('watch failed') && /"kind":"(GRPCRoute|ListenerSet)"/.test(l));
  assert.deepEqual(failed, [], 'no watch error for a kind left out');
});

test('a CRD installed later is read without a restart: its routes get a status', async () => {
  await kubectl([
    'apply',
    '--server-side',
    '-f',
    join(standard, 'gateway.networking.k8s.io_grpcroutes.yaml'),
  ]);
  await kubectl(['wait', '--for', 'condition=Established', 'crd/grpcroutes.gateway.networking.k8s.io']);
  await kubectl(
    ['apply', '--server-side', '-f', '-'],
    `apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: { name: rpc, namespace: default }
spec:
  parentRefs: [{ name: edge }]
  rules:
    - backendRefs: [{ name: missing, port: 9000 }]
`,
  );
  // the controller asks for an absent kind every 10 s
  const accepted = await until('the GRPCRoute status', () => routeAccepted(kubectl, 'grpcroute/rpc'), 40_000);
  assert.equal(accepted, 'True');
  await until('the controller to say the kind is served now', async () =>
    controller.log.join('').includes('the API server serves this kind now') ? true : undefined,
  );
});

test("a BackendTLSPolicy's status is written on the real API server: an ancestor per Gateway, its CA named when missing", async () => {
  await kubectl(
    ['apply', '--server-side', '-f', '-'],
    `apiVersion: v1
kind: Service
metadata: { name: api, namespace: default }
spec:
  ports: [{ name: https, port: 443 }]
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: { name: api-tls, namespace: default }
spec:
  targetRefs: [{ group: "", kind: Service, name: api }]
  validation:
    caCertificateRefs: [{ group: "", kind: ConfigMap, name: api-ca }]
    hostname: api.internal
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: api, namespace: default }
spec:
  parentRefs: [{ name: edge }]
  hostnames: [api.example.com]
  rules:
    - backendRefs: [{ name: api, port: 443 }]
`,
  );
  const resolved = () =>
    kubectl([
      'get',
      'backendtlspolicy',
      'api-tls',
      '-o',
      'jsonpath={.status.ancestors[0].ancestorRef.name} {.status.ancestors[0].conditions[?(@.type=="ResolvedRefs")].reason}',
    ]);
  assert.equal(
    // both fields, not the space between two empty ones while there is no status yet
    await until('the BackendTLSPolicy status', async () => {
      const r = await resolved();
      return /^\S+ \S+$/.test(r) ? r : undefined;
    }),
    'edge InvalidCACertificateRef',
  );
  const pem = '-----BEGIN CERTIFICATE-----\nMIIBtest\n-----END CERTIFICATE-----\n';
  await kubectl(['create', 'configmap', 'api-ca', `--from-literal=ca.crt=${pem}`]);
  assert.equal(
    await until('ResolvedRefs once the CA is there', async () => {
      const r = await resolved();
      return r.endsWith(' ResolvedRefs') ? r : undefined;
    }),
    'edge ResolvedRefs',
  );
});
