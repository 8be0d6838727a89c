import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConfigError } from '@gw/api';
import { CLOSED_PORT, startUpstream, type TestServer } from '@gw/testkit';
import { type AuthzServer, type CheckAnswer, startAuthzServer } from '@gw/testkit/ext-authz-server';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { HeaderValueOption_HeaderAppendAction as Action } from '@gw/xds-proto/envoy/config/core/v3/base';
import { request } from 'undici';
import { loadConfigText } from '../../config/load.ts';

const PERMISSION_DENIED = 7;

/** The authorization service's policy: the request's `x-authz` header says what to answer. */
async function answer(verdict: string | undefined): Promise<CheckAnswer> {
  switch (verdict) {
    case 'gold':
    case 'silver':
      return {
        status: { code: 0 },
        httpResponse: {
          case: 'okResponse',
          value: {
            headers: [
              { header: { key: 'x-user', value: 'alice' }, appendAction: Action.OVERWRITE_IF_EXISTS_OR_ADD },
              { header: { key: 'x-tag', value: 'from-authz' } },
              { header: { key: 'x-default', value: 'authz' }, appendAction: Action.ADD_IF_ABSENT },
            ],
            headersToRemove: ['x-secret'],
            responseHeadersToAdd: [{ header: { key: 'x-authz-checked', value: 'yes' } }],
          },
        },
        dynamicMetadata: { user: 'alice', tier: verdict, groups: ['dev', 'ops'] },
      };
    case 'deny':
      return {
        status: { code: PERMISSION_DENIED, message: 'no' },
        httpResponse: {
          case: 'deniedResponse',
          value: {
            status: { code: 401 },
            headers: [{ header: { key: 'www-authenticate', value: 'Bearer realm="authz"' } }],
            body: 'go away\n',
          },
        },
      };
    case 'slow':
      await sleep(5_000);
      return { status: { code: 0 } };
    default:
      // Denied with no HTTP response: the gateway picks the answer.
      return { status: { code: PERMISSION_DENIED } };
  }
}

