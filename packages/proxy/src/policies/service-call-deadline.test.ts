// agentgateway's way to give a policy's service a deadline: policies.http.requestTimeout on the
// extAuthz, extProc or remoteRateLimit service (its shapes have no timeout field of their own). Each
// call gives up at that deadline instead of the default; tested against a server that accepts the
// connection and never answers, and told by the reason the policy traces, which names the deadline.
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
const sockets = new Set<Socket>();
let proxy: TestProxy;

before(async () => {
  up = await startUpstream();
  paused = createServer((s) => {
    sockets.add(s);
    s.on('error', () => {});
    s.on('close', () => sockets.delete(s));
  });
  const port = await new Promise<number>((r) =>
    paused.listen(0, '127.0.0.1', () => r((paused.address() as { port: number }).port)),
  );
  const host = `127.0.0.1:${port}`;
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
${route('authz-grpc', `{extAuthz: {host: "${host}", ${within(310)}}}`)}
${route('authz-http', `{extAuthz: {host: "${host}", protocol: {http: {}}, policies: {http: {requestTimeout: 320ms, version: HTTP/1.1}}}}`)}
${route('authz-gw-form', `{extAuthz: {grpc: {host: "${host}"}, ${within(330)}}}`)}
${route('extproc', `{extProc: {host: "${host}", policies: {http: {requestTimeout: 340ms, version: HTTP/2.0}}}}`)}
${route('extproc-conditional', `{extProc: {conditional: [{condition: "true", host: "${host}", ${within(350)}}]}}`)}
${route('ratelimit', `{remoteRateLimit: {host: "${host}", domain: gw, failureMode: failClosed, ${within(360)}, descriptors: [{entries: [{key: k, value: '"v"'}]}]}}`)}
`);
});
after(async () => {
  await proxy.close();
  await up.close();
  for (const s of sockets) s.destroy();
  paused.close();
});

/** The request's status and the reason its policy gave for failing (its trace). */
async function failed(path: string): Promise<{ status: number; reason: string }> {
  const trace = proxy.trace();
  const r = await request(proxy.url(path));
  await r.body.text();
  const failure = (await trace).find((e) => JSON.stringify(e).includes('"result":"failure"'));
  const reason = /"reason":"([^"]*)"/.exec(JSON.stringify(failure ?? {}))?.[1] ?? '';
  return { status: r.statusCode, reason };
}

test('extAuthz over gRPC: policies.http.requestTimeout is the deadline of the check', async () => {
  assert.deepEqual(await failed('/authz-grpc'), { status: 403, reason: 'no answer within 310ms' });
});

test('extAuthz over HTTP (version HTTP/1.1, what it speaks) takes it too', async () => {
  assert.deepEqual(await failed('/authz-http'), { status: 403, reason: 'no answer within 320ms' });
});

test("gw's grpc form takes it as its grpc.timeout", async () => {
  assert.deepEqual(await failed('/authz-gw-form'), { status: 403, reason: 'no answer within 330ms' });
});

test('extProc: the deadline of each answer, plain and in the conditional form', async () => {
  const plain = await failed('/extproc');
  assert.equal(plain.status, 500);
  assert.match(plain.reason, /within 340ms$/);
  const conditional = await failed('/extproc-conditional');
  assert.equal(conditional.status, 500);
  assert.match(conditional.reason, /within 350ms$/);
});

test('remoteRateLimit: the deadline of the ShouldRateLimit call', async () => {
  assert.deepEqual(await failed('/ratelimit'), { status: 500, reason: 'no answer within 360ms' });
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
