// The MCP gateway as a client sees it: the SDK client against gw, gw federating two real servers
// (server-everything over stdio and an SDK streamable-HTTP server), over streamable HTTP and the
// legacy SSE transport. Prefixes, merged lists with pagination, routed calls, progress and sampling
// relayed, sessions carried in the sealed session id, and the access log naming method and target.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CreateMessageRequestSchema, ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { request } from 'undici';
import { SessionSealer } from './session.ts';
import {
  connectClient,
  EVERYTHING,
  eventually,
  type HttpPeer,
  openLegacyStream,
  postInSession,
  startHttpPeer,
  textOf,
} from './test-support.ts';

let web: HttpPeer;
let proxy: TestProxy;

const config = (webUrl: string) => `
binds:
- port: 0
  listeners:
  - routes:
    - matches: [{path: {pathPrefix: /mcp}}]
      backends:
      - mcp:
          targets:
          - name: everything
            stdio: {cmd: ${JSON.stringify(EVERYTHING.cmd)}, args: ${JSON.stringify(EVERYTHING.args)}}
          - name: web
            mcp: {host: ${JSON.stringify(webUrl)}}
`;

before(async () => {
  web = await startHttpPeer('web');
  proxy = await startProxy(config(web.url));
});

after(async () => {
  await proxy?.close();
  await web?.close();
});

async function allTools(client: Client): Promise<string[]> {
  const names: string[] = [];
  let cursor: string | undefined;
  do {
    const r = await client.listTools(cursor ? { cursor } : {});
    names.push(...r.tools.map((t) => t.name));
    cursor = r.nextCursor;
  } while (cursor);
  return names;
}

for (const kind of ['streamable-http', 'sse'] as const) {
  describe(`federation over ${kind}`, () => {
    let client: Client;
    before(async () => {
      const url = proxy.url(kind === 'sse' ? '/mcp/sse' : '/mcp');
      ({ client } = await connectClient(url, kind, { sampling: {}, roots: { listChanged: true } }));
    });
    after(async () => {
      await client?.close();
    });

    test('initialize merges both targets: the gateway names itself, capabilities are the union', () => {
      assert.equal(client.getServerVersion()?.name, 'gw');
      const caps = client.getServerCapabilities();
      assert.ok(caps?.tools, 'tools');
      assert.ok(caps?.prompts, 'prompts');
      assert.ok(caps?.resources, 'resources');
      assert.ok(caps?.logging, 'logging (the web target has it)');
    });

    test('tools/list fans out and prefixes each name with its target (Conditional, two targets)', async () => {
      const names = await allTools(client);
      assert.ok(names.includes('everything_echo'), names.join(','));
      assert.ok(names.includes('web_weather'), names.join(','));
      assert.ok(names.every((n) => n.startsWith('everything_') || n.startsWith('web_')));
    });

    test('tools/call goes to the owning target, with the upstream name', async () => {
      const a = await client.callTool({ name: 'web_weather', arguments: { city: 'Oslo' } });
      assert.equal(textOf(a), 'web: sunny in Oslo');
      const b = await client.callTool({ name: 'everything_echo', arguments: { message: 'hi' } });
      assert.match(textOf(b), /hi/);
    });

    test('prompts and resources are merged and routed; resource URIs name their target', async () => {
      const prompts = await client.listPrompts();
      assert.ok(prompts.prompts.some((p) => p.name === 'web_greet'));
      const got = await client.getPrompt({ name: 'web_greet', arguments: { who: 'Ada' } });
      assert.deepEqual(got.messages[0]?.content, { type: 'text', text: 'web says hello to Ada' });
      // several targets: a resource's URI names its target (`<target>+<uri>`, as agentgateway writes it)
      const res = await client.listResources();
      assert.ok(
        res.resources.some((r) => r.uri === 'web+notes://web/1'),
        JSON.stringify(res.resources),
      );
      assert.ok(!res.resources.some((r) => r.uri === 'notes://web/1'));
      const read = await client.readResource({ uri: 'web+notes://web/1' });
      assert.equal((read.contents[0] as { text: string }).text, 'web note 1');
      // a URI without the prefix (kept from before) is still found by asking the targets
      const bare = await client.readResource({ uri: 'notes://web/1' });
      assert.equal((bare.contents[0] as { text: string }).text, 'web note 1');
      // templates too: the everything server's, read through its prefix
      const templates = (await client.listResourceTemplates()).resourceTemplates;
      assert.ok(templates.length > 0 && templates.every((t) => /^(everything|web)\+/.test(t.uriTemplate)));
      const one = templates.find(
        (t) => t.uriTemplate.startsWith('everything+') && /\/text\/\{resourceId\}$/.test(t.uriTemplate),
      );
      assert.ok(one, JSON.stringify(templates));
      const viaTemplate = await client.readResource({ uri: one.uriTemplate.replace('{resourceId}', '1') });
      assert.ok(viaTemplate.contents.length > 0);
    });

    test('an unknown tool: the target says so, or (no such target) a JSON-RPC error naming it', async () => {
      const r = await client.callTool({ name: 'web_nope', arguments: {} });
      assert.equal(r.isError, true);
      assert.match(textOf(r), /nope/);
      await assert.rejects(client.callTool({ name: 'nobody_echo', arguments: {} }), /no target serves it/);
    });

    // The SDK's legacy SSE client drops progress even from an SDK server directly; streamable only.
    test('progress notifications of a call reach the client', { skip: kind === 'sse' }, async () => {
      const seen: number[] = [];
      const r = await client.callTool({ name: 'web_progress', arguments: {} }, undefined, {
        onprogress: (p) => seen.push(p.progress),
      });
      assert.equal(textOf(r), 'done');
      assert.deepEqual(seen, [1, 2, 3]);
    });

    test('a sampling request a target makes during a call reaches the client and its answer the target', async () => {
      client.setRequestHandler(CreateMessageRequestSchema, async () => ({
        role: 'assistant',
        content: { type: 'text', text: 'forty-two' },
        model: 'test',
      }));
      const asked = await client.callTool({ name: 'web_ask', arguments: {} });
      assert.equal(textOf(asked), 'client said: forty-two');
    });

    test('a stdio target asks the client (sampling, roots) during a call: relayed there and back', async () => {
      client.setRequestHandler(CreateMessageRequestSchema, async (r) => ({
        role: 'assistant',
        content: { type: 'text', text: `sampled ${JSON.stringify(r.params.messages[0]?.content)}` },
        model: 'test',
      }));
      client.setRequestHandler(ListRootsRequestSchema, async () => ({
        roots: [{ uri: 'file:///work/gw', name: 'gw' }],
      }));
      const sampled = await client.callTool({
        name: 'everything_trigger-sampling-request',
        arguments: { prompt: 'why?', maxTokens: 5 },
      });
      assert.match(JSON.stringify(sampled.content), /sampled .*why\?/);
      const roots = await client.callTool({ name: 'everything_get-roots-list', arguments: {} });
      assert.match(JSON.stringify(roots.content), /file:\/\/\/work\/gw/);
    });

    test('ping is answered', async () => {
      assert.deepEqual(await client.ping(), {});
    });
  });
}

