// The steps of controller.test.ts on a kind cluster (hack/kind-up.sh, then hack/kind-e2e.sh), where
// they run as in production: the controller is the Deployment of the chart (release gw in gw-system,
// hack/kind/values.yaml), the proxy the Deployment its deployer provisions for the Gateway
// (authenticated by a projected service-account token, xDS over TLS with the controller's CA), the
// upstream an echo Deployment behind a Service (a Service backendRef, which the test API server
// cannot serve: it runs no Pods), and traffic reaches the proxy through `kubectl port-forward`.
// Skipped unless GW_E2E_KUBECONFIG names the cluster's kubeconfig (hack/kind-e2e.sh sets it).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { ConfigDump } from '@gw/api';
import {
  expectConfigRejected,
  expectGatewayAndRouteStatus,
  expectGatewayClassAccepted,
  expectInvalidPolicyStatus,
  expectPolicyAcceptedAttached,
  gatewayYaml,
  httpGet,
  measurePolicyApplyToEffect,
  until as poll,
  routeYaml,
  type Steps,
} from './support/controller-e2e.ts';
import { type Cluster, cluster, type PortForward } from './support/kube-cluster.ts';

const KUBECONFIG = process.env['GW_E2E_KUBECONFIG'];
const CLUSTER = process.env['GW_E2E_CLUSTER'] ?? 'kind';
const LISTENER_PORT = 8080;
const UPSTREAM_PORT = 8080;

const skip = !KUBECONFIG
  ? 'needs a kind cluster: GW_E2E_KUBECONFIG is unset (run hack/kind-up.sh, then hack/kind-e2e.sh)'
  : CLUSTER !== 'kind'
    ? `GW_E2E_CLUSTER=${CLUSTER}: only kind is supported (the images are loaded with kind load, never pulled)`
    : false;

/** A namespace of its own, so a run starts clean and ends with one delete. */
const ns = `gw-e2e-${randomBytes(3).toString('hex')}`;
const started = new Date().toISOString();
let k: Cluster;
let proxy: PortForward;

