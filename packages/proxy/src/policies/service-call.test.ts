// A policy's own service's credential and headers (policies.backendAuth key and requestHeaderModifier
// on the extAuthz, extProc and remoteRateLimit services): sent with every call, as gRPC metadata to
// real Envoy ext_authz v3, ext_proc v3 and rate limit v3 servers (grpc-js, the generated messages) and
// as headers to an HTTP authorization service, where a
// client's header of the same name cannot override them; the key never shows in the loaded config; a
// key in a query parameter is refused by field.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { startUpstream, type TestServer } from '@gw/testkit';
import { type AuthzServer, startAuthzServer } from '@gw/testkit/ext-authz-server';
import { type ExtProcServer, passHeaders, startExtProcServer } from '@gw/testkit/ext-proc-server';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { type RecordingRateLimitServer, startRecordingRateLimitServer } from '@gw/testkit/rls-recorder';
import { loadConfigText } from '../config/load.ts';
import { configIssues } from '../config/test-support.ts';

let up: TestServer;
let grpcAuthz: AuthzServer;
let proc: ExtProcServer;
let rls: RecordingRateLimitServer;
let httpAuthz: http.Server;
let httpPort: number;
const httpSeen: http.IncomingHttpHeaders[] = [];
let proxy: TestProxy;

before(async () => {
  up = await startUpstream('echo');
  grpcAuthz = await startAuthzServer(() => ({ status: { code: 0 } }));
  proc = await startExtProcServer(passHeaders);
  rls = await startRecordingRateLimitServer();
  httpAuthz = http.createServer((req, res) => {
    httpSeen.push(req.headers);
    req.resume();
    req.on('end', () => res.writeHead(req.headers['x-api-key'] === 'http-key' ? 200 : 403).end());
  });
  await new Promise<void>((r) => httpAuthz.listen(0, '127.0.0.1', r));
  httpPort = (httpAuthz.address() as AddressInfo).port;
  proxy = await startProxy(config());
});
after(async () => {
  await proxy?.close();
  await up?.close();
  await grpcAuthz?.close();
  await proc?.close();
  rls?.close();
  await new Promise((r) => httpAuthz?.close(r));
});

function config(): string {
  return `binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - name: grpc
      matches: [{path: {pathPrefix: /grpc}}]
      policies:
        extAuthz:
          host: ${grpcAuthz.host}
          policies:
            backendAuth:
              key: grpc-key
              credentials: [{location: {header: {name: x-org-key, prefix: "Org "}}, key: org-secret}]
            requestHeaderModifier: {add: {x-tenant: acme}}
      backends: [{host: "127.0.0.1:${up.port}"}]
    - name: http
      matches: [{path: {pathPrefix: /http}}]
      policies:
        extAuthz:
          host: 127.0.0.1:${httpPort}
          protocol: {http: {}}
          policies:
            backendAuth: {key: {value: http-key, location: {header: {name: X-Api-Key}}}}
            requestHeaderModifier: {set: {x-caller: gw}}
      backends: [{host: "127.0.0.1:${up.port}"}]
    - name: proc
      matches: [{path: {pathPrefix: /proc}}]
      policies:
        extProc:
          host: ${proc.host}
          timeout: 5s
          processingOptions: {requestBodyMode: none, responseBodyMode: none}
          policies:
            backendAuth: {key: proc-key}
            requestHeaderModifier: {add: {x-tenant: acme}}
      backends: [{host: "127.0.0.1:${up.port}"}]
    - name: limited
      matches: [{path: {pathPrefix: /limited}}]
      policies:
        remoteRateLimit:
          host: 127.0.0.1:${rls.port}
          domain: gw
          timeout: 5s
          descriptors: [{entries: [{key: path, value: request.path}]}]
          policies:
            backendAuth: {key: {value: limit-secret, location: {header: {name: x-rls-key}}}}
      backends: [{host: "127.0.0.1:${up.port}"}]
    - name: limited-headers
      matches: [{path: {pathPrefix: /alone}}]
      policies:
        remoteRateLimit:
          host: 127.0.0.1:${rls.port}
          domain: gw
          timeout: 5s
          descriptors: [{entries: [{key: path, value: request.path}]}]
          policies:
            backendAuth: {headers: [{name: x-dd-key, value: dd-secret}]}
      backends: [{host: "127.0.0.1:${up.port}"}]
`;
}

