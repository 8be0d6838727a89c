// agentgateway's top-level `mcp` block: its targets served as one MCP server at /mcp (and /sse with
// /message, the older transport) on a port of its own or on the gateways it names, with the block's
// policies. The MCP SDK's client against gw, gw in front of two SDK streamable-HTTP servers.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ConfigError } from '@gw/api';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { request } from 'undici';
import { loadConfigText } from '../config/load.ts';
import { connectClient, type HttpPeer, startHttpPeer, textOf } from './test-support.ts';

let north: HttpPeer;
let south: HttpPeer;
let proxy: TestProxy;

before(async () => {
  north = await startHttpPeer('north');
  south = await startHttpPeer('south');
  proxy = await startProxy(`config:
  adminAddr: "off"
mcp:
  port: 0
  prefixMode: always
  policies:
    mcpAuthorization:
      rules: ['mcp.tool.name != "slow"']
    cors:
      allowOrigins: ["*"]
      allowHeaders: [mcp-protocol-version, content-type, mcp-session-id]
  targets:
  - name: north
    mcp: {host: "${north.url}"}
  - name: south
    mcp: {host: "${south.url}"}
`);
});

after(async () => {
  await proxy?.close();
  await north?.close();
  await south?.close();
});

for (const kind of ['streamable-http', 'sse'] as const) {
  describe(`the mcp block over ${kind}`, () => {
    test('one server of both targets: prefixed tools, calls routed, the block’s rules applied', async () => {
      const { client } = await connectClient(proxy.url(kind === 'sse' ? '/sse' : '/mcp'), kind);
      try {
        const names = (await client.listTools()).tools.map((t) => t.name);
        assert.ok(names.includes('north_weather'), names.join(','));
        assert.ok(names.includes('south_echo'), names.join(','));
        // mcpAuthorization on the block hides what it denies
        assert.ok(!names.some((n) => n.endsWith('_slow')), names.join(','));
        const r = await client.callTool({ name: 'south_echo', arguments: { message: 'hi' } });
        assert.equal(textOf(r), 'south echo: hi');
      } finally {
        await client.close();
      }
    });
  });
}

test('the block’s route policies run: a CORS preflight is answered; other paths are not served', async () => {
  const pre = await request(proxy.url('/mcp'), {
    method: 'OPTIONS',
    headers: {
      origin: 'https://app.example',
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'mcp-session-id',
    },
  });
  await pre.body.text();
  assert.equal(pre.headers['access-control-allow-origin'], '*');
  const other = await request(proxy.url('/v1/chat/completions'), { method: 'POST', body: '{}' });
  await other.body.text();
  assert.equal(other.statusCode, 404);
});

