// The MCP gateway when things go wrong, and its modes: a stdio target that crashes (restarted, its
// processes never outliving their config), an HTTP target that hangs or is down under FailClosed and
// FailOpen, a client that goes away mid-call (the target's call is cancelled), prefix modes, MCP
// authorization rules, and Stateless mode.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { freePort } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CreateMessageRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { request } from 'undici';
import {
  alive,
  connectClient,
  EVERYTHING,
  eventually,
  type HttpPeer,
  startBlackHole,
  startHttpPeer,
  textOf,
} from './test-support.ts';

const CRASHY = { cmd: process.execPath, args: [join(import.meta.dirname, 'testdata/crashy-server.ts')] };
const stdio = (name: string, p: { cmd: string; args: string[] }, env?: Record<string, string>) =>
  `- name: ${name}
            stdio: {cmd: ${JSON.stringify(p.cmd)}, args: ${JSON.stringify(p.args)}${env ? `, env: ${JSON.stringify(env)}` : ''}}`;
const http = (name: string, url: string, extra = '') => `- name: ${name}
            mcp: {host: ${JSON.stringify(url)}}${extra}`;

function gateway(targets: string[], opts: string[] = [], policies = ''): string {
  return `
binds:
- port: 0
  listeners:
  - routes:
    - backends:
      - mcp:
${opts.map((o) => `          ${o}\n`).join('')}          targets:
          ${targets.join('\n          ')}
${policies ? `        policies:\n${policies}` : ''}`;
}

async function toolNames(c: Client): Promise<string[]> {
  return (await c.listTools()).tools.map((t) => t.name).sort();
}

let web: HttpPeer;
before(async () => {
  web = await startHttpPeer('web');
});
after(async () => {
  await web?.close();
});

describe('a stdio target that crashes', () => {
  let proxy: TestProxy;
  let client: Client;
  before(async () => {
    proxy = await startProxy(gateway([stdio('crashy', CRASHY), http('web', web.url)]));
    ({ client } = await connectClient(proxy.url('/mcp')));
  });
  after(async () => {
    await client?.close();
    await proxy?.close();
  });

  test('the call in flight fails with a JSON-RPC error naming the target, then the target is back in a new process', async () => {
    const first = Number(textOf(await client.callTool({ name: 'crashy_pid', arguments: {} })));
    assert.ok(alive(first));
    await assert.rejects(client.callTool({ name: 'crashy_crash', arguments: {} }), (err: Error) => {
      assert.match(err.message, /target crashy: process exited \(code 7\)/);
      return true;
    });
    // Restarted with back-off (250 ms first), initialized again with the client's capabilities.
    let second = 0;
    await eventually(
      async () => {
        const r = await client.callTool({ name: 'crashy_pid', arguments: {} }).catch(() => undefined);
        second = r ? Number(textOf(r)) : 0;
        return second > 0;
      },
      5000,
      'the restarted target',
    );
    assert.notEqual(second, first);
    assert.equal(alive(first), false);
  });

  test('its processes are killed when its config goes away', async () => {
    const pid = Number(textOf(await client.callTool({ name: 'crashy_pid', arguments: {} })));
    assert.ok(alive(pid));
    await proxy.reload(gateway([http('web', web.url)]));
    await eventually(() => !alive(pid), 5000, 'the stdio process to exit');
  });
});

describe('a stdio target that cannot start', () => {
  test('FailClosed: initialize fails naming the target; FailOpen: the session serves without it', async () => {
    const bad = stdio('broken', CRASHY, { CRASH_AT_START: '1' });
    const closed = await startProxy(gateway([bad, http('web', web.url)]));
    try {
      await assert.rejects(connectClient(closed.url('/mcp')), /target broken/);
    } finally {
      await closed.close();
    }
    const open = await startProxy(gateway([bad, http('web', web.url)], ['failureMode: failOpen']));
    try {
      const { client } = await connectClient(open.url('/mcp'));
      const names = await toolNames(client);
      assert.ok(names.includes('web_weather'));
      assert.ok(!names.some((n) => n.startsWith('broken_')));
      await client.close();
    } finally {
      await open.close();
    }
  });
});

