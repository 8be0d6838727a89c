// The MCP client's request headers reach the MCP targets, as agentgateway forwards them: a
// streamable-HTTP server (the SDK's, recording what each request carried) sees the client's
// Authorization, tenant header and cookie on initialize, on tools/call and on the GET stream — but
// not its hop-by-hop headers, Host or the MCP transport's own. A target's backendAuth replaces the
// client's Authorization and its requestHeaderModifier applies after; a token jwtAuth or
// mcpAuthentication validated is not forwarded. An openapi target's API gets them too, never the
// client's Host, and the operation's declared header parameters win.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { eventually, type HttpPeer, type PeerRequest, startHttpPeer, textOf } from './test-support.ts';

const CLIENT_HEADERS = { authorization: 'Bearer client-tok', 'x-tenant': 'acme', cookie: 'theme=dark' };

/** An SDK client at `path` sending `headers` with every request; calls echo and closes. */
async function echoWith(proxy: TestProxy, path: string, headers: Record<string, string>): Promise<string> {
  const client = new Client({ name: 'user', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(proxy.url(path)), { requestInit: { headers } }),
  );
  try {
    return textOf(await client.callTool({ name: 'echo', arguments: { message: 'hi' } }));
  } finally {
    await client.close();
  }
}

/** The requests the peer saw since `from`, of JSON-RPC method `rpc`. */
const of = (seen: PeerRequest[], from: number, rpc: string) => seen.slice(from).filter((s) => s.rpc === rpc);

