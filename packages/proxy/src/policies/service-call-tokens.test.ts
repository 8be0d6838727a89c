// backendAuth a policy's own service takes per call (extAuthz grpc and http, extProc,
// remoteRateLimit): a JWT gw signs (jwtSign), the client's validated JWT (passthrough), a token from
// an OAuth endpoint; each in the header its location names, beside the static headers, checked at
// real gRPC servers and an HTTP one. A credential that cannot be obtained is the service's failure
// (its failureMode decides); what a service call cannot carry is refused by field.
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startUpstream, type TestServer } from '@gw/testkit';
import { type AuthzServer, startAuthzServer } from '@gw/testkit/ext-authz-server';
import { type ExtProcServer, passHeaders, startExtProcServer } from '@gw/testkit/ext-proc-server';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { type RecordingRateLimitServer, startRecordingRateLimitServer } from '@gw/testkit/rls-recorder';
import { tempDir } from '@gw/testkit/temp-dir';
import { exportJWK, jwtVerify, SignJWT } from 'jose';
import { loadConfigText } from '../config/load.ts';

let up: TestServer;
let grpcAuthz: AuthzServer;
let proc: ExtProcServer;
let rls: RecordingRateLimitServer;
let httpAuthz: http.Server;
const httpSeen: http.IncomingHttpHeaders[] = [];
let sts: http.Server;
const stsSeen: URLSearchParams[] = [];
let proxy: TestProxy;
let clientToken: string;
const gwKey = generateKeyPairSync('rsa', { modulusLength: 2048 });
const idpKey = generateKeyPairSync('rsa', { modulusLength: 2048 });
const dir = tempDir('gw-service-tokens');

const portOf = (s: { address(): AddressInfo | string | null }) => (s.address() as AddressInfo).port;
const indent = (s: string, n: number) => s.replaceAll('\n', `\n${' '.repeat(n)}`);

before(async () => {
  up = await startUpstream('echo');
  grpcAuthz = await startAuthzServer(() => ({ status: { code: 0 } }));
  proc = await startExtProcServer(passHeaders);
  rls = await startRecordingRateLimitServer();
  httpAuthz = http.createServer((req, res) => {
    httpSeen.push(req.headers);
    req.resume().on('end', () => res.writeHead(200).end());
  });
  // an OAuth token endpoint (RFC 8693 token exchange) that answers with a token naming the subject
  sts = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => {
      body += d;
    });
    req.on('end', () => {
      const params = new URLSearchParams(body);
      stsSeen.push(params);
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          access_token: `exchanged-for-${params.get('subject_token')?.slice(0, 8)}`,
          issued_token_type: 'urn:ietf:params:oauth:token-type:access_token',
          token_type: 'Bearer',
          expires_in: 300,
        }),
      );
    });
  });
  await Promise.all(
    [httpAuthz, sts].map((s) => new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()))),
  );
  // the client's JWT, validated by the route's jwtAuth against this JWKS
  const jwk = { ...(await exportJWK(idpKey.publicKey)), kid: 'idp', alg: 'RS256' };
  writeFileSync(join(dir, 'jwks.json'), JSON.stringify({ keys: [jwk] }));
  clientToken = await new SignJWT({ sub: 'alice' })
    .setProtectedHeader({ alg: 'RS256', kid: 'idp' })
    .setIssuer('https://idp.test')
    .setAudience('gw')
    .setExpirationTime('5m')
    .sign(idpKey.privateKey);
  proxy = await startProxy(config());
});
after(async () => {
  await proxy?.close();
  await up?.close();
  await grpcAuthz?.close();
  await proc?.close();
  rls?.close();
  for (const s of [httpAuthz, sts]) await new Promise((r) => s?.close(r));
});

