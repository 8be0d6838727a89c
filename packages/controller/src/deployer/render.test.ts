// The proxy objects of a Gateway, rendered without an API server: names, labels, owner, ports, the
// command line and the token volume.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeObject } from '../translator/types.ts';
import { GATEWAY_NAME_LABEL, renderProxy, XDS_CA_FILE, XDS_TOKEN_FILE } from './render.ts';

const gateway: KubeObject = {
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'Gateway',
  metadata: { name: 'edge', namespace: 'team', uid: 'u-1' },
};
const settings = { image: 'gw:1', xdsAddress: 'http://gw.gw-system.svc:9978', tokenAudience: 'gw-xds' };

test('ServiceAccount, Service and Deployment named after the Gateway, labelled and owned by it', () => {
  const objects = renderProxy(gateway, [{ port: 8080, protocol: 'HTTP' }], settings);
  assert.deepEqual(
    objects.map((o) => [o.kind, o.metadata.namespace, o.metadata.name]),
    [
      ['ServiceAccount', 'team', 'edge'],
      ['Secret', 'team', 'edge-session-key'],
      ['Service', 'team', 'edge'],
      ['Deployment', 'team', 'edge'],
    ],
  );
  for (const o of objects) {
    assert.equal(o.metadata.labels?.[GATEWAY_NAME_LABEL], 'edge');
    const owner = (o.metadata as { ownerReferences?: { uid: string; controller: boolean }[] })
      .ownerReferences;
    assert.deepEqual(
      owner?.map((r) => [r.uid, r.controller]),
      [['u-1', true]],
    );
  }
});

test('the Service has one port per listener port (LoadBalancer by default); the pod runs gw for its Gateway', () => {
  const [, , svc, dep] = renderProxy(
    gateway,
    [
      { port: 8443, protocol: 'HTTPS' },
      { port: 8080, protocol: 'HTTP' },
      { port: 8443, protocol: 'HTTPS' },
      { port: 5432, protocol: 'TCP' },
      { port: 9443, protocol: 'TLS' },
    ],
    { ...settings, tokenAudience: undefined as unknown as string },
  ) as [KubeObject, KubeObject, KubeObject, KubeObject];
  const spec = svc.spec as { type: string; ports: { port: number; appProtocol: string }[] };
  assert.equal(spec.type, 'LoadBalancer');
  assert.deepEqual(
    spec.ports.map((p) => [p.port, p.appProtocol]),
    [
      [5432, undefined],
      [8080, 'http'],
      [8443, 'https'],
      [9443, undefined],
    ],
  );
  const pod = (dep.spec as { template: { spec: Record<string, unknown> } }).template.spec as {
    containers: { args: string[] }[];
    volumes: { projected: { sources: { serviceAccountToken: Record<string, unknown> }[] } }[];
    automountServiceAccountToken: boolean;
  };
  assert.deepEqual(pod.containers[0]?.args, [
    '--xds-address',
    'http://gw.gw-system.svc:9978',
    '--gateway',
    'team/edge',
    '--xds-token-file',
    XDS_TOKEN_FILE,
  ]);
  assert.equal(pod.automountServiceAccountToken, false);
  // without an audience the token is the API server's own kind
  assert.deepEqual(pod.volumes[0]?.projected.sources[0]?.serviceAccountToken, {
    expirationSeconds: 3600,
    path: 'xds-token',
  });
});

test('with the xDS CA: a ConfigMap holds it, the token volume projects it, the proxy is told where', () => {
  const objects = renderProxy(gateway, [{ port: 8080, protocol: 'HTTP' }], {
    ...settings,
    xdsAddress: 'https://gw.gw-system.svc:9978',
    xdsCa: 'PEM',
  });
  const cm = objects.find((o) => o.kind === 'ConfigMap') as KubeObject & { data: Record<string, string> };
  assert.equal(cm.metadata.name, 'edge-xds-ca');
  assert.deepEqual(cm.data, { 'ca.crt': 'PEM' });
  assert.equal(cm.metadata.labels?.[GATEWAY_NAME_LABEL], 'edge');
  const dep = objects.find((o) => o.kind === 'Deployment') as KubeObject;
  const pod = (dep.spec as { template: { spec: Record<string, unknown> } }).template.spec as {
    containers: { args: string[]; volumeMounts: { mountPath: string }[] }[];
    volumes: { projected: { sources: Record<string, unknown>[] } }[];
  };
  assert.deepEqual(pod.containers[0]?.args.slice(-2), ['--xds-ca-file', XDS_CA_FILE]);
  assert.ok(XDS_CA_FILE.startsWith(`${pod.containers[0]?.volumeMounts[0]?.mountPath}/`));
  assert.deepEqual(pod.volumes[0]?.projected.sources[1], {
    configMap: { name: 'edge-xds-ca', items: [{ key: 'ca.crt', path: 'xds-ca.crt' }] },
  });
  // without a CA: no ConfigMap, no flag
  const plain = renderProxy(gateway, [{ port: 8080, protocol: 'HTTP' }], settings);
  assert.ok(!plain.some((o) => o.kind === 'ConfigMap'));
  assert.ok(!JSON.stringify(plain).includes('--xds-ca-file'));
});

test("the Gateway's spec.infrastructure labels and annotations are on every object and the pods; its own labels win", () => {
  const withInfra: KubeObject = {
    ...gateway,
    spec: {
      infrastructure: {
        labels: { team: 'payments', [GATEWAY_NAME_LABEL]: 'not-this' },
        annotations: { 'example.com/owner': 'payments' },
      },
    },
  };
  const objects = renderProxy(withInfra, [{ port: 8080, protocol: 'HTTP' }], settings);
  for (const o of objects) {
    const meta = o.metadata as { labels?: Record<string, string>; annotations?: Record<string, string> };
    assert.equal(meta.labels?.team, 'payments', o.kind);
    assert.equal(meta.labels?.[GATEWAY_NAME_LABEL], 'edge', o.kind);
    assert.equal(meta.annotations?.['example.com/owner'], 'payments', o.kind);
  }
  const dep = objects.find((o) => o.kind === 'Deployment') as KubeObject;
  const pod = (
    dep.spec as {
      template: { metadata: { labels: Record<string, string>; annotations: Record<string, string> } };
    }
  ).template.metadata;
  assert.equal(pod.labels.team, 'payments');
  assert.equal(pod.labels[GATEWAY_NAME_LABEL], 'edge');
  assert.equal(pod.annotations['example.com/owner'], 'payments');
  // without spec.infrastructure: no annotations at all
  const plain = renderProxy(gateway, [{ port: 8080, protocol: 'HTTP' }], settings);
  assert.ok(plain.every((o) => (o.metadata as { annotations?: unknown }).annotations === undefined));
});
