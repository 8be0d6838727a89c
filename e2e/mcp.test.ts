// MCP federation in Kubernetes, on the real API server (startKube): `kubectl apply` of a Gateway, an
// mcp GwBackend and an HTTPRoute; the controller pushes the backend over xDS to `bin/gw`, and the MCP
// SDK client lists and calls server-everything's tools (streamable HTTP, 127.0.0.1) through the proxy.
// The backend also has a selector target: a Service created later becomes a target (the proxy sees two
// targets and prefixes tool names), and FailOpen leaves it out of lists since its cluster name does
// not resolve here. A GwPolicy addressed to one target by sectionName hides a tool, and one with
// guardrail processors on the whole backend has a processor refuse a call. Status is read back with
// kubectl.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { connectClient, startEverythingHttp, textOf } from '@gw/proxy/mcp/test-support';
import { type KubeHarness, startKube } from '@gw/testkit';
import { gatewayYaml, untilPolicyAttached } from './support/controller-e2e.ts';
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
let everything: Awaited<ReturnType<typeof startEverythingHttp>>;
let controller: ControllerProcess;
let proxyPort: number;
let gw: GwProcess;
let processor: Server;
/** Methods the processor was asked about. */
const processed: string[] = [];

const kubectl = kubectlOk(() => kube);
const until = untilWithLogs(() => [
  ['controller log', controller?.log ?? []],
  ['proxy log', gw?.stderr ?? []],
]);

const backendYaml = () => `
apiVersion: gw.dev/v1alpha1
kind: GwBackend
metadata: { name: tools, namespace: default }
spec:
  mcp:
    failureMode: FailOpen
    targets:
      - name: everything
        static: { host: 127.0.0.1, port: ${everything.port}, path: /mcp, protocol: StreamableHTTP }
      - name: cluster
        selector:
          services: { matchLabels: { app: mcp-tools } }
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: mcp, namespace: default }
spec:
  parentRefs: [{ name: edge }]
  rules:
    - matches: [{ path: { type: PathPrefix, value: /mcp } }]
      backendRefs: [{ group: gw.dev, kind: GwBackend, name: tools }]
`;

/** The Accepted condition of GwBackend `tools`. */
async function accepted(): Promise<{ status: string; reason: string; message: string } | undefined> {
  const out = await kubectl(['get', 'gwbackend', 'tools', '-o', 'jsonpath={.status.conditions[0]}']);
  return out ? (JSON.parse(out) as { status: string; reason: string; message: string }) : undefined;
}

/** The tool names a fresh SDK client session lists through the proxy. */
async function toolNames(): Promise<string[]> {
  const { client } = await connectClient(`http://127.0.0.1:${proxyPort}/mcp`);
  try {
    return (await client.listTools()).tools.map((t) => t.name).sort();
  } finally {
    await client.close();
  }
}

before(async () => {
  [kube, everything, proxyPort] = await Promise.all([startKube(), startEverythingHttp(), freePort()]);
  controller = await startController(kube.kubeconfig);
  // refuses echo calls, allows the rest: the contract's JSON by hand, as a processor in another
  // language would write it
  processor = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      const call = JSON.parse(body) as { method: string; params: { name?: string } };
      processed.push(`${req.url} ${call.method}`);
      const verdict = call.params.name?.endsWith('echo')
        ? { action: 'reject', message: 'echo is switched off by policy' }
        : { action: 'allow' };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(verdict));
    });
  }).listen(0, '127.0.0.1');
});

after(async () => {
  await cleanupGw();
  await controller?.stop();
  await everything?.close();
  processor?.closeAllConnections();
  await new Promise((r) => (processor ? processor.close(r) : r(undefined)));
  await kube?.stop();
});

