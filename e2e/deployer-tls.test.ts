// xDS over TLS end to end, as the chart's default `controller.xds.mode: tls` runs it, on the real API
// server (startKube): gw-controller without a certificate keeps its own CA in a Secret of its namespace
// and serves xDS with a certificate that CA signed for the address proxies dial; the deployer gives each
// Gateway's proxy the CA (a ConfigMap in the projected volume beside the token, `--xds-ca-file`), and
// the Deployment it wrote, started without a kubelet, connects over TLS and serves its route. Restarted
// in `either` mode, the controller keeps the CA; the TLS proxy reconnects and a proxy dialling
// plaintext on the same port is served too.
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { after, before, describe, test } from 'node:test';
import tls from 'node:tls';
import { type KubeHarness, startKube, startUpstream, type TestServer } from '@gw/testkit';
import { gatewayYaml, httpGet, maintenancePolicyYaml, routeYaml } from './support/controller-e2e.ts';
import {
  type ControllerProcess,
  kubectlOk,
  startController,
  untilWithLogs,
} from './support/controller-process.ts';
import { cleanupGw, freePort, type GwProcess } from './support/gw-process.ts';
import { type ProvisionedDeployment, startProvisionedProxy } from './support/provisioned-proxy.ts';

const NS = 'gw-system';
const AUDIENCE = 'gw-xds';

let kube: KubeHarness;
let upstream: TestServer;
let controller: ControllerProcess;
let xdsPort: number;
let ports: [number, number];
let proxy: GwProcess;

const kubectl = kubectlOk(() => kube);
const until = untilWithLogs(() => [
  ['controller log', controller?.log ?? []],
  ['proxy log', proxy ? [...proxy.stderr.map((l) => `${l}\n`)] : []],
]);

async function getJson<T>(args: string[]): Promise<T | undefined> {
  const r = await kube.kubectl([...args, '-o', 'json']);
  return r.code === 0 ? (JSON.parse(r.stdout) as T) : undefined;
}

const controllerArgs = (mode: string, port: number) => [
  ...['--xds-port', String(port), '--xds-mode', mode, '--xds-token-audience', AUDIENCE],
  ...['--proxy-image', 'registry.example/gw:test', '--proxy-service-type', 'ClusterIP'],
  ...['--proxy-xds-address', `https://127.0.0.1:${port}`],
];

/** The CA the controller stored, as PEM. */
async function storedCa(): Promise<string> {
  const s = await getJson<{ data?: Record<string, string> }>(['get', 'secret', 'gw-xds-ca', '-n', NS]);
  return Buffer.from(s?.data?.['ca.crt'] ?? '', 'base64').toString();
}

/** A Gateway `name` with a listener on `port`, and route `web` to the upstream. */
const gatewayWithRoute = (
  name: string,
  port: number,
) => `${gatewayYaml('default', port).replace('name: edge,', `name: ${name},`)}
---
apiVersion: gw.dev/v1alpha1
kind: GwBackend
metadata: { name: echo, namespace: default }
spec:
  static: { host: 127.0.0.1, port: ${upstream.port} }
---${routeYaml('default', '{ group: gw.dev, kind: GwBackend, name: echo }')
  .replace('name: web,', `name: ${name}-web,`)
  .replace('parentRefs: [{ name: edge }]', `parentRefs: [{ name: ${name} }]`)}`;

before(async () => {
  [kube, upstream, ...ports] = (await Promise.all([
    startKube(),
    startUpstream('over-tls'),
    freePort(),
    freePort(),
  ])) as [KubeHarness, TestServer, number, number];
  await kubectl(['create', 'namespace', NS]);
  // The controller picks the xDS port (again, should another process take it first); the restart
  // below keeps it, as the proxies know it.
  controller = await startController(kube.kubeconfig, (p) => controllerArgs('tls', p.xds), {
    env: { POD_NAMESPACE: NS },
  });
  xdsPort = controller.xdsPort;
});

after(async () => {
  await cleanupGw();
  await controller?.stop();
  await upstream?.close();
  await kube?.stop();
});

