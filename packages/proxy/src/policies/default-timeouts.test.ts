// The deadlines of the policies that call a service: by default ext_authz 200 ms, remote rate limit
// 100 ms; and agentgateway's way to set one, policies.http.requestTimeout on the extAuthz, extProc or
// remoteRateLimit service (its shapes have no timeout field of their own). Tested against servers
// that accept the connection and then never answer (a paused server), which is what a deadline is
// for; a refused port would fail at once and prove nothing.
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { after, before, test } from 'node:test';
import { ConfigError } from '@gw/api';
import { startUpstream, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { request } from 'undici';
import { loadConfigText } from '../config/load.ts';

let up: TestServer;
let paused: Server;
let pausedPort: number;
const sockets = new Set<Socket>();
let proxy: TestProxy;

before(async () => {
  up = await startUpstream();
  paused = createServer((s) => {
    sockets.add(s);
    s.on('error', () => {});
    s.on('close', () => sockets.delete(s));
  });
  pausedPort = await new Promise<number>((r) =>
    paused.listen(0, '127.0.0.1', () => r((paused.address() as { port: number }).port)),
  );
  const host = `127.0.0.1:${pausedPort}`;
  const route = (name: string, policies: string) => `    - name: ${name}
      matches: [{path: {pathPrefix: /${name}}}]
      policies: ${policies}
      backends: [{host: "127.0.0.1:${up.port}"}]`;
  const within = (ms: number) => `policies: {http: {requestTimeout: ${ms}ms}}`;
  proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
${route('authz-grpc', `{extAuthz: {grpc: {host: "${host}"}}}`)}
${route('authz-http', `{extAuthz: {http: {host: "${host}"}}}`)}
${route('ratelimit', `{remoteRateLimit: {host: "${host}", domain: gw, failureMode: failClosed, descriptors: [{entries: [{key: k, value: '"v"'}]}]}}`)}
${route('set-authz-grpc', `{extAuthz: {host: "${host}", ${within(310)}}}`)}
${route('set-authz-http', `{extAuthz: {host: "${host}", protocol: {http: {}}, policies: {http: {requestTimeout: 320ms, version: HTTP/1.1}}}}`)}
${route('set-authz-gw-form', `{extAuthz: {grpc: {host: "${host}"}, ${within(330)}}}`)}
${route('set-extproc', `{extProc: {host: "${host}", policies: {http: {requestTimeout: 340ms, version: HTTP/2.0}}}}`)}
${route('set-extproc-conditional', `{extProc: {conditional: [{condition: "true", host: "${host}", ${within(350)}}]}}`)}
${route('set-ratelimit', `{remoteRateLimit: {host: "${host}", domain: gw, failureMode: failClosed, ${within(360)}, descriptors: [{entries: [{key: k, value: '"v"'}]}]}}`)}
`);
});
after(async () => {
  await proxy.close();
  await up.close();
  for (const s of sockets) s.destroy();
  paused.close();
});

/** The request's status, how long it took, and the reason its policy gave for failing (its trace). */
async function timed(path: string): Promise<{ status: number; ms: number; reason: string }> {
  const trace = proxy.trace();
  const t0 = performance.now();
  const r = await request(proxy.url(path));
  await r.body.text();
  const ms = performance.now() - t0;
  const failure = (await trace).find((e) => JSON.stringify(e).includes('"result":"failure"'));
  const reason = /"reason":"([^"]*)"/.exec(JSON.stringify(failure ?? {}))?.[1] ?? '';
  return { status: r.statusCode, ms, reason };
}

// The deadline is told by the reason the policy gives, which names it; the time taken only rules out
// giving up early, or waiting for an answer (the server never sends one: the request would hang).
const atLeast = (r: { ms: number }, lo: number) =>
  assert.ok(r.ms >= lo && r.ms < 5_000, `answered after ${r.ms.toFixed(0)} ms, expected ${lo} ms or more`);

test('ext_authz over gRPC gives up after 200 ms by default (fail closed: 403)', async () => {
  const r = await timed('/authz-grpc');
  assert.equal(r.status, 403);
  assert.equal(r.reason, 'no answer within 200ms');
  atLeast(r, 190);
});

test('ext_authz over HTTP gives up after 200 ms by default', async () => {
  const r = await timed('/authz-http');
  assert.equal(r.status, 403);
  assert.equal(r.reason, 'no answer within 200ms');
  atLeast(r, 190);
});

test('the remote rate limit gives up after 100 ms by default', async () => {
  const r = await timed('/ratelimit');
  assert.equal(r.status, 500);
  assert.equal(r.reason, 'no answer within 100ms');
  atLeast(r, 95);
});

/** The status and the traced failure reason of a request whose policy's service never answers. */
async function failed(path: string): Promise<{ status: number; reason: string }> {
  const { status, reason } = await timed(path);
  return { status, reason };
}

test('extAuthz over gRPC: policies.http.requestTimeout is the deadline of the check', async () => {
  assert.deepEqual(await failed('/set-authz-grpc'), { status: 403, reason: 'no answer within 310ms' });
});

test('extAuthz over HTTP (version HTTP/1.1, what it speaks) takes it too', async () => {
  assert.deepEqual(await failed('/set-authz-http'), { status: 403, reason: 'no answer within 320ms' });
});

test("gw's grpc form takes it as its grpc.timeout", async () => {
  assert.deepEqual(await failed('/set-authz-gw-form'), { status: 403, reason: 'no answer within 330ms' });
});

test('extProc: the deadline of each answer, plain and in the conditional form', async () => {
  const plain = await failed('/set-extproc');
  assert.equal(plain.status, 500);
  assert.match(plain.reason, /within 340ms$/);
  const conditional = await failed('/set-extproc-conditional');
  assert.equal(conditional.status, 500);
  assert.match(conditional.reason, /within 350ms$/);
});

test('remoteRateLimit: the deadline of the ShouldRateLimit call', async () => {
  assert.deepEqual(await failed('/set-ratelimit'), { status: 500, reason: 'no answer within 360ms' });
});

test('a deadline set twice, or an HTTP version the call does not speak, is named at its field', () => {
  const text = `binds:
- port: 3000
  listeners:
  - routes:
    - policies:
        extAuthz: {host: "127.0.0.1:9000", timeout: 1s, policies: {http: {requestTimeout: 50ms}}}
        extProc: {host: "127.0.0.1:9001", policies: {http: {version: HTTP/1.1}}}
        remoteRateLimit:
          host: "127.0.0.1:9002"
          domain: d
          descriptors: [{entries: [{key: k, value: '"v"'}]}]
          timeout: 1s
          policies: {http: {requestTimeout: 50ms}}
      backends: [{host: "127.0.0.1:8080"}]
    - policies:
        extAuthz: {http: {host: "127.0.0.1:9000", timeout: 1s}, policies: {http: {requestTimeout: 50ms, version: HTTP2}}}
      backends: [{host: "127.0.0.1:8080"}]
`;
  let issues: ConfigError['issues'] = [];
  try {
    loadConfigText('deadlines.yaml', text, process.cwd());
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${err}`);
    issues = err.issues;
  }
  const lines = issues.map((i) => `${i.line}: ${i.path}: ${i.message}`);
  const at = 'binds[0].listeners[0].routes';
  assert.deepEqual(
    lines.sort(),
    [
      `6: ${at}[0].policies.extAuthz.policies.http.requestTimeout: set one deadline: timeout or policies.http.requestTimeout, not both`,
      `7: ${at}[0].policies.extProc.policies.http.version: the calls of a gRPC service are HTTP/2: leave version out or set HTTP/2.0`,
      `13: ${at}[0].policies.remoteRateLimit.policies.http.requestTimeout: set one deadline: timeout or policies.http.requestTimeout, not both`,
      `16: ${at}[1].policies.extAuthz.policies.http.requestTimeout: set one deadline: http.timeout or policies.http.requestTimeout, not both`,
      `16: ${at}[1].policies.extAuthz.policies.http.version: HTTP/2 to an HTTP extAuthz service is not supported by this build of gw yet`,
    ].sort(),
  );
});
