// The conditional form of directResponse, localRateLimit, remoteRateLimit, extAuthz and extProc against
// real peers (an echo upstream, HTTP authorization services, an ext_proc gRPC server, Envoy's ratelimit
// service): the entry whose condition holds applies per request, the fallback, nothing when none holds,
// the trace's `conditional` event, and config errors naming the field.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { ConfigError } from '@gw/api';
import { type RateLimitService, startRateLimitService, startUpstream, type TestServer } from '@gw/testkit';
import { type ExtProcServer, setRequestHeader, startExtProcServer } from '@gw/testkit/ext-proc-server';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { request } from 'undici';
import { loadConfigText } from '../config/load.ts';

/** A plain HTTP authorization service answering every check with `status`; counts its checks. */
async function startAuthz(status: number) {
  let checks = 0;
  const server = http.createServer((req, res) => {
    checks++;
    req.resume();
    res.writeHead(status, { 'content-length': 0 });
    res.end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    host: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    checks: () => checks,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

const RLS_CONFIG = `domain: gw
descriptors:
  - key: plan
    value: free
    rate_limit: {unit: hour, requests_per_unit: 1}
  - key: plan
    value: paid
    rate_limit: {unit: hour, requests_per_unit: 100}
`;

let up: TestServer;
let proxy: TestProxy;
let allow: Awaited<ReturnType<typeof startAuthz>>;
let deny: Awaited<ReturnType<typeof startAuthz>>;
let proc: ExtProcServer;
let rls: RateLimitService;

before(async () => {
  up = await startUpstream('echo');
  [allow, deny, rls] = await Promise.all([
    startAuthz(200),
    startAuthz(403),
    startRateLimitService({ config: RLS_CONFIG }),
  ]);
  proc = await startExtProcServer((req) => setRequestHeader(req, 'x-processed', 'yes'));
  const backend = `backends: [{host: "127.0.0.1:${up.port}"}]`;
  const route = (name: string, policies: string) => `
    - name: ${name}
      matches: [{path: {pathPrefix: /${name}}}]
      policies: ${policies}
      ${backend}`;
  const procOptions = '{requestBodyMode: none, responseBodyMode: none, responseHeaderMode: skip}';
  const rl = (plan: string) =>
    `{host: "${rls.host}", domain: gw, timeout: 2s, descriptors: [{entries: [{key: plan, value: "'${plan}'"}]}]}`;
  proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:${route(
    'dr',
    `{directResponse: {conditional: [
        {condition: "request.method == 'POST'", status: 201, body: posted},
        {condition: "request.headers['x-a'] == '1'", status: 202, bodyExpression: "'a:' + request.path", headers: {x-v: "'one'"}}]}}`,
  )}${route(
    'dr-fallback',
    `{directResponse: {conditional: [
        {condition: "request.headers['x-teapot'] == 'yes'", status: 418, body: teapot},
        {condition: null, status: 200, body: fallback}]}}`,
  )}${route(
    'local',
    `{localRateLimit: {conditional: [
        {condition: "request.headers['x-plan'] == 'free'", maxTokens: 1, tokensPerFill: 1, fillInterval: 1h},
        {maxTokens: 3, tokensPerFill: 3, fillInterval: 1h}]}}`,
  )}${route(
    'authz',
    `{extAuthz: {conditional: [
        {condition: "request.headers['x-tier'] == 'free'", host: "${deny.host}", protocol: {http: {}}},
        {condition: "request.path.startsWith('/authz/admin')", host: "${deny.host}", protocol: {http: {}}},
        {condition: "request.path.startsWith('/authz/app')", host: "${allow.host}", protocol: {http: {}}}]}}`,
  )}${route(
    'proc',
    `{extProc: {conditional: [{condition: "request.headers['x-proc'] == 'yes'", host: "${proc.host}", processingOptions: ${procOptions}}]}}`,
  )}${route(
    'remote',
    `{remoteRateLimit: {conditional: [
        {condition: "request.headers['x-plan'] == 'free'", ${rl('free').slice(1, -1)}},
        {${rl('paid').slice(1, -1)}}]}}`,
  )}
`);
});

after(async () => {
  await proxy?.close();
  await Promise.all([up?.close(), allow?.close(), deny?.close(), proc?.close(), rls?.close()]);
});

async function send(path: string, opts: { method?: string; headers?: Record<string, string> } = {}) {
  const r = await request(proxy.url(path), {
    method: (opts.method ?? 'GET') as 'GET',
    headers: opts.headers ?? {},
  });
  const body = await r.body.text();
  return { status: r.statusCode, headers: r.headers, body };
}

const fromUpstream = (r: { body: string }) =>
  JSON.parse(r.body) as { url: string; headers: Record<string, string> };

describe('conditional directResponse', () => {
  test('the first entry whose condition holds answers; none holding forwards the request', async () => {
    const post = await send('/dr/x', { method: 'POST', headers: { 'x-a': '1' } });
    assert.equal(post.status, 201, 'the first true entry wins over a later true one');
    assert.equal(post.body, 'posted');
    const a = await send('/dr/y', { headers: { 'x-a': '1' } });
    assert.equal(a.status, 202);
    assert.equal(a.body, 'a:/dr/y');
    assert.equal(a.headers['x-v'], 'one');
    const none = await send('/dr/z');
    assert.equal(none.status, 200);
    assert.equal(fromUpstream(none).url, '/dr/z', 'no entry applies: the upstream answers');
  });

  test('an entry without condition is the fallback', async () => {
    assert.equal((await send('/dr-fallback', { headers: { 'x-teapot': 'yes' } })).status, 418);
    const fb = await send('/dr-fallback');
    assert.equal(fb.status, 200);
    assert.equal(fb.body, 'fallback');
  });

  test('the trace names the entry picked, the fallback, or none', async () => {
    const pick = async (path: string, headers: Record<string, string> = {}) => {
      const t = proxy.trace();
      await send(path, { headers });
      return (await t).map((e) => e.message).filter((m) => m.type === 'conditional');
    };
    assert.deepEqual(await pick('/dr/t', { 'x-a': '1' }), [
      { type: 'conditional', policy: 'directResponse', entry: 1, fallback: false },
    ]);
    assert.deepEqual(await pick('/dr-fallback'), [
      { type: 'conditional', policy: 'directResponse', entry: 1, fallback: true },
    ]);
    assert.deepEqual(await pick('/dr/t'), [{ type: 'conditional', policy: 'directResponse', entry: null }]);
  });
});

describe('conditional localRateLimit', () => {
  test("each entry's bucket is its own; the fallback's applies to the rest", async () => {
    const free = { 'x-plan': 'free' };
    assert.equal((await send('/local', { headers: free })).status, 200);
    const limited = await send('/local', { headers: free });
    assert.equal(limited.status, 429, 'the free bucket holds one token');
    for (let i = 0; i < 3; i++) assert.equal((await send('/local')).status, 200, `fallback request ${i + 1}`);
    assert.equal((await send('/local')).status, 429, 'the fallback bucket holds three');
  });
});

describe('conditional extAuthz', () => {
  test('the service of the entry whose condition holds decides; none holding: no check', async () => {
    const before = { allow: allow.checks(), deny: deny.checks() };
    assert.equal((await send('/authz/app', { headers: { 'x-tier': 'free' } })).status, 403);
    assert.equal((await send('/authz/admin')).status, 403);
    assert.equal((await send('/authz/app/page')).status, 200);
    const open = await send('/authz/public');
    assert.equal(open.status, 200, 'no entry holds: the request passes unchecked');
    assert.equal(fromUpstream(open).url, '/authz/public');
    assert.equal(deny.checks() - before.deny, 2);
    assert.equal(allow.checks() - before.allow, 1);
  });
});

describe('conditional extProc', () => {
  test('only requests whose condition holds go through the processor', async () => {
    const streams = proc.streams.length;
    const on = await send('/proc', { headers: { 'x-proc': 'yes' } });
    assert.equal(fromUpstream(on).headers['x-processed'], 'yes');
    const off = await send('/proc');
    assert.equal(fromUpstream(off).headers['x-processed'], undefined);
    assert.equal(proc.streams.length - streams, 1, 'one Process stream, for the matching request');
  });
});

describe('conditional remoteRateLimit', () => {
  test("the entry whose condition holds sends its descriptors; the fallback's go for the rest", async () => {
    const free = { 'x-plan': 'free' };
    assert.equal((await send('/remote', { headers: free })).status, 200);
    assert.equal((await send('/remote', { headers: free })).status, 429, 'plan=free allows one an hour');
    assert.equal((await send('/remote')).status, 200, 'plan=paid (the fallback) allows 100');
    assert.equal((await send('/remote')).status, 200);
  });
});

describe('conditional forms: config', () => {
  const load = (policy: string) =>
    loadConfigText(
      't.yaml',
      `binds: [{port: 8080, listeners: [{routes: [{policies: ${policy}, backends: [{host: "127.0.0.1:1"}]}]}]}]`,
      process.cwd(),
    );
  const rejects = (policy: string, re: RegExp) =>
    assert.throws(
      () => load(policy),
      (e: unknown) => e instanceof ConfigError && re.test(e.message),
      String(re),
    );

  test("agentgateway's shapes load, on routes and on gateways and listeners", () => {
    load('{directResponse: {conditional: [{condition: "true", status: 200}, {status: 404, body: no}]}}');
    load(
      '{remoteRateLimit: {conditional: [{host: "127.0.0.1:1", domain: d, descriptors: [{entries: [{key: k, value: "1"}]}]}]}}',
    );
    load('{extProc: {conditional: []}}');
    const ir = loadConfigText(
      't.yaml',
      `gateways: {default: {port: 8080, extAuthz: {conditional: [{condition: "request.path == '/a'", host: "127.0.0.1:1"}]}}}
routes: [{backends: [{host: "127.0.0.1:1"}]}]`,
      process.cwd(),
    );
    assert.ok(
      ir.ir.binds[0]?.listeners[0]?.routes[0]?.policies.extAuthz,
      'the gateway extAuthz reaches its routes',
    );
  });

  test('a condition that does not compile is an error naming the entry', () => {
    rejects(
      '{directResponse: {conditional: [{condition: "true", status: 200}, {condition: "request.path ==", status: 404}]}}',
      /policies\.directResponse\.conditional\[1\]\.condition: invalid CEL expression/,
    );
    rejects(
      '{localRateLimit: {conditional: [{condition: "nosuch.x", fillInterval: 1s}]}}',
      /policies\.localRateLimit\.conditional\[0\]\.condition: invalid CEL expression/,
    );
    rejects(
      '{extProc: {conditional: [{condition: "1 +", host: "127.0.0.1:1", processingOptions: {requestBodyMode: none, responseBodyMode: none}}]}}',
      /policies\.extProc\.conditional\[0\]\.condition: invalid CEL/,
    );
  });

  test('each entry is checked as the plain form, at its own path; the fallback is last', () => {
    rejects(
      '{extAuthz: {conditional: [{condition: "true", host: "127.0.0.1:1", protocol: {http: {path: "1 +"}}}]}}',
      /policies\.extAuthz\.conditional\[0\]\.http\.path: invalid CEL/,
    );
    rejects(
      '{remoteRateLimit: {conditional: [{host: "127.0.0.1:1", domain: d, descriptors: [{entries: [{key: k, value: "x +"}]}]}]}}',
      /remoteRateLimit\.conditional\[0\]\.descriptors\[0\]\.entries\[0\]\.value: invalid CEL/,
    );
    rejects(
      '{directResponse: {conditional: [{status: 200, headers: {x-a: "1 +"}}]}}',
      /directResponse\.conditional\[0\]\.headers\.x-a: invalid CEL/,
    );
    rejects('{extAuthz: {conditional: [{condition: "true"}]}}', /extAuthz\.conditional\[0\]\.host: set host/);
    rejects(
      '{directResponse: {conditional: [{status: 200}, {condition: "true", status: 201}]}}',
      /directResponse\.conditional\[0\]: only the last entry may leave out condition/,
    );
    rejects(
      '{localRateLimit: {conditional: [{condition: "true", maxTokens: 1, tokensPerFill: 2, fillInterval: 1s}]}}',
      /localRateLimit\.conditional\[0\]\.maxTokens: maxTokens cannot be less than tokensPerFill/,
    );
  });
});