describe('sessions', () => {
  test('the session id is sealed: a tampered or foreign id is a JSON-RPC error with 404', async () => {
    const { client, transport } = await connectClient(proxy.url('/mcp'));
    const sid = (transport as { sessionId?: string }).sessionId as string;
    assert.ok(sid && sid.length > 20);
    assert.ok(!sid.includes('web') && !Buffer.from(sid, 'base64url').toString('latin1').includes('"s"'));
    const flipped = sid.slice(0, 10) + (sid[10] === 'A' ? 'B' : 'A') + sid.slice(11);
    // A well-formed id sealed with another gateway's key.
    const foreign = new SessionSealer('another key').seal({
      v: 1,
      s: { web: 'x' },
      p: '2025-06-18',
      c: {},
      t: 0,
      n: 'n',
    });
    for (const id of [flipped, foreign, 'not-a-session', 'x'.repeat(64)]) {
      const r = await request(proxy.url('/mcp'), {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-session-id': id,
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/list' }),
      });
      assert.equal(r.statusCode, 404);
      const body = (await r.body.json()) as { id: unknown; error: { code: number; message: string } };
      assert.equal(body.id, 7);
      assert.equal(body.error.code, -32001);
    }
    await client.close();
  });

  test('another gateway with the same key serves the session: HTTP targets keep their upstream session, stdio ones start again', async () => {
    const { client, transport } = await connectClient(proxy.url('/mcp'));
    const sid = (transport as { sessionId?: string }).sessionId as string;
    const upstreamSessions = web.sessions.size;
    const other = await startProxy(config(web.url));
    try {
      for (const [name, args, expect] of [
        ['web_weather', { city: 'Bern' }, /web: sunny in Bern/],
        ['everything_echo', { message: 'again' }, /again/],
      ] as const) {
        const r = await request(other.url('/mcp'), {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            'mcp-session-id': sid,
            'mcp-protocol-version': '2025-11-25',
          },
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: 5,
            method: 'tools/call',
            params: { name, arguments: args },
          }),
        });
        assert.equal(r.statusCode, 200);
        const body = (await r.body.json()) as { result: unknown };
        assert.match(textOf(body.result), expect);
      }
      // The HTTP target's session was reused, not a new one opened.
      assert.equal(web.sessions.size, upstreamSessions);
    } finally {
      await other.close();
      await client.close();
    }
  });

  test('legacy SSE: a message POSTed to another gateway worker reaches the worker holding the stream', async () => {
    // Two planes in one process stand in for two workers of one proxy (same config, same key).
    const other = await startProxy(config(web.url));
    let stop = () => {};
    try {
      const { events, endpoint, close } = await openLegacyStream(proxy.url('/mcp/sse'));
      stop = close;
      assert.match(endpoint, /^\/mcp\/sse\?sessionId=/);
      const post = async (m: unknown) => {
        const r = await request(other.url(endpoint), {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(m),
        });
        assert.equal(r.statusCode, 202);
        await r.body.text();
      };
      await post({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2024-11-05',
          capabilities: {},
          clientInfo: { name: 'raw', version: '1' },
        },
      });
      await eventually(() => events.some((e) => e.includes('"id":1')), 10000, 'the initialize answer');
      await post({ jsonrpc: '2.0', method: 'notifications/initialized' });
      await post({
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'web_weather', arguments: { city: 'Turin' } },
      });
      await eventually(
        () => events.some((e) => e.includes('sunny in Turin')),
        10000,
        'the call answer on the stream',
      );
    } finally {
      stop();
      await other.close();
    }
  });

  test('a request without a session id is refused with 400, and malformed JSON is a parse error', async () => {
    const post = (body: string, sid?: string) =>
      request(proxy.url('/mcp'), {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...(sid ? { 'mcp-session-id': sid } : {}),
        },
        body,
      });
    const a = await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }));
    assert.equal(a.statusCode, 400);
    assert.equal(((await a.body.json()) as { error: { code: number } }).error.code, -32600);
    const b = await post('{not json');
    assert.equal(b.statusCode, 400);
    assert.equal(((await b.body.json()) as { error: { code: number } }).error.code, -32700);
    // nested deeper than 128 levels: an invalid request with its id, not a 500 from a stack overflow
    const deep = `${'['.repeat(5000)}${']'.repeat(5000)}`;
    const c = await post(`{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"x": ${deep}}}`);
    assert.equal(c.statusCode, 400);
    const e = (await c.body.json()) as { id: unknown; error: { code: number; message: string } };
    assert.equal(e.id, 7);
    assert.equal(e.error.code, -32600);
    assert.match(e.error.message, /more than 128 levels deep/);
    // over the buffer limit: 413, a JSON-RPC error naming the limit and its setting
    const big = await post(
      JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'ping', params: { pad: 'x'.repeat(3 << 20) } }),
    );
    assert.equal(big.statusCode, 413);
    const t = (await big.body.json()) as { error: { code: number; message: string } };
    assert.equal(t.error.code, -32600);
    assert.match(t.error.message, /larger than the buffer limit \(\d+ bytes; config\.maxBufferSize\)/);
  });

  test('DELETE ends the session on the HTTP target, and its id is a 404 from then on', async () => {
    const { client, transport } = await connectClient(proxy.url('/mcp'));
    const t = transport as { sessionId?: string; terminateSession(): Promise<void> };
    const sid = t.sessionId;
    assert.ok(sid);
    const before = web.sessions.size;
    await t.terminateSession();
    assert.equal(web.sessions.size, before - 1);
    await client.close();
    // the MCP transport's answer for a session that is gone: the client starts a new one
    const again = await postInSession(proxy.url('/mcp'), sid, {
      jsonrpc: '2.0',
      id: 3,
      method: 'tools/list',
    });
    assert.equal(again.status, 404);
    const e = (await again.json()) as { id: unknown; error: { code: number; message: string } };
    assert.equal(e.id, 3);
    assert.match(e.error.message, /Session ended/);
  });

  test('the access log names the MCP method, the target and the outcome', async () => {
    const { client } = await connectClient(proxy.url('/mcp'));
    await client.callTool({ name: 'web_weather', arguments: { city: 'Rome' } });
    await client.close();
    const line = proxy.accessLog.find((l) => l['mcp.method'] === 'tools/call' && l['mcp.target'] === 'web');
    assert.ok(line, JSON.stringify(proxy.accessLog.slice(-3)));
    assert.equal(line['mcp.outcome'], 'ok');
    assert.equal(line['mcp.tool'], 'weather');
  });
});
