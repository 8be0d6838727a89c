// mcpRemoteRateLimit: the real envoyproxy/ratelimit (with Redis) asked per MCP request, its
// descriptors built from mcp.* (the tool called, the method), the MCP SDK client and raw JSON-RPC
// through gw to a real MCP server. Calls to one tool are limited while others pass; a list over its
// limit is refused before any target is asked; the refusal is a JSON-RPC error with HTTP 429 and the
// quota headers; a descriptor that cannot be built makes no call; an unreachable service fails open
// or closed (500); token descriptors are refused nowhere but never counted here.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { CLOSED_PORT, type RateLimitService, sameRateLimitWindow, startRateLimitService } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { request } from 'undici';
import { loadConfigText } from '../config/load.ts';
import { assertConfigRejects, type HttpPeer, startHttpPeer, textOf } from './test-support.ts';

const SERVICE_CONFIG = `
domain: mcp
descriptors:
  - key: tool
    value: weather
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: list
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: sdk
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: streamed
    rate_limit: {unit: minute, requests_per_unit: 100}
`;

let service: RateLimitService;
let web: HttpPeer;
let proxy: TestProxy;

before(async () => {
  [service, web] = await Promise.all([
    startRateLimitService({ config: SERVICE_CONFIG }),
    startHttpPeer('web'),
  ]);
  const route = (path: string, limit: string) => `
    - matches: [{path: {pathPrefix: ${path}}}]
      policies:
        mcpRemoteRateLimit: ${limit}
      backends:
      - mcp:
          targets:
          - name: web
            mcp: {host: "${web.url}"}`;
  const byTool = `[{entries: [{key: tool, value: mcp.tool.name}]}]`;
  // one window per run: a list is limited per client (x-user) and method
  const byList = `[{entries: [{key: list, value: 'mcp.method + ":" + request.headers["x-user"]'}]}]`;
  const dead = `127.0.0.1:${CLOSED_PORT}`;
  proxy = await startProxy(`
binds:
- port: 0
  listeners:
  - routes:
${route('/tools', `{host: "${service.host}", domain: mcp, timeout: 2s, descriptors: ${byTool}}`)}
${route('/lists', `{host: "${service.host}", domain: mcp, timeout: 2s, descriptors: ${byList}}`)}
${route('/sdk', `{host: "${service.host}", domain: mcp, timeout: 2s, descriptors: [{entries: [{key: sdk, value: 'mcp.tool.name + ":" + request.headers["x-run"]'}]}]}`)}
${route('/streamed', `{host: "${service.host}", domain: mcp, timeout: 2s, descriptors: [{entries: [{key: streamed, value: mcp.tool.name}]}]}`)}
${route('/down-default', `{host: "${dead}", domain: mcp, descriptors: ${byTool}}`)}
${route('/down-closed', `{host: "${dead}", domain: mcp, failureMode: failClosed, descriptors: ${byTool}}`)}
${route('/down-open', `{host: "${dead}", domain: mcp, failureMode: failOpen, descriptors: ${byTool}}`)}
`);
});

after(async () => {
  await proxy?.close();
  await web?.close();
  await service?.close();
});

