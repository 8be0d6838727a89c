// The deployer on the real API server (startKube): `bin/gw-controller --proxy-image …` provisions each
// Gateway's ServiceAccount, Service and Deployment by server-side apply, and the Deployment it wrote
// works: with no kubelet here, the test starts `bin/gw` with the container's own args, its projected
// token requested from the API server for the Gateway's service account with the volume's audience,
// and sends traffic through it. Then the listener's port changes (the Service follows), the Gateway's
// status.addresses show the Service's cluster IP, and deleting the Gateway prunes its objects.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type KubeHarness, startKube, startUpstream, type TestServer } from '@gw/testkit';
import { gatewayYaml, httpGet, routeYaml } from './support/controller-e2e.ts';
import {
  type ControllerProcess,
  kubectlOk,
  startController,
  untilWithLogs,
} from './support/controller-process.ts';
import { cleanupGw, freePort } from './support/gw-process.ts';
import { type ProvisionedDeployment, startProvisionedProxy } from './support/provisioned-proxy.ts';

const AUDIENCE = 'gw-xds';

let kube: KubeHarness;
let upstream: TestServer;
let controller: ControllerProcess;
let listenerPort: number;

const kubectl = kubectlOk(() => kube);
const until = untilWithLogs(() => [['controller log', controller?.log ?? []]]);

async function getJson<T>(args: string[]): Promise<T | undefined> {
  const r = await kube.kubectl([...args, '-o', 'json']);
  return r.code === 0 ? (JSON.parse(r.stdout) as T) : undefined;
}

interface Meta {
  name: string;
  labels?: Record<string, string>;
  ownerReferences?: { kind: string; name: string; uid: string; controller?: boolean }[];
  managedFields?: { manager: string; operation: string }[];
}
interface Deployment {
  metadata: Meta;
  spec: {
    template: {
      spec: {
        serviceAccountName: string;
        containers: {
          image: string;
          args: string[];
          readinessProbe: { httpGet: { port: number; path: string } };
        }[];
        volumes: {
          projected?: { sources: { serviceAccountToken?: { audience?: string; path: string } }[] };
        }[];
      };
    };
  };
}
interface Service {
  metadata: Meta;
  spec: { type: string; clusterIP?: string; ports: { port: number; targetPort: number }[] };
}

before(async () => {
  [kube, upstream, listenerPort] = await Promise.all([startKube(), startUpstream('provisioned'), freePort()]);
  // provisioned proxies reach this controller's xDS port on loopback
  controller = await startController(kube.kubeconfig, ({ xds }) => [
    ...['--xds-token-audience', AUDIENCE, '--proxy-service-type', 'ClusterIP'],
    ...['--proxy-image', 'registry.example/gw:test', '--proxy-xds-address', `http://127.0.0.1:${xds}`],
  ]);
});

after(async () => {
  await cleanupGw();
  await controller?.stop();
  await upstream?.close();
  await kube?.stop();
});

