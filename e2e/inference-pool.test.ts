// Gateway API Inference Extension end to end on the real API server, with the InferencePool v1 CRD of
// the pinned module (hack/inference-extension) and the controller run with
// --enable-inference-extension: `kubectl apply` of a Gateway, an HTTPRoute to an InferencePool, and
// model server Pods whose status (phase, address, readiness) the test writes as a kubelet would. The
// Pods' addresses are loopback addresses (127.0.0.2, 127.0.0.3), each with a fake OpenAI server at the
// pool's target port. `bin/gw` takes its config from the controller over xDS; the official `openai`
// client calls it, and the endpoint picker (a real ext_proc gRPC server speaking the endpoint picker
// protocol, testkit/endpoint-picker.ts) chooses the Pod. The test checks the pool's status, that the
// picker is told the ready Pods and its choice is followed, that a Pod that stops being ready leaves
// the pool, and that a FailOpen pool whose picker cannot be reached is still served.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import {
  type FakeOpenAI,
  freePort,
  inferenceExtensionCrdDir,
  type KubeHarness,
  startFakeOpenAI,
  startKube,
} from '@gw/testkit';
import { type EndpointPicker, startEndpointPicker } from '@gw/testkit/endpoint-picker';
import OpenAI from 'openai';
import { gatewayYaml } from './support/controller-e2e.ts';
import {
  type ControllerProcess,
  kubectlOk,
  serviceAccountTokenFile,
  startController,
  startXdsProxy,
  untilWithLogs,
} from './support/controller-process.ts';
import { cleanupGw, type GwProcess } from './support/gw-process.ts';

let kube: KubeHarness;
let controller: ControllerProcess;
let proxy: GwProcess;
let picker: EndpointPicker;
let servers: { a: FakeOpenAI; b: FakeOpenAI };
let gatewayPort: number;
/** What the picker answers for the next requests (the test sets it). */
let choose: () => string | undefined = () => undefined;
const kubectl = kubectlOk(() => kube);
const until = untilWithLogs(() => [
  ['controller log', controller?.log ?? []],
  ['proxy log', [...(proxy?.stdout ?? []), ...(proxy?.stderr ?? [])]],
]);
const POD_IPS = { a: '127.0.0.2', b: '127.0.0.3' } as const;

/** Two fake model servers on the Pods' addresses at one port (tried again if another process holds it). */
async function modelServers(): Promise<{ a: FakeOpenAI; b: FakeOpenAI }> {
  for (let attempt = 1; ; attempt++) {
    const a = await startFakeOpenAI({ name: 'pod-a', host: POD_IPS.a });
    try {
      const b = await startFakeOpenAI({ name: 'pod-b', host: POD_IPS.b, port: a.port });
      return { a, b };
    } catch (err) {
      await a.close();
      if (attempt >= 5) throw err;
    }
  }
}

/** A Pod of the pool with the status a kubelet would write: Running, its address, Ready or not. */
async function pod(name: string, ip: string, ready: boolean): Promise<void> {
  await kubectl(
    ['apply', '--server-side', '-f', '-'],
    `apiVersion: v1
kind: Pod
metadata: { name: ${name}, namespace: default, labels: { app: vllm } }
spec:
  containers: [{ name: server, image: vllm/vllm-openai }]
`,
  );
  await podStatus(name, ip, ready);
}

async function podStatus(name: string, ip: string, ready: boolean): Promise<void> {
  const status = {
    phase: 'Running',
    podIP: ip,
    podIPs: [{ ip }],
    conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }],
  };
  await kubectl([
    'patch',
    'pod',
    name,
    '-n',
    'default',
    '--subresource=status',
    '--type=merge',
    '-p',
    JSON.stringify({ status }),
  ]);
}

interface PoolParent {
  parentRef: { name: string; namespace?: string; kind?: string };
  controllerName: string;
  conditions: { type: string; status: string; reason: string; message: string }[];
}

async function poolParents(name: string): Promise<PoolParent[]> {
  const out = await kubectl(['get', 'inferencepool', name, '-n', 'default', '-o', 'json']);
  return (JSON.parse(out).status?.parents ?? []) as PoolParent[];
}

const client = () =>
  new OpenAI({ apiKey: 'sk-test', baseURL: `http://127.0.0.1:${gatewayPort}/v1`, maxRetries: 0 });
const messages = [{ role: 'user' as const, content: 'Hello!' }];

