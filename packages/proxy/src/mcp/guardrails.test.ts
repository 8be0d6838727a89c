// MCP guardrail processors (mcpGuardrails) as a client and a processor author see them: the SDK
// client through gw to a real MCP server, and processors written with @gw/guardrail-sdk's MCP
// handler. Each verdict in each phase, the failure modes, method matching, what reaches the access
// log and metrics, and the config errors.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createMcpProcessorHandler, type McpRequestCall, type McpResponseCall, mcp } from '@gw/guardrail-sdk';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { loadConfigText } from '../config/load.ts';
import { methodPhase } from './guardrails.ts';
import {
  assertConfigRejects,
  connectClient,
  guardedRoute,
  type HttpPeer,
  startBlackHole,
  startHttpPeer,
  startRawHttp,
  textOf,
} from './test-support.ts';

interface Seen {
  call: McpRequestCall | McpResponseCall;
  headers: IncomingHttpHeaders;
}

/** A processor on 127.0.0.1:0 whose verdicts the tests decide; it records every call. */
async function startProcessor(
  decide: (call: McpRequestCall | McpResponseCall) => unknown,
): Promise<{ port: number; seen: Seen[]; close(): Promise<void> }> {
  const seen: Seen[] = [];
  const handler = createMcpProcessorHandler({
    onRequest: (call, ctx) => {
      seen.push({ call, headers: ctx.headers });
      return decide(call) as never;
    },
    onResponse: (call, ctx) => {
      seen.push({ call, headers: ctx.headers });
      return decide(call) as never;
    },
  });
  const server: Server = createServer((req, res) => void handler(req, res));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as AddressInfo).port,
    seen,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

function toolCall(s: Seen): { name?: unknown; arguments?: Record<string, unknown> } {
  return s.call.params as never;
}

let web: HttpPeer;
let policy: Awaited<ReturnType<typeof startProcessor>>;
let garbage: { port: number; close(): Promise<void> };
let hole: { port: number; close(): Promise<void> };
let proxy: TestProxy;

const route = (path: string, guardrails: string) => guardedRoute(web.url, path, guardrails);

before(async () => {
  web = await startHttpPeer('web');
  hole = await startBlackHole();
  // The policy processor: rejects echo of "forbidden", rewrites echo of "rewrite me", hides the
  // slow tool from lists and swaps the weather answer for one in capitals.
  policy = await startProcessor((call) => {
    if (call.phase === 'request' && call.method === 'tools/call') {
      const p = call.params as { name: string; arguments?: { message?: string } };
      if (p.arguments?.message === 'forbidden')
        return mcp.reject('echoing that is not allowed', -32010, { rule: 'no-forbidden' });
      if (p.arguments?.message === 'rewrite me')
        return mcp.modifyParams({ ...p, arguments: { message: 'rewritten' } }, 'policy rewrite');
      return mcp.allow();
    }
    if (call.phase === 'response' && call.method === 'tools/list') {
      const tools = (call.result.tools as { name: string }[]).filter((t) => t.name !== 'slow');
      return mcp.modifyResult({ ...call.result, tools });
    }
    if (call.phase === 'response' && call.method === 'tools/call') {
      const text = (call.result.content as { text: string }[])[0]?.text ?? '';
      if (text.includes('secret')) return mcp.reject('the answer holds a secret');
      return mcp.modifyResult({ content: [{ type: 'text', text: text.toUpperCase() }] });
    }
    if (call.phase === 'request' && call.method === 'prompts/get') return mcp.reject('no prompts today');
    return mcp.allow();
  });
  // Answers 200 with something that is not a verdict (not written with the SDK, which refuses to).
  garbage = await startRawHttp((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"action":"shrug"}');
  });
  proxy = await startProxy(`
binds:
- port: 0
  listeners:
  - routes:
${route(
  '/guarded',
  `          - host: 127.0.0.1:${policy.port}
            metadata: {team: 'request.headers["x-team"]', path: request.path}
            requestHeaders: {allowed: [x-team, ":method", authorization], disallowed: [authorization]}
            methods: {"tools/call": full, "tools/*": response, "prompts/get": request, "*/list": off}`,
)}
${route(
  '/closed',
  `          - host: 127.0.0.1:${hole.port}
            timeout: 300ms
            methods: {"tools/call": request}
          - host: 127.0.0.1:${garbage.port}
            methods: {"prompts/*": request}`,
)}
${route(
  '/open',
  `          - host: 127.0.0.1:${hole.port}
            timeout: 300ms
            failureMode: failOpen
            methods: {"*": full}`,
)}
`);
});