async function kubectl(args: string[], input?: string): Promise<string> {
  const r = await k.kubectl(args, input === undefined ? {} : { input });
  assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

async function controllerLog(since = started): Promise<string> {
  const r = await k.kubectl(['-n', 'gw-system', 'logs', 'deployment/gw', `--since-time=${since}`]);
  return r.code === 0 ? r.stdout : `(kubectl logs failed: ${r.stderr})`;
}

const until = <T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> =>
  poll(what, fn, {
    timeoutMs,
    intervalMs: 200,
    context: async () => `\ncontroller log:\n${(await controllerLog()).split('\n').slice(-20).join('\n')}`,
  });

const get = (path = '/') => httpGet(proxy.port, path);
const steps: Steps = { ns, kubectl, until, get };

const restricted = `
      securityContext:
        runAsNonRoot: true
        runAsUser: 1000
        seccompProfile: { type: RuntimeDefault }`;
const restrictedContainer = `
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities: { drop: [ALL] }`;

/** The echo upstream: Node in the proxy image (loaded into the nodes already), answering with the request as JSON. */
const ECHO_SERVER = `require('node:http').createServer((req, res) => {
  const body = JSON.stringify({ method: req.method, path: req.url, headers: req.headers });
  res.writeHead(200, { 'content-type': 'application/json', 'x-upstream': 'echo' });
  res.end(body);
}).listen(${UPSTREAM_PORT});`;

const echoYaml = () => `
apiVersion: apps/v1
kind: Deployment
metadata: { name: echo, namespace: ${ns} }
spec:
  replicas: 1
  selector: { matchLabels: { app: echo } }
  template:
    metadata: { labels: { app: echo } }
    spec:${restricted}
      containers:
        - name: echo
          image: gw-proxy:dev
          imagePullPolicy: Never
          command: [node, -e, ${JSON.stringify(ECHO_SERVER)}]
          ports: [{ name: http, containerPort: ${UPSTREAM_PORT} }]
          readinessProbe: { tcpSocket: { port: http }, periodSeconds: 1 }${restrictedContainer}
---
apiVersion: v1
kind: Service
metadata: { name: echo, namespace: ${ns} }
spec:
  selector: { app: echo }
  ports: [{ name: http, port: ${UPSTREAM_PORT}, targetPort: http }]
`;

/**
 * A proxy asking for Gateway edge with a valid token of another ServiceAccount (the namespace's
 * `default`): the controller must refuse it, since a token only reads the Gateway its ServiceAccount is
 * named after. It dials as the provisioned proxy does (TLS, the CA from the Gateway's ConfigMap, the
 * chart's token audience), so the refusal is the token's.
 */
const intruderYaml = () => `
apiVersion: apps/v1
kind: Deployment
metadata: { name: intruder, namespace: ${ns} }
spec:
  replicas: 1
  selector: { matchLabels: { app: intruder } }
  template:
    metadata: { labels: { app: intruder } }
    spec:
      serviceAccountName: default
      automountServiceAccountToken: false${restricted}
      containers:
        - name: proxy
          image: gw-proxy:dev
          imagePullPolicy: Never
          args:
            - --xds-address=https://gw.gw-system.svc:9978
            - --gateway=${ns}/edge
            - --xds-token-file=/var/run/secrets/gw/token
            - --xds-ca-file=/var/run/secrets/gw/ca.crt
            - --workers=1
          ports: [{ name: readiness, containerPort: 15021 }]
          readinessProbe: { httpGet: { path: /healthz/ready, port: readiness }, periodSeconds: 2 }${restrictedContainer}
          volumeMounts: [{ name: xds-token, mountPath: /var/run/secrets/gw, readOnly: true }]
      volumes:
        - name: xds-token
          projected:
            sources:
              - serviceAccountToken: { path: token, audience: gw-xds, expirationSeconds: 3600 }
              - configMap: { name: edge-xds-ca, items: [{ key: ca.crt, path: ca.crt }] }
`;

describe('controller + proxy on kind', () => {
  before(async () => {
    if (skip) return;
    k = cluster(KUBECONFIG ?? '');
    await kubectl(['-n', 'gw-system', 'rollout', 'status', 'deployment/gw', '--timeout=60s']);
    await kubectl(['create', 'namespace', ns]);
    await kubectl(['apply', '-f', '-'], echoYaml());
    await kubectl(['-n', ns, 'rollout', 'status', 'deployment/echo', '--timeout=120s']);
  });

  after(async () => {
    if (skip) return;
    await k?.close();
    // the namespace controller removes everything in it; no need to wait
    if (k && !process.env['GW_E2E_KEEP']) await k.kubectl(['delete', 'namespace', ns, '--wait=false']);
  });

  test('the controller creates its GatewayClass and accepts it', { skip }, () =>
    expectGatewayClassAccepted(steps),
  );

  test('kubectl apply of Gateway and HTTPRoute, the proxy provisioned: status is written and traffic flows', {
    skip,
  }, async () => {
    await kubectl(
      ['apply', '--server-side', '-f', '-'],
      `${gatewayYaml(ns, LISTENER_PORT)}\n---${routeYaml(ns, `{ name: echo, port: ${UPSTREAM_PORT} }`)}`,
    );
    // the controller provisions ServiceAccount, Service and Deployment edge; the Deployment rolls out
    // once the proxy has its config over xDS and is ready
    await until('the provisioned Deployment', async () =>
      (await k.kubectl(['-n', ns, 'get', 'deployment', 'edge'])).code === 0 ? true : undefined,
    );
    await kubectl(['-n', ns, 'rollout', 'status', 'deployment/edge', '--timeout=120s']);
    proxy = await k.portForward(ns, 'service/edge', LISTENER_PORT);
    const r = await until('traffic through the proxy', async () => {
      const x = await get('/hello').catch(() => undefined);
      return x?.status === 200 ? x : undefined;
    });
    assert.equal(r.headers['x-upstream'], 'echo');
    assert.equal(JSON.parse(r.body).path, '/hello');

    await expectGatewayAndRouteStatus(steps);
  });

  test('a GwPolicy change reaches traffic; Accepted/Attached are written', { skip }, async () => {
    console.log(await measurePolicyApplyToEffect(steps));
  });

  test('the policy status says Accepted and Attached', { skip }, () => expectPolicyAcceptedAttached(steps));

  test('a GwPolicy with a CEL error is Invalid on its status and never reaches the proxy', { skip }, () =>
    expectInvalidPolicyStatus(steps),
  );

  test('a configuration the proxy refuses: a Warning Event, Programmed False with its words, traffic keeps flowing', {
    skip,
  }, async () => {
    const rejected = await expectConfigRejected(steps, LISTENER_PORT, LISTENER_PORT + 1);
    // the proxy says why in its config dump (admin port, loopback in the pod), and the last good
    // configuration still serves
    const admin = await k.portForward(ns, 'deployment/edge', 15000);
    try {
      const dump = await until('the rejection in the config dump', async () => {
        const res = await fetch(`http://127.0.0.1:${admin.port}/config_dump`);
        const d = (await res.json()) as ConfigDump;
        return d.lastReloadError ? d : undefined;
      });
      assert.match(dump.lastReloadError ?? '', /certificate and key do not load/);
    } finally {
      await admin.stop();
    }
    const r = await get('/');
    assert.equal(r.status, 200);
    await rejected.restore();
  });

  test("a proxy with another ServiceAccount's token is refused", { skip }, async () => {
    const since = new Date().toISOString();
    await kubectl(['apply', '-f', '-'], intruderYaml());
    await until('the refusal in the controller log', async () =>
      (await controllerLog(since)).includes(`not ${ns}/edge`) ? true : undefined,
    );
    const ready = await kubectl([
      '-n',
      ns,
      'get',
      'pods',
      '-l',
      'app=intruder',
      '-o',
      'jsonpath={.items[*].status.conditions[?(@.type=="Ready")].status}',
    ]);
    assert.notEqual(ready, 'True', 'a refused proxy must not report ready');
    // and the Gateway's own proxy keeps serving
    assert.equal((await get('/')).status, 200);
  });
});