before(async () => {
  const [crdDir, port] = await Promise.all([inferenceExtensionCrdDir(), freePort()]);
  gatewayPort = port;
  kube = await startKube({
    crdDirs: [
      join(import.meta.dirname, '../crds'),
      join(crdDir, 'inference.networking.k8s.io_inferencepools.yaml'),
    ],
  });
  servers = await modelServers();
  picker = await startEndpointPicker(() => choose());
  controller = await startController(kube.kubeconfig, ['--enable-inference-extension']);
  await kubectl(
    ['apply', '--server-side', '-f', '-'],
    `${gatewayYaml('default', gatewayPort).trimStart()}---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: llm, namespace: default }
spec:
  parentRefs: [{ name: edge }]
  rules:
    - matches: [{ path: { type: PathPrefix, value: /v1 } }]
      backendRefs: [{ group: inference.networking.k8s.io, kind: InferencePool, name: vllm }]
    - matches: [{ path: { type: PathPrefix, value: /open/v1 } }]
      filters:
        - type: URLRewrite
          urlRewrite: { path: { type: ReplacePrefixMatch, replacePrefixMatch: /v1 } }
      backendRefs: [{ group: inference.networking.k8s.io, kind: InferencePool, name: open }]
---
# the picker runs outside the cluster: a static GwBackend at its address
apiVersion: gw.dev/v1alpha1
kind: GwBackend
metadata: { name: epp, namespace: default }
spec:
  static: { host: 127.0.0.1, port: ${picker.port} }
---
apiVersion: inference.networking.k8s.io/v1
kind: InferencePool
metadata: { name: vllm, namespace: default }
spec:
  selector: { matchLabels: { app: vllm } }
  targetPorts: [{ number: ${servers.a.port} }]
  endpointPickerRef: { group: gw.dev, kind: GwBackend, name: epp }
---
# a picker Service whose cluster DNS name the proxy (outside any cluster) cannot resolve: FailOpen
apiVersion: v1
kind: Service
metadata: { name: open-epp, namespace: default }
spec:
  ports: [{ name: grpc, port: 9002, appProtocol: kubernetes.io/h2c }]
---
apiVersion: inference.networking.k8s.io/v1
kind: InferencePool
metadata: { name: open, namespace: default }
spec:
  selector: { matchLabels: { app: vllm } }
  targetPorts: [{ number: ${servers.a.port} }]
  endpointPickerRef: { name: open-epp, port: { number: 9002 }, failureMode: FailOpen }
`,
  );
  await pod('vllm-a', POD_IPS.a, true);
  await pod('vllm-b', POD_IPS.b, true);
  proxy = await startXdsProxy(controller, await serviceAccountTokenFile(kube, 'edge'));
});

after(async () => {
  await cleanupGw();
  await controller?.stop();
  await picker?.close();
  await Promise.all([servers?.a.close(), servers?.b.close()]);
  await kube?.stop();
});

test("the pool's status: the Gateway is its parent, Accepted, its picker resolved", async () => {
  const parents = await until('the InferencePool status', async () => {
    const p = await poolParents('vllm');
    return p.some((x) => x.conditions.length === 2) ? p : undefined;
  });
  assert.equal(parents.length, 1);
  const [parent] = parents as [PoolParent];
  assert.equal(parent.parentRef.name, 'edge');
  assert.equal(parent.controllerName, 'gw.dev/gw');
  const byType = Object.fromEntries(parent.conditions.map((c) => [c.type, c]));
  assert.equal(byType['Accepted']?.status, 'True', JSON.stringify(byType));
  assert.equal(byType['ResolvedRefs']?.status, 'True', JSON.stringify(byType));
});

test('the picker is told the ready Pods and its choice gets the request', async () => {
  const target = `${POD_IPS.b}:${servers.b.port}`;
  choose = () => target;
  const before = servers.b.seen.length;
  const completion = await until('a chat completion through the pool', async () =>
    client()
      .chat.completions.create({ model: 'llama', messages })
      .catch(() => undefined),
  );
  assert.equal(completion.object, 'chat.completion');
  assert.ok(servers.b.seen.length > before, 'the Pod the picker chose got the request');
  const asked = picker.asked.at(-1);
  assert.equal(asked?.json?.['model'], 'llama', 'the picker saw the body');
  assert.deepEqual(
    [...(asked?.subset ?? [])].sort(),
    [`${POD_IPS.a}:${servers.a.port}`, `${POD_IPS.b}:${servers.b.port}`],
    'the subset hint: the ready Pods at the target port',
  );
  // the other Pod, chosen next, gets the next one
  choose = () => `${POD_IPS.a}:${servers.a.port}`;
  const a = servers.a.seen.length;
  await client().chat.completions.create({ model: 'llama', messages });
  assert.equal(servers.a.seen.length, a + 1);
});