function config(): string {
  const pem = indent(gwKey.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString().trim(), 16);
  const jwtSign = (extra = '') => `jwtSign:
                signingKey: |
                  ${indent(pem, 2)}
                claims: {iss: gw, aud: authz}${extra}`;
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
              ${jwtSign()}
              credentials: [{location: {header: {name: x-org-key}}, key: org-secret}]
      backends: [{host: "127.0.0.1:${up.port}"}]
    - name: http
      matches: [{path: {pathPrefix: /http}}]
      policies:
        jwtAuth:
          providers: [{issuer: "https://idp.test", audiences: [gw], jwks: {file: ${join(dir, 'jwks.json')}}}]
        extAuthz:
          host: 127.0.0.1:${portOf(httpAuthz)}
          protocol: {http: {}}
          policies:
            backendAuth: {passthrough: {location: {header: {name: x-user-jwt}}}}
      backends: [{host: "127.0.0.1:${up.port}"}]
    - name: proc
      matches: [{path: {pathPrefix: /proc}}]
      policies:
        extProc:
          host: ${proc.host}
          timeout: 5s
          processingOptions: {requestBodyMode: none, responseBodyMode: none}
          policies:
            backendAuth:
              ${jwtSign('\n                location: {header: {name: x-gw-token, prefix: "Token "}}')}
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
            backendAuth:
              oauthTokenExchange:
                host: 127.0.0.1:${portOf(sts)}
                path: /token
                clientAuth: {clientId: gw, clientSecret: gw-secret}
                subjectToken: {source: {header: {name: x-user-token}}}
      backends: [{host: "127.0.0.1:${up.port}"}]
    - name: down
      matches: [{path: {pathPrefix: /down}}]
      policies:
        extAuthz:
          host: ${grpcAuthz.host}
          policies:
            backendAuth:
              oauthTokenExchange:
                host: 127.0.0.1:1
                path: /token
                clientAuth: {clientId: gw, clientSecret: gw-secret}
                subjectToken: {source: {header: {name: x-user-token}}}
      backends: [{host: "127.0.0.1:${up.port}"}]
`;
}

const bearer = (v: string | undefined) => {
  assert.ok(v?.startsWith('Bearer '), `not a bearer credential: ${v}`);
  return (v as string).slice('Bearer '.length);
};

describe('a policy service’s credential obtained per call', () => {
  test('extAuthz over gRPC: a JWT gw signs in Authorization, the static credentials beside it', async () => {
    const r = await fetch(proxy.url('/grpc/a'));
    assert.equal(r.status, 200);
    await r.arrayBuffer();
    const md = grpcAuthz.metadata.at(-1);
    const { payload } = await jwtVerify(bearer(md?.authorization), gwKey.publicKey, { audience: 'authz' });
    assert.equal(payload.iss, 'gw');
    assert.equal(md?.['x-org-key'], 'org-secret');
  });

  test('extAuthz over HTTP: the client’s validated JWT passed through in its own header', async () => {
    const r = await fetch(proxy.url('/http/a'), { headers: { authorization: `Bearer ${clientToken}` } });
    assert.equal(r.status, 200);
    await r.arrayBuffer();
    // a location without a prefix carries the token alone
    assert.equal(httpSeen.at(-1)?.['x-user-jwt'], clientToken);
  });

  test('extProc: the signed JWT in the stream’s metadata, under its header and prefix', async () => {
    const r = await fetch(proxy.url('/proc/a'));
    assert.equal(r.status, 200);
    await r.arrayBuffer();
    const v = proc.metadata.at(-1)?.['x-gw-token'] ?? '';
    assert.ok(v.startsWith('Token '), v);
    await jwtVerify(v.slice('Token '.length), gwKey.publicKey, { audience: 'authz' });
  });

  test('remoteRateLimit: a token exchanged for the request’s own, cached for the next call', async () => {
    for (const subject of ['subject-one', 'subject-one']) {
      const r = await fetch(proxy.url('/limited/a'), { headers: { 'x-user-token': subject } });
      assert.equal(r.status, 200);
      await r.arrayBuffer();
      assert.equal(rls.metadata.at(-1)?.authorization, 'Bearer exchanged-for-subject-');
    }
    assert.equal(stsSeen.length, 1, 'the second call took the cached token');
    assert.equal(stsSeen[0]?.get('subject_token'), 'subject-one');
  });

  test('a credential that cannot be obtained fails the check: the failure mode (deny) answers', async () => {
    const before = grpcAuthz.metadata.length;
    const r = await fetch(proxy.url('/down/a'), { headers: { 'x-user-token': 't' } });
    assert.equal(r.status, 403);
    await r.arrayBuffer();
    assert.equal(grpcAuthz.metadata.length, before, 'the service was not called');
  });

  test('refused by field: a location that is not a header, aws, and any of them on networkExtAuthz', () => {
    const load = (yaml: string) => () => loadConfigText('t.yaml', yaml, process.cwd());
    const route = (auth: string) => `binds:
- port: 0
  listeners:
  - routes:
    - policies:
        extAuthz: {host: 127.0.0.1:9, policies: {backendAuth: ${auth}}}
      backends: [{host: 127.0.0.1:9}]
`;
    assert.throws(
      load(route('{passthrough: {location: {queryParameter: {name: t}}}}')),
      /extAuthz\.policies\.backendAuth\.passthrough\.location: the extAuthz service takes its credential in a header/,
    );
    assert.throws(
      load(route('{aws: {region: us-east-1}}')),
      /backendAuth aws on the extAuthz service is not supported by this build of gw yet/,
    );
    assert.throws(
      load(route('{gcp: {type: idToken}}')),
      /backendAuth\.gcp\.audience: an ID token for the extAuthz service needs its audience/,
    );
    assert.throws(
      load(`frontendPolicies:
  networkExtAuthz: {host: 127.0.0.1:9, policies: {backendAuth: {passthrough: {}}}}
${route('{key: k}')}`),
      /networkExtAuthz\.policies\.backendAuth\.passthrough: backendAuth passthrough \(obtained per request\) needs an HTTP request/,
    );
  });
});
