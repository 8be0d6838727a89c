// The connection to an MCP guardrail processor (its `policies`, or a named backend's): a processor
// written with @gw/guardrail-sdk behind HTTPS with a private CA that answers 401 to calls without its
// key, and a real MCP server behind the gateway. The gateway's calls carry the key and the headers,
// verify the processor's certificate, and its verdicts reach the SDK client; the key never shows in
// the loaded config; what a processor call cannot take is refused by field. A processor given as a
// Service of `services` is called by the Service's hostname (the name its certificate has) at its
// workload's address.
import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createMcpProcessorHandler, mcp } from '@gw/guardrail-sdk';
import { makeTestPki, type TestPki } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { loadConfigText } from '../config/load.ts';
import { configIssues } from '../config/test-support.ts';
import { connectClient, type HttpPeer, startHttpPeer, textOf } from './test-support.ts';

let web: HttpPeer;
let pki: TestPki;
let processor: Server;
let port: number;
/** The HTTP headers of each call that reached the processor's handler. */
const calls: IncomingHttpHeaders[] = [];
let refused = 0;
let proxy: TestProxy;

before(async () => {
  web = await startHttpPeer('web');
  pki = await makeTestPki(['proc.test']);
  const cert = pki.servers['proc.test'];
  assert.ok(cert);
  const handler = createMcpProcessorHandler({
    onRequest: (call) => {
      const args = (call.params as { arguments?: { message?: string } }).arguments;
      return args?.message === 'forbidden' ? mcp.reject('not that') : mcp.allow();
    },
    onResponse: () => mcp.allow(),
  });
  processor = createServer({ cert: cert.cert, key: cert.key }, (req, res) => {
    if (req.headers.authorization !== 'Bearer proc-key') {
      refused++;
      res.writeHead(401).end();
      return;
    }
    calls.push(req.headers);
    void handler(req, res);
  });
  await new Promise<void>((r) => processor.listen(0, '127.0.0.1', r));
  port = (processor.address() as AddressInfo).port;
  proxy = await startProxy(config());
});

after(async () => {
  await proxy?.close();
  processor?.closeAllConnections();
  await new Promise((r) => processor?.close(r));
  await web?.close();
  await pki?.cleanup();
});

const policies = () =>
  `{backendTLS: {root: ${JSON.stringify(pki.caFile)}, hostname: proc.test}, backendAuth: {key: proc-key}, requestHeaderModifier: {set: {x-tenant: acme}}}`;

/** The key with a credential beside it, in a header of its own. */
const credentialPolicies = () =>
  `{backendTLS: {root: ${JSON.stringify(pki.caFile)}, hostname: proc.test}, backendAuth: {key: proc-key, credentials: [{location: {header: {name: x-proc-tenant}}, key: tenant-secret}]}}`;
/** Credentials alone: the processor's bearer key written as one. */
const credentialsAlone = () =>
  `{backendTLS: {root: ${JSON.stringify(pki.caFile)}, hostname: proc.test}, backendAuth: {credentials: [{location: {header: {name: authorization, prefix: "Bearer "}}, key: proc-key}]}}`;

const route = (path: string, processorLines: string) => `
    - matches: [{path: {pathPrefix: ${path}}}]
      policies:
        mcpGuardrails:
          processors:
          - ${processorLines}
            methods: {"tools/call": request}
      backends:
      - mcp:
          targets:
          - name: web
            mcp: {host: "${web.url}"}`;

function config(): string {
  // the Service: its name is the certificate's; its one workload is the processor's address
  return `services:
- {name: proc, namespace: infra, hostname: proc.test, vips: [], ports: {"443": ${port}}}
workloads:
- {name: proc-0, namespace: infra, workloadIps: [127.0.0.1], services: {"infra/proc.test": {}}}
backends:
- name: procs
  host: 127.0.0.1:${port}
  policies: ${policies()}
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:${route('/own', `host: 127.0.0.1:${port}\n            policies: ${policies()}`)}${route('/named', 'backend: procs')}${route('/credentials', `host: 127.0.0.1:${port}\n            policies: ${credentialPolicies()}`)}${route('/credentials-alone', `host: 127.0.0.1:${port}\n            policies: ${credentialsAlone()}`)}${route('/bare', `host: 127.0.0.1:${port}`)}${route(
    '/by-service',
    `service: {name: infra/proc.test, port: 443}\n            policies: {backendTLS: {root: ${JSON.stringify(pki.caFile)}}, backendAuth: {key: proc-key}, requestHeaderModifier: {set: {x-tenant: acme}}}`,
  )}
`;
}