after(async () => {
  await proxy?.close();
  await Promise.all([web?.close(), policy?.close(), garbage?.close(), hole?.close()]);
});

async function client(path: string) {
  return (await connectClient(proxy.url(`${path}/mcp`), 'streamable-http')).client;
}

describe('mcpGuardrails processors', () => {
  test('allow: the call goes on, and the processor sees method, params, allowed headers and metadata', async () => {
    policy.seen.length = 0;
    const c = await client('/guarded');
    const r = await c.callTool({ name: 'weather', arguments: { city: 'Oslo' } });
    // the response phase upper-cased the answer
    assert.equal(textOf(r), 'WEB: SUNNY IN OSLO');
    const req = policy.seen.find((s) => s.call.phase === 'request' && s.call.method === 'tools/call');
    assert.ok(req, 'the processor saw the request phase');
    assert.equal(req.call.version, 'gw.mcp-processor/v1');
    assert.deepEqual(toolCall(req).arguments, { city: 'Oslo' });
    assert.equal(req.call.metadata.path, '/guarded/mcp');
    assert.equal(req.call.metadata.team, undefined, 'no x-team header: the expression is left out');
    assert.equal(req.call.headers[':method'], 'POST');
    assert.equal(req.call.headers['content-type'], undefined, 'not in the allow list');
    const res = policy.seen.find((s) => s.call.phase === 'response' && s.call.method === 'tools/call');
    assert.ok(res?.call.phase === 'response');
    assert.equal(res.call.target, 'web');
    assert.equal((res.call.result.content as { text: string }[])[0]?.text, 'web: sunny in Oslo');
    await c.close();
  });

  test('headers: only the allowed ones, and disallowed wins over allowed', async () => {
    policy.seen.length = 0;
    const { StreamableHTTPClientTransport } = await import(
      '@modelcontextprotocol/sdk/client/streamableHttp.js'
    );
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const c = new Client({ name: 't', version: '1' });
    await c.connect(
      new StreamableHTTPClientTransport(new URL(proxy.url('/guarded/mcp')), {
        requestInit: { headers: { 'x-team': 'blue', authorization: 'Bearer not-for-processors' } },
      }),
    );
    await c.callTool({ name: 'echo', arguments: { message: 'hi' } });
    const req = policy.seen.find((s) => s.call.phase === 'request');
    assert.equal(req?.call.headers['x-team'], 'blue');
    assert.equal(req?.call.headers.authorization, undefined);
    assert.equal(req?.call.metadata.team, 'blue');
    await c.close();
  });

  test('request modify: the target gets the processor’s params', async () => {
    const c = await client('/guarded');
    const r = await c.callTool({ name: 'echo', arguments: { message: 'rewrite me' } });
    assert.equal(textOf(r), 'WEB ECHO: REWRITTEN');
    await c.close();
  });

  test('request reject: a JSON-RPC error with the processor’s code, message and data; the target never sees it', async () => {
    const c = await client('/guarded');
    const before = web.seen.filter((m) => m === 'tools/call').length;
    await assert.rejects(
      c.callTool({ name: 'echo', arguments: { message: 'forbidden' } }),
      (err: unknown) => {
        assert.ok(err instanceof McpError, String(err));
        assert.equal(err.code, -32010);
        assert.match(err.message, /echoing that is not allowed/);
        assert.deepEqual(err.data, { rule: 'no-forbidden' });
        return true;
      },
    );
    assert.equal(web.seen.filter((m) => m === 'tools/call').length, before);
    await assert.rejects(c.getPrompt({ name: 'greet', arguments: { who: 'x' } }), (err: unknown) => {
      assert.ok(err instanceof McpError);
      assert.equal(err.code, -32003, 'a reject without a code is the gateway’s forbidden');
      assert.match(err.message, /no prompts today/);
      return true;
    });
    await c.close();
  });

  test('response modify on a list, and a response reject', async () => {
    const c = await client('/guarded');
    // tools/list matches both "tools/*" (response) and "*/list" (off): the prefix is as long, and wins
    const names = (await c.listTools()).tools.map((t) => t.name);
    assert.ok(names.includes('weather'));
    assert.ok(!names.includes('slow'), 'the processor hid slow');
    await assert.rejects(c.callTool({ name: 'echo', arguments: { message: 'a secret' } }), (err: unknown) => {
      assert.ok(err instanceof McpError);
      assert.match(err.message, /the answer holds a secret/);
      return true;
    });
    await c.close();
  });

  test('unmatched methods bypass the processor', async () => {
    policy.seen.length = 0;
    const c = await client('/guarded');
    await c.listPrompts();
    await c.listResources();
    assert.deepEqual(
      policy.seen.map((s) => s.call.method),
      [],
      'initialize, prompts/list and resources/list match no key, or one that is off',
    );
    await c.close();
  });

  test('failClosed: an unreachable processor and a garbage verdict each end in a JSON-RPC error', async () => {
    const c = await client('/closed');
    await assert.rejects(c.callTool({ name: 'weather', arguments: { city: 'x' } }), (err: unknown) => {
      assert.ok(err instanceof McpError);
      assert.equal(err.code, -32004);
      assert.match(err.message, /MCP guardrail processor 0 failed: no verdict within 300 ms/);
      return true;
    });
    await assert.rejects(c.getPrompt({ name: 'greet', arguments: { who: 'x' } }), (err: unknown) => {
      assert.ok(err instanceof McpError);
      assert.match(err.message, /MCP guardrail processor 1 failed: invalid request-phase verdict/);
      return true;
    });
    // methods the failing processors do not see still work
    assert.ok((await c.listTools()).tools.length > 0);
    await c.close();
  });

  test('the trace shows the MCP request and each processor call', async () => {
    const c = await client('/guarded');
    // the client's server stream (a GET) stays open: trace the next POST
    const traced = proxy.trace('request.method == "POST"');
    await c.callTool({ name: 'echo', arguments: { message: 'rewrite me' } });
    const all = (await traced).map((e) => e.message as { type?: string });
    assert.deepEqual(
      all.find((m) => m.type === 'mcp'),
      { type: 'mcp', method: 'tools/call', target: 'web', tool: 'echo', outcome: 'ok' },
      'the request itself is in the trace: method, target, tool and outcome',
    );
    const events = all.filter((m) => m.type === 'mcp.guardrail');
    assert.deepEqual(events, [
      {
        type: 'mcp.guardrail',
        processor: 0,
        phase: 'request',
        action: 'modify',
        applied: true,
        reason: 'policy rewrite',
      },
      { type: 'mcp.guardrail', processor: 0, phase: 'response', action: 'modify', applied: true },
    ]);
    await c.close();
  });

  test('failOpen: a processor that fails lets every message through', async () => {
    const c = await client('/open');
    const r = await c.callTool({ name: 'weather', arguments: { city: 'Rome' } });
    assert.equal(textOf(r), 'web: sunny in Rome');
    await c.close();
  });

  test('the access log and metrics say what the processors did', async () => {
    const c = await client('/guarded');
    await c.callTool({ name: 'echo', arguments: { message: 'forbidden' } }).catch(() => {});
    await c.close();
    const line = proxy.accessLog.findLast(
      (l) => l['mcp.method'] === 'tools/call' && l['mcp.outcome'] === 'denied',
    );
    assert.ok(line, 'a denied tools/call was logged');
    assert.deepEqual(line['mcp.guardrails'], ['request:processor0:reject']);
    const open = proxy.accessLog.findLast((l) =>
      (l['mcp.guardrails'] as string[] | undefined)?.includes('request:processor0:failed(not applied)'),
    );
    assert.ok(open, 'a processor that failed open was logged as not applied');
    const metrics = await proxy.metrics.registry.getMetricsAsJSON();
    const actions = metrics.find((m) => m.name === 'gw_mcp_guardrail_actions_total');
    const value = (labels: Record<string, string>) =>
      (actions?.values ?? []).find((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))
        ?.value ?? 0;
    assert.ok(value({ phase: 'request', action: 'reject' }) >= 2);
    assert.ok(value({ phase: 'response', action: 'modify' }) >= 1);
    assert.ok(value({ phase: 'request', action: 'failed' }) >= 1);
    const requests = metrics.find((m) => m.name === 'gw_mcp_requests_total');
    assert.ok(
      (requests?.values ?? []).some((v) => v.labels.method === 'tools/call' && v.labels.outcome === 'denied'),
    );
  });
});