describe('an mcp GwBackend through the controller', () => {
  test('kubectl apply: the proxy serves the federated tools; the selector that finds nothing is named', async () => {
    await kubectl(
      ['apply', '--server-side', '-f', '-'],
      `${gatewayYaml('default', proxyPort)}\n---${backendYaml()}`,
    );
    gw = await startXdsProxy(controller, await serviceAccountTokenFile(kube, 'edge'));
    // one target so far: Conditional prefixing leaves the names as server-everything has them
    const names = await until('the tools through the proxy', async () => {
      const n = await toolNames().catch(() => undefined);
      return n?.includes('echo') ? n : undefined;
    });
    assert.ok(names.includes('get-sum'), names.join(', '));
    const { client } = await connectClient(`http://127.0.0.1:${proxyPort}/mcp`);
    const r = await client.callTool({ name: 'get-sum', arguments: { a: 2, b: 3 } });
    assert.match(textOf(r), /5/);
    await client.close();

    const c = await until('the GwBackend status', accepted);
    assert.equal(c.status, 'True');
    assert.equal(c.reason, 'PartiallyAccepted');
    assert.match(c.message, /spec\.mcp\.targets\[1\]\.selector \(cluster\): no Service port/);
  });

  test('a Service with an MCP port becomes a target: the proxy gets it, and the backend is Accepted', async () => {
    await kubectl(
      ['apply', '--server-side', '-f', '-'],
      `apiVersion: v1
kind: Service
metadata:
  name: memory
  namespace: default
  labels: { app: mcp-tools }
spec:
  ports:
    - { name: http, port: 8080, appProtocol: gw.dev/mcp }
`,
    );
    const c = await until('the GwBackend to be Accepted', async () => {
      const x = await accepted();
      return x?.reason === 'Accepted' ? x : undefined;
    });
    assert.equal(c.status, 'True');
    // two targets now: names are prefixed; memory-http is unreachable here and FailOpen leaves it out
    const names = await until('prefixed tool names', async () => {
      const n = await toolNames().catch(() => undefined);
      return n?.includes('everything_echo') ? n : undefined;
    });
    assert.ok(
      names.every((n) => n.startsWith('everything_')),
      names.join(', '),
    );
  });

  test('a GwPolicy on one target (sectionName) hides a tool; its status says Attached', async () => {
    await kubectl(
      ['apply', '--server-side', '-f', '-'],
      `apiVersion: gw.dev/v1alpha1
kind: GwPolicy
metadata: { name: no-sum, namespace: default }
spec:
  targetRefs: [{ group: gw.dev, kind: GwBackend, name: tools, sectionName: everything }]
  backend:
    mcp:
      authorization:
        action: Deny
        policy: { matchExpressions: ['mcp.tool.name == "get-sum"'] }
`,
    );
    const names = await until('get-sum to be hidden', async () => {
      const n = await toolNames().catch(() => undefined);
      return n && !n.includes('everything_get-sum') && n.includes('everything_echo') ? n : undefined;
    });
    assert.ok(names.length > 1);
    const { client } = await connectClient(`http://127.0.0.1:${proxyPort}/mcp`);
    await assert.rejects(
      client.callTool({ name: 'everything_get-sum', arguments: { a: 1, b: 2 } }),
      /unknown tool "everything_get-sum": no target serves it/,
    );
    await client.close();
    await untilPolicyAttached(until, kubectl, 'no-sum', {
      message: 'attached to GwBackend default/tools MCP target everything',
    });
  });

  test('a GwPolicy with guardrail processors: the processor refuses a call, the client gets its error', async () => {
    const port = (processor.address() as AddressInfo).port;
    await kubectl(
      ['apply', '--server-side', '-f', '-'],
      `apiVersion: gw.dev/v1alpha1
kind: GwPolicy
metadata: { name: guarded, namespace: default }
spec:
  targetRefs: [{ group: gw.dev, kind: GwBackend, name: tools }]
  backend:
    mcp:
      guardrails:
        processors:
          - remote: { url: "http://127.0.0.1:${port}" }
            methods: { "tools/call": Request }
`,
    );
    const { client } = await connectClient(`http://127.0.0.1:${proxyPort}/mcp`);
    try {
      await until('the processor to refuse echo', async () => {
        const r = await client.callTool({ name: 'everything_echo', arguments: { message: 'hi' } }).then(
          () => undefined,
          (err: Error) => err,
        );
        return r && /echo is switched off by policy/.test(r.message) ? r : undefined;
      });
      // other calls pass the processor, which saw them
      const sum = await client.callTool({ name: 'everything_get-tiny-image', arguments: {} }).catch((e) => e);
      assert.ok(!(sum instanceof Error) || !/switched off/.test(sum.message));
      assert.ok(processed.includes('/mcp/request tools/call'), processed.join(', '));
    } finally {
      await client.close();
    }
    await untilPolicyAttached(until, kubectl, 'guarded', { message: 'attached to GwBackend default/tools' });
  });
});