describe('the deployer provisions and prunes each Gateway’s proxies', () => {
  test('a Gateway gets a ServiceAccount, Service and Deployment, applied by gw-controller and owned by it', async () => {
    await kubectl(
      ['apply', '--server-side', '-f', '-'],
      `${gatewayYaml('default', listenerPort)}
---
apiVersion: gw.dev/v1alpha1
kind: GwBackend
metadata: { name: echo, namespace: default }
spec:
  static: { host: 127.0.0.1, port: ${upstream.port} }
---${routeYaml('default', '{ group: gw.dev, kind: GwBackend, name: echo }')}`,
    );
    const dep = await until('the proxy Deployment', () => getJson<Deployment>(['get', 'deployment', 'edge']));
    const gwUid = (await getJson<{ metadata: { uid: string } }>(['get', 'gateway', 'edge']))?.metadata.uid;
    for (const kind of ['serviceaccount', 'service', 'deployment']) {
      const o = await until(`the ${kind}`, () =>
        getJson<{ metadata: Meta }>(['get', kind, 'edge', '--show-managed-fields']),
      );
      assert.equal(o.metadata.labels?.['gateway.networking.k8s.io/gateway-name'], 'edge', kind);
      assert.deepEqual(
        o.metadata.ownerReferences?.map((r) => [r.kind, r.name, r.uid, r.controller]),
        [['Gateway', 'edge', gwUid, true]],
        kind,
      );
      assert.ok(
        o.metadata.managedFields?.some((f) => f.manager === 'gw-controller' && f.operation === 'Apply'),
        `${kind} is server-side applied by gw-controller`,
      );
    }
    const key = await until('the session-key Secret', () =>
      getJson<{ data?: { key?: string }; metadata: Meta }>(['get', 'secret', 'edge-session-key']),
    );
    // the env var SESSION_KEY is text: 32 random bytes as base64url
    const sessionKey = Buffer.from(key.data?.key ?? '', 'base64').toString();
    assert.match(sessionKey, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(Buffer.from(sessionKey, 'base64url').length, 32, 'a 32-byte random key');
    assert.equal(key.metadata.labels?.['gateway.networking.k8s.io/gateway-name'], 'edge');
    const pod = dep.spec.template.spec;
    assert.equal(pod.serviceAccountName, 'edge');
    assert.equal(pod.containers[0]?.image, 'registry.example/gw:test');
    assert.deepEqual(pod.containers[0]?.readinessProbe.httpGet, {
      path: '/healthz/ready',
      port: 15021,
      scheme: 'HTTP',
    });
    const token = pod.volumes.flatMap((v) => v.projected?.sources ?? [])[0]?.serviceAccountToken;
    assert.deepEqual(token, { audience: AUDIENCE, expirationSeconds: 3600, path: 'xds-token' });
    const svc = await until('the Service', () => getJson<Service>(['get', 'service', 'edge']));
    assert.equal(svc.spec.type, 'ClusterIP');
    assert.deepEqual(
      svc.spec.ports.map((p) => [p.port, p.targetPort]),
      [[listenerPort, listenerPort]],
    );
  });

  test('the rendered Deployment runs: bin/gw with its args and a token for its account serves the route', async () => {
    const dep = (await getJson<Deployment>(['get', 'deployment', 'edge'])) as Deployment;
    // the kubelet's part (the projected token for the pod's account, the args pointed at it), then
    // bin/gw with the container's args
    await startProvisionedProxy(kube, dep as unknown as ProvisionedDeployment);
    const r = await until('traffic through the provisioned proxy', async () => {
      const res = await httpGet(listenerPort, '/hello').catch(() => undefined);
      return res?.status === 200 ? res : undefined;
    });
    assert.match(r.body, /provisioned/);
  });

  test('Programmed waits for the Deployment: False (Pending) with no replica available, True once one is', async () => {
    const programmed = async () => {
      const g = await getJson<{
        status?: { conditions?: { type: string; status: string; reason: string; message: string }[] };
      }>(['get', 'gateway', 'edge']);
      return g?.status?.conditions?.find((c) => c.type === 'Programmed');
    };
    // no kubelet here: the Deployment never gets an available replica by itself
    const pending = await until('Programmed False', async () => {
      const c = await programmed();
      return c?.status === 'False' ? c : undefined;
    });
    assert.deepEqual(
      [pending.reason, pending.message],
      ['Pending', 'the proxy workload has 0 of 1 replicas available'],
    );
    await kubectl([
      'patch',
      'deployment',
      'edge',
      '--subresource=status',
      '--type=merge',
      '-p',
      '{"status":{"replicas":1,"readyReplicas":1,"availableReplicas":1}}',
    ]);
    // the proxy started from the Deployment's command line is connected and has acknowledged
    const ready = await until('Programmed True', async () => {
      const c = await programmed();
      return c?.status === 'True' ? c : undefined;
    });
    assert.equal(ready.reason, 'Programmed');
  });

  test('status.addresses show the Service’s cluster IP', async () => {
    const svc = (await getJson<Service>(['get', 'service', 'edge'])) as Service;
    assert.ok(svc.spec.clusterIP, 'the API server gave the Service a cluster IP');
    const addresses = await until('the Gateway addresses', async () => {
      const g = await getJson<{ status?: { addresses?: { type: string; value: string }[] } }>([
        'get',
        'gateway',
        'edge',
      ]);
      return g?.status?.addresses?.length ? g.status.addresses : undefined;
    });
    assert.deepEqual(addresses, [{ type: 'IPAddress', value: svc.spec.clusterIP }]);
  });

  test('GwParameters on the Gateway: typed fields and overlays reach the Deployment; a PodDisruptionBudget comes and goes', async () => {
    const withParams = (ref: boolean) => `${gatewayYaml('default', listenerPort).trimEnd()}
${ref ? '  infrastructure:\n    parametersRef: { group: gw.dev, kind: GwParameters, name: edge-params }' : ''}`;
    await kubectl(
      ['apply', '--server-side', '-f', '-'],
      `apiVersion: gw.dev/v1alpha1
kind: GwParameters
metadata: { name: edge-params, namespace: default }
spec:
  logging: { level: debug, format: json }
  image: { tag: "2.0" }
  env: [{ name: EXTRA, value: "1" }]
  deployment:
    metadata: { labels: { tier: edge } }
    spec:
      replicas: 2
      template:
        spec:
          containers:
            - name: gw
              env: [{ name: POD_NAME, $patch: delete }]
  podDisruptionBudget:
    spec: { minAvailable: null, maxUnavailable: 1 }
---
${withParams(true)}`,
    );
    type Dep = Deployment & { spec: { replicas: number } };
    const dep = await until('the Deployment with the parameters', async () => {
      const d = await getJson<Dep>(['get', 'deployment', 'edge']);
      return d?.spec.replicas === 2 ? d : undefined;
    });
    const c = dep.spec.template.spec.containers[0] as unknown as {
      image: string;
      env: { name: string; value?: string }[];
    };
    assert.equal(c.image, 'registry.example/gw:2.0');
    assert.deepEqual(
      c.env.map((e) => [e.name, e.value]),
      [
        ['POD_NAMESPACE', undefined],
        ['SESSION_KEY', undefined],
        ['GW_LOG', 'debug'],
        ['GW_LOG_FORMAT', 'json'],
        ['EXTRA', '1'],
      ],
    );
    assert.equal(dep.metadata.labels?.tier, 'edge');
    const pdb = await until('the PodDisruptionBudget', () =>
      getJson<{ spec: { maxUnavailable?: number; minAvailable?: number } }>(['get', 'pdb', 'edge']),
    );
    assert.deepEqual([pdb.spec.maxUnavailable, pdb.spec.minAvailable], [1, undefined]);
    // without the parameters: back to the defaults, the budget pruned
    await kubectl(['apply', '--server-side', '-f', '-'], withParams(false));
    await until('the budget to be pruned', async () => {
      const r = await kube.kubectl(['get', 'pdb', 'edge']);
      return r.code !== 0 && /NotFound/.test(r.stderr) ? true : undefined;
    });
    const back = await until('the default Deployment', async () => {
      const d = await getJson<Dep>(['get', 'deployment', 'edge']);
      return d?.spec.replicas === 1 ? d : undefined;
    });
    assert.equal(back.metadata.labels?.tier, undefined);
    assert.equal(back.spec.template.spec.containers[0]?.image, 'registry.example/gw:test');
  });

  test('GwParameters horizontalPodAutoscaler and image.digest: an autoscaler for the Deployment, the image by digest; both go with the parameters', async () => {
    const digest = `sha256:${'0f'.repeat(32)}`;
    const withParams = (ref: boolean) => `${gatewayYaml('default', listenerPort).trimEnd()}
${ref ? '  infrastructure:\n    parametersRef: { group: gw.dev, kind: GwParameters, name: edge-scaled }' : ''}`;
    await kubectl(
      ['apply', '--server-side', '-f', '-'],
      `apiVersion: gw.dev/v1alpha1
kind: GwParameters
metadata: { name: edge-scaled, namespace: default }
spec:
  image: { digest: "${digest}" }
  horizontalPodAutoscaler:
    metadata: { labels: { tier: edge } }
    spec: { minReplicas: 1, maxReplicas: 3 }
---
${withParams(true)}`,
    );
    type Hpa = {
      metadata: { labels?: Record<string, string> };
      spec: { scaleTargetRef: { kind: string; name: string }; maxReplicas: number };
    };
    const hpa = await until('the HorizontalPodAutoscaler', () => getJson<Hpa>(['get', 'hpa', 'edge']));
    assert.deepEqual(
      [
        hpa.spec.scaleTargetRef.kind,
        hpa.spec.scaleTargetRef.name,
        hpa.spec.maxReplicas,
        hpa.metadata.labels?.tier,
      ],
      ['Deployment', 'edge', 3, 'edge'],
    );
    const dep = await until('the Deployment pulled by digest', async () => {
      const d = await getJson<Deployment>(['get', 'deployment', 'edge']);
      return d?.spec.template.spec.containers[0]?.image === `registry.example/gw@${digest}` ? d : undefined;
    });
    assert.ok(dep);
    await kubectl(['apply', '--server-side', '-f', '-'], withParams(false));
    await until('the autoscaler to be pruned', async () => {
      const r = await kube.kubectl(['get', 'hpa', 'edge']);
      return r.code !== 0 && /NotFound/.test(r.stderr) ? true : undefined;
    });
    await until('the image by tag again', async () => {
      const d = await getJson<Deployment>(['get', 'deployment', 'edge']);
      return d?.spec.template.spec.containers[0]?.image === 'registry.example/gw:test' ? true : undefined;
    });
  });

  test('a provisioned Deployment deleted by someone else is put back', async () => {
    const before = await getJson<{ metadata: { uid: string } }>(['get', 'deployment', 'edge']);
    await kubectl(['delete', 'deployment', 'edge']);
    const after = await until('the Deployment to come back', async () => {
      const d = await getJson<{ metadata: { uid: string } }>(['get', 'deployment', 'edge']);
      return d && d.metadata.uid !== before?.metadata.uid ? d : undefined;
    });
    assert.ok(after.metadata.uid);
  });

  test('a listener port change reaches the Service; deleting the Gateway prunes its objects', async () => {
    const moved = listenerPort + 1 > 65535 ? listenerPort - 1 : listenerPort + 1;
    await kubectl(['apply', '--server-side', '-f', '-'], gatewayYaml('default', moved));
    await until('the Service on the new port', async () => {
      const s = await getJson<Service>(['get', 'service', 'edge']);
      return s?.spec.ports.map((p) => p.port).join() === String(moved) ? true : undefined;
    });
    await kubectl(['delete', 'gateway', 'edge']);
    for (const [kind, name] of [
      ['deployment', 'edge'],
      ['service', 'edge'],
      ['serviceaccount', 'edge'],
      ['secret', 'edge-session-key'],
    ] as const) {
      await until(`the ${kind} to be pruned`, async () => {
        const r = await kube.kubectl(['get', kind, name]);
        return r.code !== 0 && /NotFound/.test(r.stderr) ? true : undefined;
      });
    }
  });
});