describe('an HTTP target that hangs', () => {
  let hole: Awaited<ReturnType<typeof startBlackHole>>;
  before(async () => {
    hole = await startBlackHole();
  });
  after(async () => {
    await hole?.close();
  });
  const hanging = () =>
    http(
      'stuck',
      `http://127.0.0.1:${hole.port}/mcp`,
      '\n            policies: {http: {requestTimeout: 300ms}}',
    );

  test('FailClosed: initialize fails after the target timeout, naming it', async () => {
    const proxy = await startProxy(gateway([hanging(), http('web', web.url)]));
    try {
      const t0 = Date.now();
      await assert.rejects(connectClient(proxy.url('/mcp')), /target stuck: no answer within 300 ms/);
      assert.ok(Date.now() - t0 < 5000);
    } finally {
      await proxy.close();
    }
  });

  test('FailOpen: the others still serve, and the log names the target that failed', async () => {
    const proxy = await startProxy(gateway([hanging(), http('web', web.url)], ['failureMode: failOpen']));
    try {
      const { client } = await connectClient(proxy.url('/mcp'));
      const names = await toolNames(client);
      assert.ok(names.includes('web_echo'));
      assert.ok(!names.some((n) => n.startsWith('stuck_')));
      assert.match(
        textOf(await client.callTool({ name: 'web_echo', arguments: { message: 'x' } })),
        /web echo: x/,
      );
      await client.close();
      const init = proxy.accessLog.find((l) => l['mcp.method'] === 'initialize');
      assert.deepEqual(init?.['mcp.failedTargets'], ['stuck']);
    } finally {
      await proxy.close();
    }
  });

  test('a target down (refused connections) under FailOpen is left out too', async () => {
    // a port nothing listens on (freePort's are never handed to another listener)
    const port = await freePort();
    const proxy = await startProxy(
      gateway(
        [http('gone', `http://127.0.0.1:${port}/mcp`), http('web', web.url)],
        ['failureMode: FailOpen'],
      ),
    );
    try {
      const { client } = await connectClient(proxy.url('/mcp'));
      assert.ok((await toolNames(client)).every((n) => n.startsWith('web_')));
      await client.close();
    } finally {
      await proxy.close();
    }
  });
});

describe('calls that end early', () => {
  let proxy: TestProxy;
  before(async () => {
    proxy = await startProxy(gateway([http('web', web.url)]));
  });
  after(async () => {
    await proxy?.close();
  });

  test('a client that cancels a call: the target gets notifications/cancelled and stops', async () => {
    const { client } = await connectClient(proxy.url('/mcp'));
    const ac = new AbortController();
    const call = client.callTool({ name: 'slow', arguments: {} }, undefined, { signal: ac.signal });
    await eventually(() => web.hanging === 1, 5000, 'the call to reach the target');
    ac.abort();
    await assert.rejects(call);
    await eventually(() => web.hanging === 0, 5000, 'the target to see the cancellation');
    await client.close();
  });

  test('a client that disconnects mid-call: the gateway cancels the call on the target', async () => {
    const { client, transport } = await connectClient(proxy.url('/mcp'));
    const sid = (transport as { sessionId?: string }).sessionId as string;
    const ac = new AbortController();
    const pending = request(proxy.url('/mcp'), {
      method: 'POST',
      signal: ac.signal,
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': sid,
        'mcp-protocol-version': '2025-06-18',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 99,
        method: 'tools/call',
        params: { name: 'slow', arguments: {} },
      }),
    }).catch(() => undefined);
    await eventually(() => web.hanging === 1, 5000, 'the call to reach the target');
    ac.abort();
    await pending;
    await eventually(() => web.hanging === 0, 5000, 'the call to be cancelled on the target');
    await client.close();
  });
});

