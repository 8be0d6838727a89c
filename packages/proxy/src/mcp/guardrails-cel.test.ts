// CEL processors of mcpGuardrails (`kind: cel`, or `expression`): the MCP SDK client through gw to a
// real MCP server, with processors that refuse, rewrite the params and rewrite the result, a
// transform that fails closed or open, and the config errors.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { loadConfigText } from '../config/load.ts';
import {
  assertConfigRejects,
  connectClient,
  guardedRoute,
  type HttpPeer,
  startHttpPeer,
  textOf,
} from './test-support.ts';

let web: HttpPeer;
let proxy: TestProxy;

const route = (path: string, processors: string) => guardedRoute(web.url, path, processors);

before(async () => {
  web = await startHttpPeer('web');
  proxy = await startProxy(`
binds:
- port: 0
  listeners:
  - routes:
${route(
  '/cel',
  `          - kind: cel
            methods: {"tools/call": request}
            when: >-
              mcp.params.name == 'echo' && has(mcp.params.arguments.message) &&
              mcp.params.arguments.message.contains('DO_NOT_SEND')
            reject: Messages containing DO_NOT_SEND may not be sent upstream
          - kind: expression
            methods: {"tools/call": request}
            when: mcp.params.name == 'echo' && has(mcp.params.arguments.message)
            transform: >-
              mcp.params.with(p, p.merge({'arguments': p.arguments.merge({
                'message': p.arguments.message.regexReplaceAll('[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+[.][A-Za-z]{2,}', '[EMAIL]')
              })}))
          - kind: cel
            methods: {"tools/call": response}
            when: has(mcp.result.content) && mcp.tool.name == 'weather'
            transform: >-
              mcp.result.with(r, r.merge({'content': r.content.map(item,
                item.type == 'text' ? item.merge({'text': item.text.regexReplaceAll('sunny', '[FORECAST]')}) : item)}))
          - kind: cel
            methods: {"prompts/get": request}
            transform: '"not an object"'`,
)}
${route(
  '/strict',
  `          - kind: cel
            methods: {"tools/call": request}
            when: mcp.params.arguments.message.contains('x')
            reject: no x`,
)}
${route(
  '/open',
  `          - kind: cel
            methods: {"tools/call": request}
            transform: mcp.params.nosuchfield
            failureMode: failOpen`,
)}
`);
});

after(async () => {
  await proxy?.close();
  await web?.close();
});

async function client(path: string) {
  return (await connectClient(proxy.url(`${path}/mcp`), 'streamable-http')).client;
}

describe('mcpGuardrails CEL processors', () => {
  test('reject: a JSON-RPC error with the message; the target never sees the call', async () => {
    const c = await client('/cel');
    const before = web.seen.filter((m) => m === 'tools/call').length;
    await assert.rejects(
      c.callTool({ name: 'echo', arguments: { message: 'please DO_NOT_SEND this' } }),
      (err: unknown) => {
        assert.ok(err instanceof McpError, String(err));
        assert.equal(err.code, -32003);
        assert.match(err.message, /Messages containing DO_NOT_SEND may not be sent upstream/);
        return true;
      },
    );
    assert.equal(web.seen.filter((m) => m === 'tools/call').length, before);
    await c.close();
  });

  test('transform in the request phase: the target gets the params the expression gave', async () => {
    const c = await client('/cel');
    const r = await c.callTool({
      name: 'echo',
      arguments: { message: 'write to ada@example.com or bob.smith@mail.example.org' },
    });
    assert.equal(textOf(r), 'web echo: write to [EMAIL] or [EMAIL]');
    await c.close();
  });

  test('transform in the response phase, seeing mcp.tool of the request: the client gets the new result', async () => {
    const c = await client('/cel');
    const r = await c.callTool({ name: 'weather', arguments: { city: 'Oslo' } });
    assert.equal(textOf(r), 'web: [FORECAST] in Oslo');
    // a tool the condition does not name is left alone
    assert.equal(
      textOf(await c.callTool({ name: 'echo', arguments: { message: 'sunny' } })),
      'web echo: sunny',
    );
    await c.close();
  });

  test('a when that fails to evaluate is no false: the processor fails, closed by default', async () => {
    const c = await client('/strict');
    // weather has no message argument: the processor's when cannot be evaluated
    await assert.rejects(c.callTool({ name: 'weather', arguments: { city: 'Oslo' } }), (err: unknown) => {
      assert.ok(err instanceof McpError, String(err));
      assert.match(err.message, /MCP guardrail processor 0 failed: when failed to evaluate/);
      return true;
    });
    await c.close();
  });

  test('a transform that gives no object fails closed by default, and open when it says so', async () => {
    const c = await client('/cel');
    await assert.rejects(c.getPrompt({ name: 'greet', arguments: { who: 'x' } }), (err: unknown) => {
      assert.ok(err instanceof McpError, String(err));
      assert.match(err.message, /MCP guardrail processor 3 failed: transform gave no object/);
      return true;
    });
    await c.close();
    const o = await client('/open');
    assert.equal(textOf(await o.callTool({ name: 'echo', arguments: { message: 'hi' } })), 'web echo: hi');
    await o.close();
  });

  test('config errors: reject and transform, one of them; the expressions are CEL', () => {
    const load = (processor: string) =>
      loadConfigText(
        'gw.yaml',
        `binds:
- port: 0
  listeners:
  - routes:
    - policies:
        mcpGuardrails:
          processors:
          - ${processor}
      backends:
      - mcp:
          targets: [{name: web, mcp: {host: "http://127.0.0.1:9/mcp"}}]
`,
        process.cwd(),
      );
    assertConfigRejects(
      load,
      '{kind: cel, methods: {"*": request}, reject: no, transform: mcp.params}',
      /exactly one of reject and transform/,
    );
    assertConfigRejects(load, '{kind: cel, methods: {"*": request}}', /exactly one of reject and transform/);
    assertConfigRejects(load, '{kind: cel, reject: no}', /a cel processor sees only the methods it names/);
    assertConfigRejects(
      load,
      '{kind: cel, methods: {"*": request}, when: "mcp.params.(", reject: no}',
      /processors\[0\]\.when: invalid CEL expression/,
    );
  });
});
