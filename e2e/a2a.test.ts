// A2A in Kubernetes, on the real API server (startKube): `kubectl apply` of a Gateway, an a2a GwBackend
// (host and port of an @a2a-js/sdk agent on 127.0.0.1) and an HTTPRoute; the controller pushes it over
// xDS to `bin/gw` as Backend.a2a, and the SDK client discovers the agent through the proxy (the card
// names the proxy), sends a message and streams one there. The proxy's access log and metrics name
// each call; the GwBackend's status reads back Accepted.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { AGENT_PATH, a2aClient, startAgent, type TestAgent, userText } from '@gw/proxy/a2a/test-support';
import { type KubeHarness, startKube } from '@gw/testkit';
import { gatewayYaml } from './support/controller-e2e.ts';
import {
  type ControllerProcess,
  kubectlOk,
  serviceAccountTokenFile,
  startController,
  startXdsProxy,
  untilWithLogs,
} from './support/controller-process.ts';
import { cleanupGw, freePort, type GwProcess } from './support/gw-process.ts';

let kube: KubeHarness;
let agent: TestAgent;
let controller: ControllerProcess;
let proxyPort: number;
let gw: GwProcess;

const kubectl = kubectlOk(() => kube);
const until = untilWithLogs(() => [
  ['controller log', controller?.log ?? []],
  ['proxy log', gw?.stderr ?? []],
]);

const backendYaml = () => `
apiVersion: gw.dev/v1alpha1
kind: GwBackend
metadata: { name: agent, namespace: default }
spec:
  a2a: { host: 127.0.0.1, port: ${agent.port} }
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: agent, namespace: default }
spec:
  parentRefs: [{ name: edge }]
  rules:
    - backendRefs: [{ group: gw.dev, kind: GwBackend, name: agent }]
`;

before(async () => {
  [kube, agent, proxyPort] = await Promise.all([startKube(), startAgent({ streamDelayMs: 100 }), freePort()]);
  controller = await startController(kube.kubeconfig);
});

after(async () => {
  await cleanupGw();
  await controller?.stop();
  await agent?.close();
  await kube?.stop();
});

describe('an a2a GwBackend through the controller', () => {
  test('kubectl apply: the client discovers the agent through the proxy and every call goes there', async () => {
    await kubectl(
      ['apply', '--server-side', '-f', '-'],
      `${gatewayYaml('default', proxyPort)}\n---${backendYaml()}`,
    );
    gw = await startXdsProxy(controller, await serviceAccountTokenFile(kube, 'edge'));
    const gateway = `http://127.0.0.1:${proxyPort}`;
    const card = await until('the rewritten card through the proxy', async () => {
      const r = await fetch(`${gateway}/.well-known/agent-card.json`, {
        headers: { 'A2A-Version': '1.0' },
      }).catch(() => undefined);
      if (r?.status !== 200) return undefined;
      return (await r.json()) as { supportedInterfaces: { url: string }[] };
    });
    assert.deepEqual(
      card.supportedInterfaces.map((i) => i.url),
      card.supportedInterfaces.map(() => `${gateway}${AGENT_PATH}`),
    );

    const client = await a2aClient(`${gateway}/.well-known/agent-card.json`);
    const task = await client.sendMessage(userText('hello from kubernetes'));
    assert.ok('status' in task);
    const kinds: (string | undefined)[] = [];
    for await (const e of client.sendMessageStream(userText('stream'))) kinds.push(e.payload?.$case);
    assert.ok(kinds.includes('artifactUpdate'), kinds.join(','));
    await client.getTask({ tenant: '', id: task.id });
    assert.deepEqual(agent.calls, ['SendMessage', 'SendStreamingMessage', 'GetTask']);

    // The proxy saw them: access log lines and the counter on its stats port.
    const logged = await until('the access log lines', async () => {
      // the worker writes its log in blocks, and a stream's line comes when gw sees it end, which
      // may be after the next call's: wait for every call's line, not a count or the last one
      const lines = gw.stdout.filter((l) => l.includes('a2a.method='));
      const all = ['agent-card', 'SendMessage', 'SendStreamingMessage', 'GetTask'].every((m) =>
        lines.some((l) => l.includes(`a2a.method=${m} `)),
      );
      return all ? lines : undefined;
    });
    for (const m of ['agent-card', 'SendMessage', 'SendStreamingMessage', 'GetTask'])
      assert.ok(
        logged.some((l) => l.includes(`a2a.method=${m}`) && /a2a\.outcome=(ok|rewritten)/.test(l)),
        `${m}: ${logged.join('\n')}`,
      );
    assert.ok(logged.some((l) => l.includes(`a2a.taskId=${task.id}`)));
    const metrics = await (await fetch(`${gw.stats}/metrics`)).text();
    assert.match(metrics, /gw_a2a_requests_total\{[^}]*method="SendStreamingMessage",outcome="ok"[^}]*\} 1/);

    await until('the GwBackend Accepted', async () => {
      const accepted = await kubectl(['get', 'gwbackend', 'agent', '-o', 'jsonpath={.status.conditions[0]}']);
      const c = (accepted ? JSON.parse(accepted) : {}) as { status?: string; reason?: string };
      if (c.status !== 'True' || c.reason !== 'Accepted') throw new Error(`the condition is ${accepted}`);
      return true;
    });
  });
});