describe('method keys', () => {
  const m = {
    'tools/call': 'request',
    'tools/*': 'response',
    '*/list': 'full',
    'resources/templates/*': 'off',
    '*': 'full',
  } as const;
  test('exact, then the longest wildcard, then *, else off', () => {
    assert.equal(methodPhase(m, 'tools/call'), 'request');
    assert.equal(methodPhase(m, 'tools/list'), 'response', 'tools/ is as long as /list; the prefix wins');
    assert.equal(methodPhase(m, 'prompts/list'), 'full');
    assert.equal(methodPhase(m, 'resources/templates/list'), 'off', 'the longer prefix wins over */list');
    assert.equal(methodPhase(m, 'initialize'), 'full');
    assert.equal(methodPhase({ 'tools/call': 'full' }, 'tools/list'), 'off');
  });
});

describe('mcpGuardrails config', () => {
  const cfg = (processors: string, where = 'mcp') => `binds:
- port: 3000
  listeners:
  - routes:
    - backends:
      - ${where === 'mcp' ? 'mcp: {targets: [{name: a, mcp: {host: "http://127.0.0.1:1/mcp"}}]}' : 'host: 127.0.0.1:1'}
        policies:
          mcpGuardrails:
            processors:
${processors}
backends:
- name: checker
  host: checker.internal:9000
- name: tls-checker
  host: checker.internal:9443
  policies: {backendTLS: {}}
- name: with-authz
  host: checker.internal:9443
  policies: {extAuthz: {host: "authz:9000"}}
`;
  const load = (text: string) => loadConfigText('gw.yaml', text, '/tmp');
  const rejects = (text: string, re: RegExp) => assertConfigRejects(load, text, re);

  test('agentgateway’s shape into the IR: kind, host or backend, failureMode, methods in either case', () => {
    const ir = load(
      cfg(`            - kind: remote
              host: https://guard.example.com/base/
              failureMode: failOpen
              methods: {"tools/call": Full}
            - backend: checker
              methods: {"*": request}`),
    ).ir;
    const t = ir.binds[0]?.listeners[0]?.routes[0]?.backends[0]?.target;
    assert.ok(t?.kind === 'mcp');
    assert.deepEqual(
      t.guardrails.map((g) => {
        assert.ok(g.kind !== 'cel');
        return [g.origin, g.basePath, g.failOpen, g.methods, g.timeoutMs];
      }),
      [
        ['https://guard.example.com:443', '/base', true, { 'tools/call': 'full' }, 10_000],
        ['http://checker.internal:9000', '', false, { '*': 'request' }, 10_000],
      ],
    );
  });

  test('mistakes name the field', () => {
    rejects(
      cfg(`            - host: a:1\n              methods: {"to*ls": request}`),
      /methods.*method keys are exact names/s,
    );
    rejects(
      cfg(`            - host: a:1\n              backend: checker\n              methods: {"*": full}`),
      /exactly one of host, backend, service \(got host, backend\)/,
    );
    // no methods (agentgateway's default) is no method through the processor; more than 64 are refused
    const many = Array.from({ length: 65 }, (_, i) => `"m${i}": full`).join(', ');
    rejects(
      cfg(`            - host: a:1\n              methods: {${many}}`),
      /methods must have at most 64 entries/,
    );
    rejects(
      cfg(`            - backend: nope\n              methods: {"*": full}`),
      /processors\[0\]\.backend: no backend with a host named "nope"/,
    );
    // a named backend's backendTLS is the call's (guardrails-connection.test.ts); what a processor
    // call cannot take is named, not ignored
    rejects(
      cfg(`            - backend: with-authz\n              methods: {"*": full}`),
      /backend "with-authz" sets extAuthz, which a processor call does not take/,
    );
    rejects(
      cfg(
        `            - host: a:1\n              metadata: {x: "nosuch.var =="}\n              methods: {"*": full}`,
      ),
      /metadata\.x/,
    );
    rejects(
      cfg(`            - host: a:1\n              methods: {"*": full}`, 'host'),
      /mcpGuardrails applies only to mcp backends/,
    );
    rejects(
      cfg(`            - service: {name: x, port: 1}\n              methods: {"*": full}`),
      // a Service of services: namespace/hostname (guardrails-connection.test.ts calls one)
      /processors\[0\]\.service\.name: expected "<namespace>\/<hostname>" of an entry of the top-level services/,
    );
  });
});
