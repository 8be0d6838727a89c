// GwParameters applied to the rendered proxy objects: typed fields (class, then gateway), overlays
// (class, then gateway) as strategic merge patches, a DaemonSet workload and a PodDisruptionBudget.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parametersOf } from '../translator/parameters.ts';
import type { KubeObject } from '../translator/types.ts';
import { applyParameters } from './parameters.ts';
import { renderProxy } from './render.ts';

const gateway: KubeObject = {
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'Gateway',
  metadata: { name: 'edge', namespace: 'team', uid: 'u-1' },
  spec: {
    gatewayClassName: 'gw',
    infrastructure: { parametersRef: { group: 'gw.dev', kind: 'GwParameters', name: 'edge-params' } },
  },
};
const rendered = () =>
  renderProxy(gateway, [{ port: 8080, protocol: 'HTTP' }], {
    image: 'ghcr.io/example/gw:1.0',
    xdsAddress: 'http://x:9978',
  });
type Container = {
  image: string;
  imagePullPolicy?: string;
  env: { name: string; value?: string }[];
  resources?: unknown;
};
const container = (o: KubeObject | undefined) =>
  ((o as KubeObject).spec as { template: { spec: { containers: Container[] } } }).template.spec
    .containers[0] as Container;

test('typed fields: the gateway’s win over the class’s; image parts replace the default’s', () => {
  const out = applyParameters(rendered(), {
    class: {
      image: { registry: 'registry.corp:5000', tag: '2.0' },
      logging: { level: 'warn' },
      env: [{ name: 'A', value: 'class' }],
    },
    gateway: {
      image: { tag: '2.1', pullPolicy: 'Always' },
      logging: { format: 'json' },
      env: [{ name: 'A', value: 'gateway' }],
      resources: { limits: { memory: '1Gi' } },
      shutdown: { max: '1m30s' },
    },
  });
  const dep = out.find((o) => o.kind === 'Deployment');
  const c = container(dep);
  assert.equal(c.image, 'registry.corp:5000/example/gw:2.1');
  assert.equal(c.imagePullPolicy, 'Always');
  const env = Object.fromEntries(c.env.filter((e) => e.value !== undefined).map((e) => [e.name, e.value]));
  assert.deepEqual(env, { GW_LOG: 'warn', GW_LOG_FORMAT: 'json', A: 'gateway' });
  assert.deepEqual(c.resources, { limits: { memory: '1Gi' } });
  assert.equal(
    ((dep as KubeObject).spec as { template: { spec: { terminationGracePeriodSeconds: number } } }).template
      .spec.terminationGracePeriodSeconds,
    90,
  );
});

test('overlays after typed fields, class then gateway; a DaemonSet workload; a PodDisruptionBudget when asked', () => {
  const out = applyParameters(rendered(), {
    class: {
      workload: 'DaemonSet',
      daemonSet: {
        metadata: { labels: { tier: 'edge' } },
        spec: { template: { spec: { nodeSelector: { role: 'ingress' } } } },
      },
      service: { metadata: { annotations: { 'lb.example/internal': 'true' } }, spec: { type: 'ClusterIP' } },
    },
    gateway: {
      daemonSet: {
        spec: {
          template: {
            spec: {
              nodeSelector: { role: 'edge' },
              containers: [{ name: 'gw', env: [{ name: 'POD_NAME', $patch: 'delete' }] }],
            },
          },
        },
      },
      podDisruptionBudget: { spec: { minAvailable: null, maxUnavailable: 1 } },
      serviceAccount: {
        metadata: { annotations: { 'iam.example/role': 'gw' } },
        spec: { imagePullSecrets: [{ name: 'regcred' }] },
      },
    },
  });
  assert.deepEqual(
    out.map((o) => o.kind),
    ['ServiceAccount', 'Secret', 'Service', 'DaemonSet', 'PodDisruptionBudget'],
  );
  const ds = out[3] as KubeObject;
  assert.equal((ds.spec as { replicas?: number }).replicas, undefined);
  assert.equal(ds.metadata.labels?.tier, 'edge');
  assert.deepEqual(
    (ds.spec as { template: { spec: { nodeSelector: unknown } } }).template.spec.nodeSelector,
    { role: 'edge' },
  );
  assert.deepEqual(
    container(ds).env.map((e) => e.name),
    ['POD_NAMESPACE', 'SESSION_KEY'],
  );
  assert.deepEqual(((out[4] as KubeObject).spec as Record<string, unknown>).maxUnavailable, 1);
  assert.equal(((out[4] as KubeObject).spec as Record<string, unknown>).minAvailable, undefined);
  assert.equal(((out[2] as KubeObject).spec as { type: string }).type, 'ClusterIP');
  assert.deepEqual((out[0] as unknown as { imagePullSecrets: unknown }).imagePullSecrets, [
    { name: 'regcred' },
  ]);
});