test('a Pod that stops being ready leaves the pool: the picker is not told of it, and choosing it is a 503', async () => {
  await podStatus('vllm-b', POD_IPS.b, false);
  const gone = `${POD_IPS.b}:${servers.b.port}`;
  choose = () => gone;
  const status = await until('the not-ready Pod to leave the pool', async () => {
    const r = await fetch(`http://127.0.0.1:${gatewayPort}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'llama', messages }),
    });
    await r.arrayBuffer();
    return r.status === 503 ? r.status : undefined;
  });
  assert.equal(status, 503);
  assert.deepEqual(picker.asked.at(-1)?.subset, [`${POD_IPS.a}:${servers.a.port}`]);
  // ready again: back in the pool
  await podStatus('vllm-b', POD_IPS.b, true);
  const b = servers.b.seen.length;
  await until('the Pod to be back', async () =>
    client()
      .chat.completions.create({ model: 'llama', messages })
      .then(() => (servers.b.seen.length > b ? true : undefined))
      .catch(() => undefined),
  );
});

test('a FailOpen pool whose picker cannot be reached is served by one of its Pods', async () => {
  const before = servers.a.seen.length + servers.b.seen.length;
  const open = new OpenAI({
    apiKey: 'sk-test',
    baseURL: `http://127.0.0.1:${gatewayPort}/open/v1`,
    maxRetries: 0,
  });
  const completion = await until('a chat completion through the FailOpen pool', async () =>
    open.chat.completions.create({ model: 'llama', messages }).catch(() => undefined),
  );
  assert.equal(completion.object, 'chat.completion');
  assert.equal(servers.a.seen.length + servers.b.seen.length, before + 1);
});

test('examples/k8s-inference applies cleanly (server-side dry run)', async () => {
  const r = await kube.kubectl([
    'apply',
    '--dry-run=server',
    '--server-side',
    '-f',
    join(import.meta.dirname, '../examples/k8s-inference'),
  ]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /inferencepool.inference.networking.k8s.io\/vllm-llama3 serverside-applied/);
});

test('a picker that cannot be used: the pool is ResolvedRefs False and its route says why', async () => {
  await kubectl(
    ['apply', '--server-side', '-f', '-'],
    `apiVersion: inference.networking.k8s.io/v1
kind: InferencePool
metadata: { name: broken, namespace: default }
spec:
  selector: { matchLabels: { app: vllm } }
  targetPorts: [{ number: 8000 }]
  endpointPickerRef: { name: no-such-epp, port: { number: 9002 } }
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: broken, namespace: default }
spec:
  parentRefs: [{ name: edge }]
  rules:
    - matches: [{ path: { type: PathPrefix, value: /broken } }]
      backendRefs: [{ group: inference.networking.k8s.io, kind: InferencePool, name: broken }]
`,
  );
  const resolved = await until('the broken pool status', async () => {
    const c = (await poolParents('broken'))[0]?.conditions.find((x) => x.type === 'ResolvedRefs');
    return c?.status === 'False' ? c : undefined;
  });
  assert.equal(resolved.reason, 'InvalidExtensionRef');
  assert.match(resolved.message, /service default\/no-such-epp not found/);
  const route = await until('the broken route status', async () => {
    const out = await kubectl(['get', 'httproute', 'broken', '-n', 'default', '-o', 'json']);
    const c = (
      JSON.parse(out).status?.parents?.[0]?.conditions as { type: string; status: string; message: string }[]
    )?.find((x) => x.type === 'ResolvedRefs');
    return c?.status === 'False' ? c : undefined;
  });
  assert.match(route.message, /InferencePool default\/broken is not usable/);
  const status = await until('the broken route to answer 500', async () => {
    const r = await fetch(`http://127.0.0.1:${gatewayPort}/broken`);
    await r.arrayBuffer();
    return r.status === 500 ? r.status : undefined;
  });
  assert.equal(status, 500);
});