describe('prefix modes', () => {
  test('Always prefixes a single target; Conditional does not', async () => {
    for (const [mode, expected] of [
      ['always', 'web_weather'],
      ['conditional', 'weather'],
    ] as const) {
      const proxy = await startProxy(gateway([http('web', web.url)], [`prefixMode: ${mode}`]));
      try {
        const { client } = await connectClient(proxy.url('/mcp'));
        const names = await toolNames(client);
        assert.ok(names.includes(expected), `${mode}: ${names.join(',')}`);
        assert.match(
          textOf(await client.callTool({ name: expected, arguments: { city: 'Lima' } })),
          /sunny in Lima/,
        );
        await client.close();
      } finally {
        await proxy.close();
      }
    }
  });

  test('Never with a name on two targets: tools/list is an error naming both targets', async () => {
    const other = await startHttpPeer('other');
    const proxy = await startProxy(
      gateway([http('web', web.url), http('other', other.url)], ['prefixMode: never']),
    );
    try {
      const { client } = await connectClient(proxy.url('/mcp'));
      await assert.rejects(client.listTools(), /"weather" is served by targets web and other/);
      await client.close();
    } finally {
      await proxy.close();
      await other.close();
    }
  });

  test('Never with unique names: names as the targets have them, each call routed to its owner', async () => {
    const proxy = await startProxy(
      gateway([stdio('crashy', CRASHY), stdio('everything', EVERYTHING)], ['prefixMode: Never']),
    );
    try {
      const { client } = await connectClient(proxy.url('/mcp'));
      // Both have `echo`: a duplicate. Calls of unique names still route (no listing needed).
      const pid = await client.callTool({ name: 'pid', arguments: {} });
      assert.match(textOf(pid), /^\d+$/);
      const sum = await client.callTool({ name: 'get-sum', arguments: { a: 2, b: 3 } });
      assert.match(textOf(sum), /5/);
      await assert.rejects(client.listTools(), /"echo" is served by targets crashy and everything/);
      await client.close();
    } finally {
      await proxy.close();
    }
  });
});

describe("a target's own MCP authorization", () => {
  let other: HttpPeer;
  let proxy: TestProxy;
  before(async () => {
    other = await startHttpPeer('other');
    const own = `\n            policies: {mcpAuthorization: {rules: [{deny: 'mcp.tool.name == "weather"'}]}}`;
    proxy = await startProxy(
      gateway(
        [http('web', web.url), http('other', other.url, own)],
        [],
        '          mcpAuthorization: {rules: [{deny: \'mcp.tool.name == "slow"\'}]}\n',
      ),
    );
  });
  after(async () => {
    await proxy?.close();
    await other?.close();
  });

  test("adds to the backend's rules for that target's items only", async () => {
    const { client } = await connectClient(proxy.url('/mcp'));
    const names = await toolNames(client);
    assert.ok(names.includes('web_weather') && !names.includes('other_weather'), names.join(', '));
    assert.ok(!names.includes('web_slow') && !names.includes('other_slow'), names.join(', '));
    assert.ok(names.includes('other_echo'), names.join(', '));
    await assert.rejects(
      client.callTool({ name: 'other_weather', arguments: { city: 'x' } }),
      /unknown (tool|resource) "[^"]+": no target serves it/,
    );
    assert.match(textOf(await client.callTool({ name: 'web_weather', arguments: { city: 'x' } })), /sunny/);
    await client.close();
  });
});