/** A raw JSON-RPC session at `path`: initialize, then each request's status, headers and body. */
async function session(path: string, headers: Record<string, string> = {}) {
  const url = proxy.url(`${path}/mcp`);
  const base = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    ...headers,
  };
  let id = 0;
  const post = async (
    method: string,
    params: Record<string, unknown>,
    extra: Record<string, string> = {},
  ) => {
    const r = await request(url, {
      method: 'POST',
      headers: { ...base, ...extra },
      body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params }),
    });
    return {
      status: r.statusCode,
      headers: r.headers,
      // a JSON answer, or (a target sent something first) an SSE stream
      body: (String(r.headers['content-type']).startsWith('application/json')
        ? await r.body.json()
        : { sse: await r.body.text() }) as Record<string, unknown>,
    };
  };
  const init = await post('initialize', {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 'raw', version: '1' },
  });
  assert.equal(init.status, 200);
  const sid = String(init.headers['mcp-session-id']);
  return (method: string, params: Record<string, unknown> = {}) =>
    post(method, params, { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18' });
}

describe('mcpRemoteRateLimit against the real envoyproxy/ratelimit', () => {
  test('calls to a limited tool: two pass with quota headers, the third is a JSON-RPC error with 429', async () => {
    await sameRateLimitWindow();
    const rpc = await session('/tools');
    for (const remaining of ['1', '0']) {
      const r = await rpc('tools/call', { name: 'weather', arguments: { city: 'Oslo' } });
      assert.equal(r.status, 200, service.logs());
      assert.equal((r.body.result as { content: { text: string }[] }).content[0]?.text, 'web: sunny in Oslo');
      assert.equal(r.headers['x-ratelimit-limit'], '2, 2;w=60');
      assert.equal(r.headers['x-ratelimit-remaining'], remaining);
    }
    const over = await rpc('tools/call', { name: 'weather', arguments: { city: 'Oslo' } });
    assert.equal(over.status, 429);
    assert.equal(over.headers['x-ratelimit-remaining'], '0');
    assert.deepEqual(over.body.error, { code: -32006, message: 'rate limit exceeded for tools/call' });
    // another tool has no limit of its own: it passes
    const echo = await rpc('tools/call', { name: 'echo', arguments: { message: 'hi' } });
    assert.equal(echo.status, 200);
    // a list has no tool: the descriptor cannot be built, and no call is made
    assert.equal((await rpc('tools/list')).status, 200);
  });

  test('the SDK client sees the refusal as an error with HTTP 429 and the JSON-RPC message', async () => {
    await sameRateLimitWindow();
    const client = new Client({ name: 'sdk', version: '1' });
    // one counter per run: 1 call a minute
    const transport = new StreamableHTTPClientTransport(new URL(proxy.url('/sdk/mcp')), {
      requestInit: { headers: { 'x-run': String(Date.now()) } },
    });
    await client.connect(transport);
    try {
      const r = await client.callTool({ name: 'weather', arguments: { city: 'Rome' } });
      assert.match(textOf(r), /sunny in Rome/);
      const err = await client
        .callTool({ name: 'weather', arguments: { city: 'Rome' } })
        .catch((e: unknown) => e);
      assert.ok(err instanceof Error, 'the limit of 1 a minute was reached');
      // StreamableHTTPError: the HTTP status as its code, the JSON-RPC error in its message
      assert.equal((err as Error & { code?: number }).code, 429);
      assert.match(err.message, /rate limit exceeded for tools\/call/);
    } finally {
      await client.close();
    }
  });

  test('a list over its limit is refused before any target is asked', async () => {
    await sameRateLimitWindow();
    const rpc = await session('/lists', { 'x-user': `u-${Date.now()}` });
    assert.equal((await rpc('tools/list')).status, 200);
    const asked = web.seen.filter((m) => m === 'tools/list').length;
    const over = await rpc('tools/list');
    assert.equal(over.status, 429);
    assert.equal((over.body.error as { code: number }).code, -32006);
    assert.equal(web.seen.filter((m) => m === 'tools/list').length, asked);
    // another method is another descriptor value
    assert.equal((await rpc('prompts/list')).status, 200);
  });

  test('a streamed answer (progress first) carries the quota headers too', async () => {
    const rpc = await session('/streamed');
    const res = await rpc('tools/call', { name: 'progress', _meta: { progressToken: 'p1' } });
    assert.equal(res.status, 200);
    assert.match(String(res.body.sse), /notifications\/progress/);
    assert.equal(res.headers['x-ratelimit-limit'], '100, 100;w=60');
  });

  test('an unreachable service: failClosed (the default) answers 500 in JSON-RPC, failOpen lets the call through', async () => {
    for (const path of ['/down-default', '/down-closed']) {
      const closed = await session(path);
      const r = await closed('tools/call', { name: 'weather', arguments: { city: 'Lima' } });
      assert.equal(r.status, 500, path);
      assert.deepEqual(r.body.error, { code: -32603, message: 'rate limit service unavailable' });
    }
    const open = await session('/down-open');
    const ok = await open('tools/call', { name: 'weather', arguments: { city: 'Lima' } });
    assert.equal(ok.status, 200);
  });

  test('config: a descriptor that does not compile, a tokens descriptor, a route without mcp backends', () => {
    /** A route with this mcpRemoteRateLimit descriptor, to `backend`: refused with `error`. */
    const refused = (descriptor: string, backend: string, error: RegExp) =>
      assertConfigRejects(
        (text) => loadConfigText('gw.yaml', text, process.cwd()),
        `binds:
- port: 8080
  listeners:
  - routes:
    - policies:
        mcpRemoteRateLimit: {host: "127.0.0.1:1", domain: d, descriptors: [${descriptor}]}
      backends: [${backend}]
`,
        error,
      );
    const mcp = '{mcp: {targets: [{name: w, mcp: {host: "http://127.0.0.1:1/mcp"}}]}}';
    refused(
      '{entries: [{key: k, value: "mcp.tool.("}]}',
      mcp,
      /policies\.mcpRemoteRateLimit\.descriptors\[0\]\.entries\[0\]\.value/,
    );
    refused(
      '{entries: [{key: k, value: mcp.tool.name}], type: tokens}',
      mcp,
      /mcpRemoteRateLimit\.descriptors\[0\]\.type: an MCP request has no LLM usage/,
    );
    refused(
      '{entries: [{key: k, value: mcp.tool.name}]}',
      '{host: "127.0.0.1:1"}',
      /policies\.mcpRemoteRateLimit: mcpRemoteRateLimit applies only to mcp backends/,
    );
  });

  test('config: the mcp block’s policies take it too, for its targets', () => {
    const { ir } = loadConfigText(
      'gw.yaml',
      `mcp:
  port: 3000
  targets: [{name: w, mcp: {host: "http://127.0.0.1:1/mcp"}}]
  policies:
    mcpRemoteRateLimit: {host: "127.0.0.1:1", domain: d, descriptors: [{entries: [{key: tool, value: mcp.tool.name}]}]}
`,
      process.cwd(),
    );
    const target = ir.binds[0]?.listeners[0]?.routes[0]?.backends[0]?.target;
    assert.equal(target?.kind, 'mcp');
    assert.equal(target.kind === 'mcp' ? target.remoteRateLimit?.domain : undefined, 'd');
  });
});