describe('streamable-HTTP targets', () => {
  let peer: HttpPeer;
  let proxy: TestProxy;
  let jwt: string;

  before(async () => {
    peer = await startHttpPeer('rec');
    const { privateKey, publicKey } = await generateKeyPair('ES256');
    const jwks = JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' }] });
    jwt = await new SignJWT({ sub: 'alice' })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer('https://idp.test')
      .setAudience('urn:gw')
      .setExpirationTime('10m')
      .sign(privateKey);
    const target = (
      prefix: string,
      extra = '',
      routePolicies = '',
    ) => `    - matches: [{path: {pathPrefix: /${prefix}}}]
${routePolicies ? `      policies: ${routePolicies}\n` : ''}      backends:
      - mcp:
          ${prefix === 'stateless' ? 'statefulMode: stateless\n          ' : ''}targets:
          - name: rec
            mcp: {host: ${JSON.stringify(peer.url)}}
${extra ? `            policies: ${extra}\n` : ''}`;
    proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
${target('plain')}${target('stateless')}${target('keyed', '{backendAuth: {key: sk-target}}')}${target(
  'modified',
  '{requestHeaderModifier: {set: {x-tenant: globex}, remove: [cookie]}}',
)}${target('jwt', '', `{jwtAuth: {issuer: "https://idp.test", jwks: {inline: ${JSON.stringify(jwks)}}}}`)}${target(
  'oauth',
  '',
  `{mcpAuthentication: {issuer: "https://idp.test", jwks: ${JSON.stringify(jwks)}, audiences: [urn:gw]}}`,
)}${target(
  'passthrough',
  '{backendAuth: {passthrough: {}}}',
  `{jwtAuth: {issuer: "https://idp.test", jwks: {inline: ${JSON.stringify(jwks)}}}}`,
)}`);
  });

  after(async () => {
    await proxy?.close();
    await peer?.close();
  });

  test("the client's headers reach the target on initialize, tools/call, the GET stream and the DELETE", async () => {
    const from = peer.requests.length;
    const client = new Client({ name: 'user', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(proxy.url('/plain')), {
      requestInit: { headers: CLIENT_HEADERS },
    });
    await client.connect(transport);
    try {
      assert.equal(
        textOf(await client.callTool({ name: 'echo', arguments: { message: 'hi' } })),
        'rec echo: hi',
      );
      // the SDK opens its GET stream after initialize; the gateway's to the target follows
      await eventually(
        () => peer.requests.slice(from).some((s) => s.http === 'GET'),
        5000,
        'the GET at the target',
      );
      await transport.terminateSession();
      await eventually(
        () => peer.requests.slice(from).some((s) => s.http === 'DELETE'),
        5000,
        'the DELETE at the target',
      );
    } finally {
      await client.close();
    }
    const asked = [
      ...of(peer.requests, from, 'initialize'),
      ...of(peer.requests, from, 'notifications/initialized'),
      ...of(peer.requests, from, 'tools/call'),
      ...peer.requests.slice(from).filter((s) => s.http === 'GET' || s.http === 'DELETE'),
    ];
    assert.equal(asked.length, 5, JSON.stringify(peer.requests.slice(from).map((s) => s.rpc ?? s.http)));
    for (const s of asked) {
      assert.equal(s.headers.authorization, 'Bearer client-tok', `${s.rpc ?? s.http}`);
      assert.equal(s.headers['x-tenant'], 'acme');
      assert.equal(s.headers.cookie, 'theme=dark');
      // the target's own address, not the gateway's
      assert.equal(s.headers.host, new URL(peer.url).host);
    }
  });

  test('hop-by-hop headers, Host and the MCP transport headers of the client are not forwarded', async () => {
    const from = peer.requests.length;
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    });
    const u = new URL(proxy.url('/plain'));
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        {
          host: u.hostname,
          port: u.port,
          path: u.pathname,
          method: 'POST',
          headers: {
            host: 'client.example:8443',
            connection: 'keep-alive, x-hop',
            'x-hop': 'one hop only',
            'keep-alive': 'timeout=5',
            te: 'trailers',
            trailer: 'x-checksum',
            upgrade: 'h2c',
            'proxy-authorization': 'Basic cHJveHk6cHc=',
            'accept-encoding': 'x-client-encoding',
            'last-event-id': 'client-event-7',
            expect: '100-continue',
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            'x-tenant': 'acme',
          },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
    assert.equal(status, 200);
    const [init] = of(peer.requests, from, 'initialize');
    assert.ok(init, 'the target was asked');
    const h = init.headers;
    assert.equal(h['x-tenant'], 'acme');
    assert.equal(h.host, new URL(peer.url).host);
    for (const name of [
      'x-hop',
      'keep-alive',
      'te',
      'trailer',
      'upgrade',
      'proxy-authorization',
      'last-event-id',
      'expect',
    ])
      assert.equal(h[name], undefined, name);
    assert.notEqual(h['accept-encoding'], 'x-client-encoding');
    assert.notEqual(h.connection, 'keep-alive, x-hop');
    assert.equal(h['content-type'], 'application/json');
    assert.equal(h.accept, 'application/json, text/event-stream');
  });

  test('stateless: the initialize, call and DELETE a client request causes carry its headers', async () => {
    const from = peer.requests.length;
    assert.equal(await echoWith(proxy, '/stateless', CLIENT_HEADERS), 'rec echo: hi');
    // the upstream session is ended after the answer, not before it
    await eventually(
      () => peer.requests.slice(from).some((s) => s.http === 'DELETE'),
      5000,
      'the DELETE at the target',
    );
    const caused = peer.requests.slice(from);
    assert.ok(caused.some((s) => s.rpc === 'tools/call'));
    for (const s of caused) assert.equal(s.headers.authorization, 'Bearer client-tok', `${s.rpc ?? s.http}`);
  });

  test("the target's backendAuth key replaces the client's Authorization", async () => {
    const from = peer.requests.length;
    assert.equal(await echoWith(proxy, '/keyed', CLIENT_HEADERS), 'rec echo: hi');
    for (const s of [...of(peer.requests, from, 'initialize'), ...of(peer.requests, from, 'tools/call')]) {
      assert.equal(s.headers.authorization, 'Bearer sk-target');
      assert.equal(s.headers['x-tenant'], 'acme');
    }
  });

  test("the target's requestHeaderModifier applies after the client's headers", async () => {
    const from = peer.requests.length;
    assert.equal(await echoWith(proxy, '/modified', CLIENT_HEADERS), 'rec echo: hi');
    const [call] = of(peer.requests, from, 'tools/call');
    assert.equal(call?.headers['x-tenant'], 'globex');
    assert.equal(call?.headers.cookie, undefined);
    assert.equal(call?.headers.authorization, 'Bearer client-tok');
  });

  for (const path of ['jwt', 'oauth']) {
    test(`${path === 'jwt' ? 'jwtAuth' : 'mcpAuthentication'}: the token it validated is not forwarded`, async () => {
      const from = peer.requests.length;
      assert.equal(
        await echoWith(proxy, `/${path}`, { authorization: `Bearer ${jwt}`, 'x-tenant': 'acme' }),
        'rec echo: hi',
      );
      const asked = [...of(peer.requests, from, 'initialize'), ...of(peer.requests, from, 'tools/call')];
      assert.equal(asked.length, 2);
      for (const s of asked) {
        assert.equal(s.headers.authorization, undefined);
        assert.equal(s.headers['x-tenant'], 'acme');
      }
    });
  }

  test('backendAuth passthrough: the validated JWT, as before (target-auth.test.ts)', async () => {
    const from = peer.requests.length;
    assert.equal(
      await echoWith(proxy, '/passthrough', { authorization: `Bearer ${jwt}`, 'x-tenant': 'acme' }),
      'rec echo: hi',
    );
    const [call] = of(peer.requests, from, 'tools/call');
    assert.equal(call?.headers.authorization, `Bearer ${jwt}`);
    assert.equal(call?.headers['x-tenant'], 'acme');
  });
});

describe('openapi targets', () => {
  let api: Server;
  let apiPort: number;
  const calls: IncomingHttpHeaders[] = [];
  let proxy: TestProxy;

  before(async () => {
    api = createServer((req, res) => {
      calls.push(req.headers);
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
    api.listen(0, '127.0.0.1');
    await once(api, 'listening');
    apiPort = (api.address() as AddressInfo).port;
    const doc = JSON.stringify({
      openapi: '3.0.3',
      info: { title: 'who', version: '1' },
      paths: {
        '/whoami': {
          get: {
            operationId: 'whoami',
            parameters: [{ name: 'X-Tenant', in: 'header', schema: { type: 'string' } }],
          },
        },
      },
    });
    proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - backends:
      - mcp:
          targets:
          - name: api
            openapi: {schema: ${JSON.stringify(doc)}, host: "127.0.0.1:${apiPort}"}
`);
  });

  after(async () => {
    await proxy?.close();
    api.closeAllConnections();
    await new Promise<void>((r) => api.close(() => r()));
  });

  test("the API gets the client's headers, not its Host; declared header parameters win", async () => {
    const client = new Client({ name: 'user', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(proxy.url('/mcp')), {
        requestInit: { headers: { ...CLIENT_HEADERS, 'x-team': 'blue' } },
      }),
    );
    try {
      const r = await client.callTool({ name: 'whoami', arguments: {} });
      assert.equal(r.isError, undefined, JSON.stringify(r));
      const first = calls.at(-1);
      assert.equal(first?.authorization, 'Bearer client-tok');
      assert.equal(first?.['x-tenant'], 'acme');
      assert.equal(first?.['x-team'], 'blue');
      assert.equal(first?.cookie, 'theme=dark');
      assert.equal(first?.host, `127.0.0.1:${apiPort}`);
      assert.equal(first?.accept, 'application/json');
      assert.equal(first?.['mcp-session-id'], undefined);
      assert.equal(first?.['mcp-protocol-version'], undefined);
      await client.callTool({ name: 'whoami', arguments: { header: { 'X-Tenant': 'globex' } } });
      assert.equal(calls.at(-1)?.['x-tenant'], 'globex', "the operation's own header wins");
      assert.equal(calls.at(-1)?.['x-team'], 'blue');
    } finally {
      await client.close();
    }
  });
});