describe('MCP authorization', () => {
  let proxy: TestProxy;
  before(async () => {
    const rules = `          mcpAuthorization:
            rules:
            - 'mcp.tool.name == "weather" && request.headers["x-team"] == "ops"'
            - 'mcp.tool.name == "echo"'
            - 'has(mcp.prompt) && mcp.prompt.target == "web"'
            - 'has(mcp.resource) && mcp.resource.uri.endsWith("/1")'
`;
    proxy = await startProxy(gateway([http('web', web.url)], [], rules));
  });
  after(async () => {
    await proxy?.close();
  });

  test('lists are filtered item by item; a call of a hidden tool is answered as an unknown one, not an HTTP 403', async () => {
    const { client } = await connectClient(proxy.url('/mcp'));
    assert.deepEqual(await toolNames(client), ['echo']);
    const err = await client.callTool({ name: 'weather', arguments: { city: 'x' } }).catch((e: Error) => e);
    const nope = await client.callTool({ name: 'nope', arguments: {} }).catch((e: Error) => e);
    assert.ok(err instanceof Error && nope instanceof Error);
    // the same answer as a tool nobody serves: the client is not told the hidden one is there
    assert.match(err.message, /-32602.*unknown tool "weather": no target serves it/);
    assert.equal(err.message.replace('weather', 'nope'), nope.message);
    assert.match(textOf(await client.callTool({ name: 'echo', arguments: { message: 'ok' } })), /echo: ok/);
    assert.deepEqual(
      (await client.listResources()).resources.map((r) => r.uri),
      ['notes://web/1'],
    );
    await assert.rejects(
      client.readResource({ uri: 'notes://web/2' }),
      /unknown (tool|resource) "[^"]+": no target serves it/,
    );
    assert.equal((await client.listPrompts()).prompts.length, 1);
    await client.close();
    const denied = proxy.accessLog.find((l) => l['mcp.outcome'] === 'denied');
    assert.equal(denied?.['mcp.tool'], 'weather');
  });

  test('rules see request.*: the header allows the tool', async () => {
    const { StreamableHTTPClientTransport } = await import(
      '@modelcontextprotocol/sdk/client/streamableHttp.js'
    );
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const client = new Client({ name: 'ops', version: '1' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(proxy.url('/mcp')), {
        requestInit: { headers: { 'x-team': 'ops' } },
      }),
    );
    assert.deepEqual(await toolNames(client), ['echo', 'weather']);
    assert.match(
      textOf(await client.callTool({ name: 'weather', arguments: { city: 'Kyiv' } })),
      /sunny in Kyiv/,
    );
    await client.close();
  });
});

describe('Stateless mode', () => {
  test('no session id; every request opens and closes its own upstream session', async () => {
    const proxy = await startProxy(gateway([http('web', web.url)], ['statefulMode: stateless']));
    try {
      const { client, transport } = await connectClient(proxy.url('/mcp'));
      assert.equal((transport as { sessionId?: string }).sessionId, undefined);
      const before = web.seen.filter((m) => m === 'initialize').length;
      const open = web.sessions.size;
      assert.match(textOf(await client.callTool({ name: 'weather', arguments: { city: 'Quito' } })), /Quito/);
      assert.equal(web.seen.filter((m) => m === 'initialize').length, before + 1);
      // …and ends it (DELETE) once answered.
      await eventually(() => web.sessions.size === open, 5000, 'the upstream session to end');
      await client.close();
    } finally {
      await proxy.close();
    }
  });

  // No session carries the client's answer back to the target: the gateway answers for the client
  // (as a client without the capability does) rather than leave the call waiting for ever.
  for (const kind of ['streamable-http', 'sse'] as const) {
    test(`a target's request to the client is answered by the gateway at once (${kind} client)`, async () => {
      const proxy = await startProxy(gateway([http('web', web.url)], ['statefulMode: stateless']));
      try {
        const url = proxy.url(kind === 'sse' ? '/sse' : '/mcp');
        const { client } = await connectClient(url, kind, { sampling: {} });
        client.setRequestHandler(CreateMessageRequestSchema, async () => ({
          role: 'assistant' as const,
          model: 'm',
          content: { type: 'text' as const, text: 'the client answered' },
        }));
        const started = performance.now();
        const r = await client.callTool({ name: 'ask', arguments: {} }, undefined, { timeout: 10_000 });
        assert.ok(performance.now() - started < 5000, 'answered without waiting for the client');
        assert.equal(r.isError, true, JSON.stringify(r));
        assert.match(textOf(r), /Stateless/);
        await client.close();
      } finally {
        await proxy.close();
      }
    });
  }
});