test('parametersOf: the class’s ref (any namespace) and the gateway’s (its own namespace), gw.dev/GwParameters only', () => {
  const objects: Record<string, KubeObject> = {
    'gw-system/class-params': {
      apiVersion: 'gw.dev/v1alpha1',
      kind: 'GwParameters',
      metadata: { name: 'class-params', namespace: 'gw-system' },
      spec: { logging: { level: 'debug' } },
    },
    'team/edge-params': {
      apiVersion: 'gw.dev/v1alpha1',
      kind: 'GwParameters',
      metadata: { name: 'edge-params', namespace: 'team' },
      spec: { workload: { kind: 'DaemonSet' }, shutdown: { min: 5, max: 90 } },
    },
  };
  const gwClass: KubeObject = {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'GatewayClass',
    metadata: { name: 'gw' },
    spec: {
      parametersRef: { group: 'gw.dev', kind: 'GwParameters', name: 'class-params', namespace: 'gw-system' },
    },
  };
  const p = parametersOf(gwClass, gateway, (ns, name) => objects[`${ns}/${name}`]);
  // the resource's shapes (workload.kind, shutdown in seconds) as the deployer reads them
  assert.deepEqual(p, {
    class: { logging: { level: 'debug' } },
    gateway: { workload: 'DaemonSet', shutdown: { min: '5s', max: '90s' } },
  });
  const other = { ...gwClass, spec: { parametersRef: { group: 'example.com', kind: 'Config', name: 'x' } } };
  assert.deepEqual(
    parametersOf(other, { ...gateway, spec: {} }, () => undefined),
    {},
  );
});

test('shutdown: the grace period is max, raised to min past it (or past the 30 s default)', () => {
  const grace = (p: Parameters<typeof applyParameters>[1]) => {
    const dep = applyParameters(rendered(), p).find((o) => o.kind === 'Deployment') as KubeObject;
    return (dep.spec as { template: { spec: { terminationGracePeriodSeconds: number } } }).template.spec
      .terminationGracePeriodSeconds;
  };
  assert.equal(grace({}), 30);
  assert.equal(grace({ gateway: { shutdown: { min: '5s', max: '1m' } } }), 60);
  assert.equal(grace({ gateway: { shutdown: { min: '5s' } } }), 30);
  assert.equal(grace({ class: { shutdown: { min: '45s' } } }), 45);
  // each field the gateway's, else the class's: the class's min outlasts the gateway's max
  assert.equal(grace({ class: { shutdown: { min: '2m' } }, gateway: { shutdown: { max: '1m' } } }), 120);
  assert.equal(grace({ gateway: { shutdown: { max: '1500ms' } } }), 2);
});

test('istio, spiffe and modelCatalog leave the objects as they are (the Gateway status names them)', () => {
  const plain = applyParameters(rendered(), {});
  const asked = applyParameters(rendered(), {
    class: { modelCatalog: { enabled: true } },
    gateway: {
      istio: { enabled: true, caAddress: 'https://istiod.istio-system.svc:15012' },
      spiffe: { enabled: true, socketPath: '/run/spire/sockets/agent.sock' },
      modelCatalog: { configMapRef: { name: 'costs' } },
    },
  });
  assert.deepEqual(asked, plain);
});

test('an image digest, resource claims and a HorizontalPodAutoscaler that takes over the replicas', () => {
  const digest = `sha256:${'ab'.repeat(32)}`;
  const out = applyParameters(rendered(), {
    class: {
      image: { repository: 'mirror/gw', digest },
      horizontalPodAutoscaler: { spec: { maxReplicas: 4 } },
    },
    gateway: {
      resources: { requests: { cpu: '1' }, claims: [{ name: 'gpu', request: 'small' }] },
      horizontalPodAutoscaler: {
        metadata: { labels: { team: 'edge' } },
        spec: { minReplicas: 2, metrics: [{ type: 'Resource', resource: { name: 'cpu' } }] },
      },
    },
  });
  const dep = out.find((o) => o.kind === 'Deployment') as KubeObject;
  const c = container(dep);
  // the registry of the default image stays, the repository is replaced, the digest is what is pulled
  assert.equal(c.image, `ghcr.io/mirror/gw@${digest}`);
  assert.deepEqual(c.resources, { requests: { cpu: '1' }, claims: [{ name: 'gpu', request: 'small' }] });
  assert.equal((dep.spec as { replicas?: number }).replicas, undefined);
  const hpa = out.find((o) => o.kind === 'HorizontalPodAutoscaler') as KubeObject;
  assert.equal(hpa.apiVersion, 'autoscaling/v2');
  const owners = (o: KubeObject) => (o.metadata as { ownerReferences?: unknown }).ownerReferences;
  assert.deepEqual(owners(hpa), owners(dep));
  assert.equal(hpa.metadata.labels?.team, 'edge');
  assert.deepEqual(hpa.spec, {
    scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'edge' },
    minReplicas: 2,
    maxReplicas: 4,
    metrics: [{ type: 'Resource', resource: { name: 'cpu' } }],
  });
  // a tag beside the digest is kept (the digest still decides); without an autoscaler, replicas stay
  const tagged = applyParameters(rendered(), { gateway: { image: { tag: '2.0', digest } } });
  const plain = tagged.find((o) => o.kind === 'Deployment') as KubeObject;
  assert.equal(container(plain).image, `ghcr.io/example/gw:2.0@${digest}`);
  assert.equal((plain.spec as { replicas?: number }).replicas, 1);
  assert.ok(!tagged.some((o) => o.kind === 'HorizontalPodAutoscaler'));
  // a DaemonSet has no autoscaler (the CRD refuses the pair; the deployer makes none either)
  const ds = applyParameters(rendered(), {
    gateway: { workload: 'DaemonSet', horizontalPodAutoscaler: { spec: { maxReplicas: 3 } } },
  });
  assert.ok(!ds.some((o) => o.kind === 'HorizontalPodAutoscaler'));
});