describe('a policy service’s credential and headers', () => {
  test('gRPC: the key (Authorization: Bearer) and headers are the call’s metadata', async () => {
    const r = await fetch(proxy.url('/grpc/a'), { headers: { authorization: 'Bearer client-token' } });
    assert.equal(r.status, 200);
    await r.arrayBuffer();
    const md = grpcAuthz.metadata.at(-1);
    assert.equal(md?.['authorization'], 'Bearer grpc-key');
    assert.equal(md?.['x-org-key'], 'Org org-secret');
    assert.equal(md?.['x-tenant'], 'acme');
    // the client's own Authorization still reaches the service inside the check request
    assert.equal(
      grpcAuthz.seen.at(-1)?.attributes?.request?.http?.headers['authorization'],
      'Bearer client-token',
    );
  });

  test('HTTP: the key in its own header, over what the client sent; the service decides by it', async () => {
    const r = await fetch(proxy.url('/http/a'), { headers: { 'x-api-key': 'forged' } });
    assert.equal(r.status, 200);
    await r.arrayBuffer();
    assert.equal(httpSeen.at(-1)?.['x-api-key'], 'http-key');
    assert.equal(httpSeen.at(-1)?.['x-caller'], 'gw');
  });

  test('extProc: the key and headers are the stream’s metadata', async () => {
    const r = await fetch(proxy.url('/proc/a'));
    assert.equal(r.status, 200);
    await r.arrayBuffer();
    assert.equal(proc.metadata.at(-1)?.['authorization'], 'Bearer proc-key');
    assert.equal(proc.metadata.at(-1)?.['x-tenant'], 'acme');
  });

  test('remoteRateLimit: the key in its own metadata key', async () => {
    const r = await fetch(proxy.url('/limited/a'));
    assert.equal(r.status, 200);
    await r.arrayBuffer();
    assert.equal(rls.metadata.at(-1)?.['x-rls-key'], 'limit-secret');
  });

  test('credentials alone (here in agentgateway’s earlier headers form): each secret in its own metadata key', async () => {
    const r = await fetch(proxy.url('/alone/a'));
    assert.equal(r.status, 200);
    await r.arrayBuffer();
    assert.equal(rls.metadata.at(-1)?.['x-dd-key'], 'dd-secret');
    assert.equal(rls.metadata.at(-1)?.authorization, undefined);
  });

  test('the key never shows in the loaded config; a query-parameter location is refused', () => {
    const { ir } = loadConfigText('gw.yaml', config(), process.cwd());
    const text = JSON.stringify(ir);
    assert.doesNotMatch(text, /grpc-key|http-key|proc-key|limit-secret|org-secret|dd-secret/);
    const issues = (policy: string, policies: string) =>
      configIssues(`binds:
- port: 0
  listeners:
  - routes:
    - policies:
        ${policy}: {host: "127.0.0.1:9000", policies: ${policies}}
      backends: [{host: "127.0.0.1:1"}]
`);
    assert.match(
      issues('extAuthz', '{backendAuth: {key: {value: k, location: {queryParameter: {name: k}}}}}'),
      /extAuthz\.policies\.backendAuth\.key\.location: the extAuthz service takes its key in a header/,
    );
    assert.match(
      issues('extProc', '{backendAuth: {key: {value: k, location: {cookie: {name: k}}}}}'),
      /extProc\.policies\.backendAuth\.key\.location: the extProc service takes its key in a header/,
    );
    assert.match(
      issues('extProc', '{backendAuth: {credentials: [{key: "a\\nb", location: {header: {name: k}}}]}}'),
      /extProc\.policies\.backendAuth\.credentials\[0\]\.key: the key holds a line break or NUL/,
    );
    assert.match(
      issues('extAuthz', '{backendAuth: {key: "a\\rb"}}'),
      /extAuthz\.policies\.backendAuth\.key: the key holds a line break or NUL/,
    );
    assert.match(
      issues('extProc', '{backendAuth: {credentials: [{key: k, location: {queryParameter: {name: k}}}]}}'),
      /extProc\.policies\.backendAuth\.credentials\[0\]\.location: a call to a service carries its credentials in headers/,
    );
    // passthrough and the token forms load (service-call-tokens.test.ts); aws does not
    assert.equal(issues('extAuthz', '{backendAuth: {passthrough: {}}}'), '');
    assert.match(
      issues('extAuthz', '{backendAuth: {aws: {}}}'),
      /aws on the extAuthz service is not supported/,
    );
  });
});
