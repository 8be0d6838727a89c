// A guard service's connection policies (agentgateway's SimpleLocalBackendPolicies `http` and
// `tcp`): `http.version: HTTP2` calls OpenAI moderation's stand-in over h2c (a node:http2 server
// that only speaks HTTP/2 by prior knowledge, relaying to the fake moderation endpoint);
// `http.requestTimeout` bounds how long a verdict may take, on a cloud guard and on a webhook's named
// backend; `tcp` is read into the service's connection settings; `backendTunnel` reaches the service
// through a forward proxy (the `proxy` package), by CONNECT.
import assert from 'node:assert/strict';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createH2Server, type Http2Server } from 'node:http2';
import { after, before, describe, test } from 'node:test';
import type { FakeAnthropic, FakeOpenAI } from '@gw/testkit';
import { FAKE_REPLY } from '@gw/testkit';
import { type FakeModeration, startFakeModeration } from '@gw/testkit/llm/moderation';
import type { TestProxy } from '@gw/testkit/proxy';
import type OpenAI from 'openai';
import { createProxy, type ProxyServer } from 'proxy';
import { request } from 'undici';
import { loadConfigText } from '../config/load.ts';
import {
  askGpt,
  closeServers,
  gptModel,
  guardFailsClosed,
  listen,
  startFakeProviders,
  startGuardProxy,
} from './guardrails/test-support.ts';

let openai: FakeOpenAI;
let anthropic: FakeAnthropic;
let moderation: FakeModeration;
/** h2c only, relaying each stream to the fake moderation endpoint; the HTTP versions it saw. */
let h2: Http2Server;
const h2Versions: string[] = [];
/** Accepts and reads every call, never answers. */
let silent: Server;
/** A forward proxy, and the CONNECTs it was asked for. */
let forward: ProxyServer;
const connects: string[] = [];
let proxy: TestProxy;
let gpt: OpenAI;

before(async () => {
  ({ openai, anthropic } = await startFakeProviders());
  moderation = await startFakeModeration({ apiKey: 'sk-moderation' });
  h2 = createH2Server(async (req, res) => {
    h2Versions.push(req.httpVersion);
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers))
      if (!k.startsWith(':') && typeof v === 'string') headers[k] = v;
    const up = await request(`http://127.0.0.1:${moderation.port}${req.url}`, {
      method: 'POST',
      headers,
      body: Buffer.concat(chunks),
    });
    res.writeHead(up.statusCode, { 'content-type': String(up.headers['content-type']) });
    res.end(Buffer.from(await up.body.arrayBuffer()));
  });
  const h2Host = await listen(h2 as unknown as Server);
  silent = createHttpServer((req) => req.resume());
  const silentHost = await listen(silent);
  forward = createProxy(createHttpServer());
  forward.prependListener('connect', (req: { url?: string }) => connects.push(String(req.url)));
  const forwardHost = await listen(forward);
  const moderated = (name: string, host: string, policies: string) =>
    gptModel(
      openai,
      name,
      `{request: [{openAIModeration: {hostOverride: "${host}", policies: {backendAuth: {key: sk-moderation}, ${policies}}}}]}`,
    );
  ({ proxy, gpt } = await startGuardProxy(
    `${moderated('h2', h2Host, 'http: {version: HTTP2}, tcp: {connectTimeout: 2s, keepalives: {time: 30s}}')}
${moderated('slow', silentHost, 'http: {requestTimeout: 150ms}')}
${moderated('tunneled', `127.0.0.1:${moderation.port}`, `backendTunnel: {proxy: {host: "${forwardHost}"}, mode: Connect}`)}
${gptModel(openai, 'slow-hook', '{request: [{webhook: {target: {backend: hook}}}]}')}`,
    '',
    `backends:
- name: hook
  host: "${silentHost}"
  policies:
    http: {requestTimeout: 200ms}
    tcp: {connectTimeout: 1s}
`,
  ));
});