describe('where the block is served, and config errors', () => {
  const load = (yaml: string) => loadConfigText('agw.yaml', yaml, process.cwd());
  const targets = '  targets:\n  - {name: t, mcp: {host: "http://127.0.0.1:9/mcp"}}\n';
  test('on its own port, or on the default gateway', () => {
    const own = load(`mcp:\n  port: 0\n${targets}`).ir;
    const route = own.binds[0]?.listeners[0]?.routes[0];
    assert.equal(route?.key, 'mcp/mcp/mcp');
    assert.deepEqual(
      route?.matches.map((m) => m.path),
      [{ exact: '/mcp' }, { exact: '/sse' }, { exact: '/message' }],
    );
    assert.equal(route?.backends[0]?.target.kind, 'mcp');
    const onDefault = load(`gateways: {default: {port: 0}}\nmcp:\n${targets}`).ir;
    assert.equal(onDefault.binds[0]?.listeners[0]?.routes[0]?.key, 'default/default/mcp');
  });
  test("without a port or gateways, on agentgateway's default port; a target error is named at the block", () => {
    // agentgateway serves such a block on port 3000, on every address
    const bind = load(`mcp:\n${targets}`).ir.binds[0];
    assert.deepEqual([bind?.address, bind?.port], ['::', 3000]);
    assert.equal(bind?.listeners[0]?.routes[0]?.key, 'mcp/mcp/mcp');
    // a gateway of another name changes nothing: the block is on its own port beside it
    const beside = load(`gateways: {other: {port: 0}}\nmcp:\n${targets}`).ir.binds;
    assert.deepEqual(beside.map((b) => b.port).sort(), [0, 3000]);
    assert.throws(
      () =>
        load(
          'mcp:\n  port: 0\n  targets:\n  - {name: t, mcp: {host: "http://h:1/mcp"}}\n  - {name: t, mcp: {host: "http://h:2/mcp"}}\n',
        ),
      (e: unknown) => e instanceof ConfigError && /mcp\.targets\[1\]\.name/.test(e.message),
    );
    assert.throws(
      () => load(`gateways: {default: {port: 0}}\nmcp:\n  gateways: nope\n${targets}`),
      (e: unknown) => e instanceof ConfigError && /mcp\.gateways: no gateway named "nope"/.test(e.message),
    );
    // a Host rewrite has no request of the block's to rewrite: its targets make their own calls
    assert.throws(
      () => load(`mcp:\n  port: 0\n  policies: {hostRewrite: {mode: auto}}\n${targets}`),
      (e: unknown) =>
        e instanceof ConfigError &&
        /mcp\.policies\.hostRewrite: hostRewrite in the mcp block reaches no target/.test(e.message),
    );
  });
  test("the client's token passed through (backendAuth passthrough) reaches no SSE target: a warning names it", () => {
    const { warnings } = load(
      'mcp:\n  port: 0\n  policies: {backendAuth: {passthrough: {}}}\n  targets:\n  - {name: old, sse: {host: "http://h:1/sse"}}\n',
    );
    assert.ok(
      warnings.some((w) =>
        /mcp\.policies\.backendAuth: backendAuth passthrough does not reach MCP target old: a sse target is not called per client request/.test(
          `${w.path}: ${w.message}`,
        ),
      ),
      JSON.stringify(warnings),
    );
  });
});

describe("connection policies of the block or the route go with every target's calls, under the target's own", () => {
  let blockKey: HttpPeer;
  let ownKey: HttpPeer;
  let gw: TestProxy;
  before(async () => {
    // each answers 401 without the key it expects
    blockKey = await startHttpPeer('shared', { authorization: 'Bearer block-key' });
    ownKey = await startHttpPeer('own', { authorization: 'Bearer own-key' });
    gw = await startProxy(`config:
  adminAddr: "off"
mcp:
  port: 0
  policies:
    backendAuth: {key: block-key}
  targets:
  - name: shared
    mcp: {host: "${blockKey.url}"}
  - name: own
    mcp: {host: "${ownKey.url}"}
    policies:
      backendAuth: {key: own-key}
binds:
- port: 0
  listeners:
  - routes:
    - policies:
        backendAuth: {key: block-key}
      backends:
      - mcp:
          targets:
          - name: shared
            mcp: {host: "${blockKey.url}"}
`);
  });
  after(async () => {
    await gw?.close();
    await blockKey?.close();
    await ownKey?.close();
  });

  test("the mcp block: a target without backendAuth sends the block's key, one with its own sends that", async () => {
    // the binds come first, then the block's own port
    const { client } = await connectClient(gw.url('/mcp', 1), 'streamable-http');
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(names.includes('shared_echo') && names.includes('own_echo'), names.join(','));
      assert.equal(
        textOf(await client.callTool({ name: 'shared_echo', arguments: { message: 'a' } })),
        'shared echo: a',
      );
      assert.equal(
        textOf(await client.callTool({ name: 'own_echo', arguments: { message: 'b' } })),
        'own echo: b',
      );
    } finally {
      await client.close();
    }
  });

  test("a route's backendAuth reaches the targets of its mcp backend", async () => {
    const { client } = await connectClient(gw.url('/mcp', 0), 'streamable-http');
    try {
      const r = await client.callTool({ name: 'echo', arguments: { message: 'c' } });
      assert.equal(textOf(r), 'shared echo: c');
    } finally {
      await client.close();
    }
  });
});
