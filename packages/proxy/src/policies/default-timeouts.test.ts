// The default deadlines of the policies that call a service: ext_authz 200 ms, remote rate limit
// 100 ms. Tested against servers that accept the connection and then never answer (a paused server),
// which is what a deadline is for; a refused port would fail at once and prove nothing.
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { after, before, test } from 'node:test';
import { startUpstream, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { request } from 'undici';

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
  proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
${route('authz-grpc', `{extAuthz: {grpc: {host: "${host}"}}}`)}
${route('authz-http', `{extAuthz: {http: {host: "${host}"}}}`)}
${route('ratelimit', `{remoteRateLimit: {host: "${host}", domain: gw, failureMode: failClosed, descriptors: [{entries: [{key: k, value: '"v"'}]}]}}`)}
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