describe('the connection to an MCP guardrail processor', () => {
  for (const path of ['/own', '/named', '/by-service']) {
    test(`${path}: over TLS with the key and headers; its verdicts reach the client`, async () => {
      const before = calls.length;
      const { client } = await connectClient(proxy.url(`${path}/mcp`));
      const ok = await client.callTool({ name: 'echo', arguments: { message: 'hi' } });
      assert.equal(textOf(ok), 'web echo: hi');
      await assert.rejects(
        client.callTool({ name: 'echo', arguments: { message: 'forbidden' } }),
        /not that/,
      );
      assert.ok(calls.length >= before + 2);
      assert.equal(calls.at(-1)?.['x-tenant'], 'acme');
      await client.close();
    });
  }

  test('credentials beside the key reach the processor in their own header; credentials alone carry the key', async () => {
    for (const path of ['/credentials', '/credentials-alone']) {
      const before = calls.length;
      const { client } = await connectClient(proxy.url(`${path}/mcp`));
      const ok = await client.callTool({ name: 'echo', arguments: { message: 'hi' } });
      assert.equal(textOf(ok), 'web echo: hi');
      await client.close();
      assert.ok(calls.length > before, `${path}: the processor was called with its key`);
      assert.equal(calls.at(-1)?.['x-proc-tenant'], path === '/credentials' ? 'tenant-secret' : undefined);
    }
    const { ir } = loadConfigText('gw.yaml', config(), process.cwd());
    assert.doesNotMatch(JSON.stringify(ir), /tenant-secret/);
  });

  test('without the policies the processor refuses the call, and the client gets a JSON-RPC error', async () => {
    const before = refused;
    const { client } = await connectClient(proxy.url('/bare/mcp'));
    // a plain-text call to a TLS port fails before any answer; failClosed is the default
    await assert.rejects(client.callTool({ name: 'echo', arguments: { message: 'hi' } }));
    await client.close();
    assert.equal(refused, before, 'a plain-text call never reaches the handler');
  });

  test('the key never shows in the loaded config; what a processor call does not take is refused', () => {
    const { ir } = loadConfigText('gw.yaml', config(), process.cwd());
    assert.doesNotMatch(JSON.stringify(ir), /proc-key/);
    const processorWith = (p: string) =>
      configIssues(`binds:
- port: 0
  listeners:
  - routes:
    - policies:
        mcpGuardrails:
          processors:
          - host: 127.0.0.1:9000
            policies: ${p}
      backends: [{mcp: {targets: [{name: a, mcp: {host: "http://127.0.0.1:1/mcp"}}]}}]
`);
    assert.match(
      processorWith('{backendAuth: {key: {value: k, location: {queryParameter: {name: k}}}}}'),
      /processors\[0\]\.policies\.backendAuth\.key\.location: a processor takes its key in a header/,
    );
    assert.match(
      processorWith('{backendAuth: {passthrough: {}}}'),
      /passthrough on an MCP guardrail processor is not supported/,
    );
    assert.match(
      processorWith('{transformations: {}}'),
      /transformations on a guard service is not supported/,
    );
    // a Service's workloads are dialled by address: a proxy would be asked for a name only this file has
    assert.match(
      configIssues(`services:
- {name: p, namespace: ns, hostname: p.ns, vips: [], ports: {"80": 8080}}
workloads:
- {namespace: ns, workloadIps: [127.0.0.1], services: {"ns/p.ns": {}}}
binds:
- port: 0
  listeners:
  - routes:
    - policies:
        mcpGuardrails:
          processors:
          - service: {name: ns/p.ns, port: 80}
            policies: {backendTunnel: {proxy: {host: "127.0.0.1:3128"}}}
      backends: [{mcp: {targets: [{name: a, mcp: {host: "http://127.0.0.1:1/mcp"}}]}}]
`),
      /processors\[0\]\.service: a processor given as a Service of services is dialled at its workloads, not through a backendTunnel/,
    );
  });
});