after(async () => {
  await proxy?.close();
  (h2 as unknown as Server | undefined)?.close();
  await closeServers(silent, forward);
  await Promise.all([openai?.close(), anthropic?.close(), moderation?.close()]);
});

describe('a guard service’s http policy', () => {
  test('version HTTP2: the plain stand-in is called over h2c, and answers the guard', async () => {
    const before = moderation.seen.length;
    const r = await askGpt(gpt, 'h2', 'Hello!');
    assert.equal(r.choices[0]?.message.content, FAKE_REPLY);
    assert.equal(moderation.seen.length, before + 1);
    assert.equal(moderation.seen.at(-1)?.headers.authorization, 'Bearer sk-moderation');
    assert.deepEqual(h2Versions, ['2.0']);
  });

  test('backendTunnel: the service is reached through the forward proxy, by CONNECT', async () => {
    const before = moderation.seen.length;
    const r = await askGpt(gpt, 'tunneled', 'Hello!');
    assert.equal(r.choices[0]?.message.content, FAKE_REPLY);
    assert.equal(moderation.seen.length, before + 1);
    assert.deepEqual(connects, [`127.0.0.1:${moderation.port}`]);
  });

  test('requestTimeout on a cloud guard: no verdict in time fails the guard closed, saying so', async () => {
    const t0 = performance.now();
    await guardFailsClosed(() => ({ openai, gpt }), /stack/)('slow', /no answer within 150 ms/)();
    assert.ok(performance.now() - t0 < 5_000);
  });

  test('requestTimeout of a webhook’s named backend bounds the verdict', async () => {
    await guardFailsClosed(() => ({ openai, gpt }), /stack/)('slow-hook', /no verdict within 200 ms/)();
  });
});

describe('the service settings read from the config', () => {
  /** The first request guard of the config's first model. */
  const guard = (text: string): { kind: string; settings: unknown } => {
    const { ir } = loadConfigText('test.yaml', text, process.cwd());
    const find = (o: unknown): unknown => {
      if (!o || typeof o !== 'object') return undefined;
      const guards = (o as { guards?: { request?: unknown[] } }).guards;
      if (guards?.request?.[0]) return guards.request[0];
      for (const v of Object.values(o)) {
        const f = find(v);
        if (f) return f;
      }
      return undefined;
    };
    const g = find(ir.binds);
    assert.ok(g, 'a guard in the IR');
    return g as { kind: string; settings: unknown };
  };

  test('tcp and http on a cloud guard', () => {
    const g = guard(`llm:
  port: 8080
  models:
  - name: m
    provider: openai
    params: {apiKey: k, model: gpt-4o-mini}
    guardrails:
      request:
      - openAIModeration:
          policies:
            tcp: {connectTimeout: 3s, keepalives: {time: 20s, retries: 2}}
            http: {version: HTTP/2.0, requestTimeout: 4s}
`);
    assert.equal(g.kind, 'openAIModeration');
    const s = (g.settings as { service: Record<string, unknown> }).service;
    assert.equal(s.timeoutMs, 4000);
    assert.equal(s.http2, true);
    assert.deepEqual(s.tcp, { connectTimeout: '3s', keepalives: { time: '20s', retries: 2 } });
  });

  test('a webhook’s named backend brings its tcp and http; its own timeout wins', () => {
    const g = guard(`backends:
- name: hook
  host: "127.0.0.1:9"
  policies: {tcp: {connectTimeout: 3s}, http: {version: HTTP2, requestTimeout: 4s}}
llm:
  port: 8080
  models:
  - name: m
    provider: openai
    params: {apiKey: k, model: gpt-4o-mini}
    guardrails:
      request:
      - webhook: {target: {backend: hook}, timeout: 1s}
`);
    const s = g.settings as Record<string, unknown>;
    assert.equal(s.timeoutMs, 1000);
    assert.equal(s.http2, true);
    assert.deepEqual(s.tcp, { connectTimeout: '3s' });
  });
});