let authz: AuthzServer;
let up: TestServer;
let proxy: TestProxy;
before(async () => {
  authz = await startAuthzServer((req) => answer(req.attributes?.request?.http?.headers['x-authz']));
  up = await startUpstream();
  const dead = `127.0.0.1:${CLOSED_PORT}`;
  const route = (name: string, extAuthz: string, extra = '') => `
    - name: ${name}
      matches: [{path: {pathPrefix: /${name}}}]
      policies:
        extAuthz: ${extAuthz}${extra}
      backends: [{host: "127.0.0.1:${up.port}"}]`;
  proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:${route(
    'check',
    `
          grpc:
            host: ${authz.host}
            timeout: 5s
            contextExtensions: {tenant: acme, zone: eu}
            requestMetadata:
              gw.request: '{"path": request.path, "method": request.method}'`,
    `
        authorization:
          rules: ['extauthz.tier == "gold" && extauthz.user == "alice"']`,
  )}${route('slow-closed', `{grpc: {host: "${authz.host}", timeout: 100ms}}`)}${route(
    'slow-open',
    `{grpc: {host: "${authz.host}", timeout: 100ms}, failureMode: failOpen}`,
  )}${route('down-closed', `{grpc: {host: "${dead}"}}`)}${route(
    'down-open',
    `{grpc: {host: "${dead}"}, failureMode: failOpen}`,
  )}
`);
});
after(async () => {
  await proxy.close();
  await up.close();
  await authz.close();
});

async function call(path: string, headers: Record<string, string> = {}) {
  const r = await request(proxy.url(path), { headers });
  return { status: r.statusCode, headers: r.headers, text: await r.body.text() };
}

describe('gRPC ext_authz against a real Authorization/Check server', () => {
  test('the CheckRequest carries the request, its peers, context extensions and CEL metadata', async () => {
    const r = await call('/check/a?x=1', {
      'x-authz': 'gold',
      'X-Mixed-Case': 'v',
      authorization: 'Bearer t',
    });
    assert.equal(r.status, 200);
    const req = authz.seen.at(-1)!;
    const a = req.attributes!;
    const http = a.request!.http!;
    assert.equal(http.method, 'GET');
    assert.equal(http.path, '/check/a?x=1');
    assert.equal(http.host, `127.0.0.1:${proxy.port()}`);
    assert.equal(http.scheme, 'http');
    assert.equal(http.protocol, 'HTTP/1.1');
    assert.ok(http.id.length > 0);
    assert.equal(http.headers['x-mixed-case'], 'v');
    assert.equal(http.headers.authorization, 'Bearer t');
    assert.equal(http.headers[':path'], '/check/a?x=1');
    assert.equal(http.headers[':method'], 'GET');
    for (const k of Object.keys(http.headers)) assert.equal(k, k.toLowerCase());
    assert.ok(a.request!.time!.seconds > 0n);
    const src = a.source!.address!.address;
    const dst = a.destination!.address!.address;
    if (src.case !== 'socketAddress' || dst.case !== 'socketAddress')
      assert.fail('peers are socket addresses');
    assert.equal(src.value.address, '127.0.0.1');
    assert.equal(dst.value.address, '127.0.0.1');
    assert.equal(dst.value.portSpecifier.value, proxy.port());
    assert.deepEqual(a.contextExtensions, { tenant: 'acme', zone: 'eu' });
    assert.deepEqual(a.metadataContext!.filterMetadata['gw.request'], { path: '/check/a', method: 'GET' });
  });

  test('allowed: upstream sees the set, appended and removed headers; the client the added ones', async () => {
    const r = await call('/check', {
      'x-authz': 'gold',
      'x-user': 'mallory',
      'x-tag': 'client',
      'x-default': 'client',
      'x-secret': 's3cret',
    });
    assert.equal(r.status, 200);
    assert.equal(r.headers['x-authz-checked'], 'yes');
    const seen = JSON.parse(r.text).headers as Record<string, string>;
    assert.equal(seen['x-user'], 'alice', 'overwritten');
    assert.equal(seen['x-tag'], 'client, from-authz', 'appended (the default append action)');
    assert.equal(seen['x-default'], 'client', 'added only when absent');
    assert.equal(seen['x-secret'], undefined, 'removed');
  });

  test('dynamic metadata is extauthz.* in a following authorization rule', async () => {
    assert.equal((await call('/check', { 'x-authz': 'gold' })).status, 200);
    const r = await call('/check', { 'x-authz': 'silver' });
    assert.equal(r.status, 403);
    assert.equal(r.text, 'authorization denied\n');
  });

  test("denied: the client gets the server's status, headers and body; upstream sees nothing", async () => {
    const before = up.seen.length;
    const r = await call('/check', { 'x-authz': 'deny' });
    assert.equal(r.status, 401);
    assert.equal(r.headers['www-authenticate'], 'Bearer realm="authz"');
    assert.equal(r.text, 'go away\n');
    const bare = await call('/check', { 'x-authz': 'nope' });
    assert.equal(bare.status, 403);
    assert.equal(bare.text, 'denied by external authorization\n');
    assert.equal(up.seen.length, before);
  });

  test('no answer within the timeout: failClosed is 403, failOpen passes', async () => {
    const before = up.seen.length;
    const t0 = performance.now();
    const closed = await call('/slow-closed', { 'x-authz': 'slow' });
    assert.ok(performance.now() - t0 < 3000, 'answered at the deadline, not when the server did');
    assert.equal(closed.status, 403);
    assert.equal(closed.text, 'external authorization failed\n');
    assert.equal(up.seen.length, before);
    const open = await call('/slow-open', { 'x-authz': 'slow' });
    assert.equal(open.status, 200);
    assert.equal(up.seen.length, before + 1);
  });

  test('server down: failClosed is 403, failOpen passes', async () => {
    const closed = await call('/down-closed', { 'x-authz': 'gold' });
    assert.equal(closed.status, 403);
    assert.equal(closed.text, 'external authorization failed\n');
    const open = await call('/down-open', { 'x-authz': 'gold' });
    assert.equal(open.status, 200);
    assert.equal(JSON.parse(open.text).headers['x-user'], undefined);
  });
});

describe('config', () => {
  const load = (policy: string) =>
    loadConfigText(
      'gw.yaml',
      `binds:
- port: 0
  listeners:
  - routes:
    - policies:
        extAuthz: ${policy}
      backends: [{host: "127.0.0.1:1"}]
`,
      process.cwd(),
    );
  const issues = (policy: string) => {
    try {
      load(policy);
    } catch (err) {
      assert.ok(err instanceof ConfigError);
      return err.issues.map((i) => `${i.path}: ${i.message}`);
    }
    assert.fail('config was accepted');
  };

  test('CEL errors point at the field', () => {
    const [grpc] = issues('{grpc: {host: "a:1", requestMetadata: {m: "request.path =="}}}');
    assert.match(
      grpc!,
      /^binds\[0\]\.listeners\[0\]\.routes\[0\]\.policies\.extAuthz\.grpc\.requestMetadata\.m: invalid CEL/,
    );
    const got = issues(
      '{http: {host: "a:1", path: "1 +", addRequestHeaders: {x-a: "nosuch"}, responseMetadata: {k: ")"}}}',
    );
    assert.equal(got.length, 3);
    assert.match(got.join('\n'), /extAuthz\.http\.path: invalid CEL/);
    assert.match(got.join('\n'), /extAuthz\.http\.addRequestHeaders\.x-a: invalid CEL/);
    assert.match(got.join('\n'), /extAuthz\.http\.responseMetadata\.k: invalid CEL/);
  });

  test('the schema limits the shape', () => {
    assert.ok(issues('{grpc: {host: "no-port"}}').length > 0);
    assert.ok(issues('{grpc: {host: "a:1"}, http: {host: "a:1"}}').length > 0);
    const many = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v']));
    assert.ok(issues(`{grpc: {host: "a:1", contextExtensions: ${JSON.stringify(many)}}}`).length > 0);
    assert.ok(issues('{http: {host: "a:1", allowedRequestHeaders: [":authority"]}}').length > 0);
    load('{http: {host: "a:1"}, failureMode: FailOpen}');
  });
});