describe('xDS over TLS with the controller’s own CA', () => {
  test('the controller keeps its CA in a Secret and serves xDS with a certificate it signed for the proxies’ address', async () => {
    const ca = await storedCa();
    assert.equal(new X509Certificate(ca).ca, true);
    const socket = tls.connect({ host: '127.0.0.1', port: xdsPort, ca, ALPNProtocols: ['h2'] });
    await once(socket, 'secureConnect');
    assert.equal(socket.authorized, true, String(socket.authorizationError));
    const peer = new X509Certificate(socket.getPeerCertificate().raw);
    assert.equal(peer.checkIP('127.0.0.1'), '127.0.0.1');
    socket.destroy();
    // a plaintext client gets no answer from a TLS-only port
    const plain = await fetch(`http://127.0.0.1:${xdsPort}/`).catch((err: unknown) => err);
    assert.ok(plain instanceof Error, 'plaintext is refused');
  });

  test('a Gateway’s proxy gets the CA with its token; the Deployment, started without a kubelet, connects over TLS', async () => {
    await kubectl(['apply', '--server-side', '-f', '-'], gatewayWithRoute('edge', ports[0]));
    const dep = await until('the proxy Deployment', () =>
      getJson<ProvisionedDeployment>(['get', 'deployment', 'edge']),
    );
    const cm = await until('the CA ConfigMap', () =>
      getJson<{ data?: Record<string, string>; metadata: { labels?: Record<string, string> } }>([
        'get',
        'configmap',
        'edge-xds-ca',
      ]),
    );
    assert.equal(cm.data?.['ca.crt'], await storedCa());
    assert.equal(cm.metadata.labels?.['gateway.networking.k8s.io/gateway-name'], 'edge');
    const args = dep.spec.template.spec.containers[0]?.args ?? [];
    assert.deepEqual(args.slice(0, 2), ['--xds-address', `https://127.0.0.1:${xdsPort}`]);
    assert.ok(args.includes('--xds-ca-file'), args.join(' '));

    proxy = await startProvisionedProxy(kube, dep);
    const r = await until('traffic through the proxy configured over TLS', async () => {
      const res = await httpGet(ports[0], '/hello').catch(() => undefined);
      return res?.status === 200 ? res : undefined;
    });
    assert.match(r.body, /over-tls/);
  });

  test('either: restarted, the controller keeps its CA; the TLS proxy reconnects and a plaintext one is served too', async () => {
    const ca = await storedCa();
    await controller.stop();
    controller = await startController(kube.kubeconfig, controllerArgs('either', xdsPort), {
      env: { POD_NAMESPACE: NS },
    });
    assert.equal(await storedCa(), ca, 'the same CA after a restart');
    // a change only a reconnected proxy can see
    await kubectl(
      ['apply', '--server-side', '-f', '-'],
      maintenancePolicyYaml('default', 503).replaceAll('name: web', 'name: edge-web'),
    );
    await until(
      'the TLS proxy to get the policy after reconnecting',
      async () => {
        const res = await httpGet(ports[0], '/').catch(() => undefined);
        return res?.status === 503 ? true : undefined;
      },
      60_000,
    );

    await kubectl(['apply', '--server-side', '-f', '-'], gatewayWithRoute('plain', ports[1]));
    const dep = await until('the second proxy Deployment', () =>
      getJson<ProvisionedDeployment>(['get', 'deployment', 'plain']),
    );
    // the same pod dialling plaintext, without the CA
    await startProvisionedProxy(kube, dep, (args) => {
      const out = args.map((a) => a.replace(/^https:/, 'http:'));
      const ca = out.indexOf('--xds-ca-file');
      if (ca >= 0) out.splice(ca, 2);
      return out;
    });
    const r = await until('traffic through the proxy configured over plaintext', async () => {
      const res = await httpGet(ports[1], '/hello').catch(() => undefined);
      return res?.status === 200 ? res : undefined;
    });
    assert.match(r.body, /over-tls/);
  });
});
