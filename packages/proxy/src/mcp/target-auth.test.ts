// An MCP target's credential and headers: `policies.backendAuth.key` and `requestHeaderModifier` are
// sent on every call the gateway makes to it — the streamable-HTTP and the legacy SSE transports of
// the SDK's server, which answers 401 without them. Before, both were accepted and never sent.
// `backendAuth.passthrough` sends a streamable-HTTP target the client's JWT the route validated. The
// policies a target does not take are refused by name at load.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { loadConfigText } from '../config/load.ts';
import { connectClient, type HttpPeer, startHttpPeer, textOf } from './test-support.ts';

let secured: HttpPeer;
/** Takes only the client's own token, passed through. */
let personal: HttpPeer;
let token: string;
let proxy: TestProxy;

const route = (prefix: string, target: string) => `    - matches: [{path: {pathPrefix: /${prefix}}}]
      backends:
      - mcp:
          targets:
          - name: secured
            ${target}`;

before(async () => {
  secured = await startHttpPeer('secured', { authorization: 'Bearer sk-mcp', 'x-tenant': 'acme' });
  const policies = 'policies: {backendAuth: {key: sk-mcp}, requestHeaderModifier: {set: {x-tenant: acme}}}';
  const sse = secured.url.replace(/\/mcp$/, '/sse');
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const jwks = JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' }] });
  token = await new SignJWT({ sub: 'alice' })
    .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
    .setIssuer('https://idp.test')
    .setExpirationTime('10m')
    .sign(privateKey);
  personal = await startHttpPeer('personal', { authorization: `Bearer ${token}` });
  proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
${route('http', `mcp: {host: ${JSON.stringify(secured.url)}}\n            ${policies}`)}
${route('sse', `sse: {host: ${JSON.stringify(sse)}}\n            ${policies}`)}
${route('bare', `mcp: {host: ${JSON.stringify(secured.url)}}`)}
${route('extra', `mcp: {host: ${JSON.stringify(secured.url)}}\n            policies: {backendAuth: {key: sk-mcp, credentials: [{location: {header: {name: x-tenant}}, key: acme}]}}`)}
    - matches: [{path: {pathPrefix: /pass}}]
      policies:
        jwtAuth: {issuer: "https://idp.test", jwks: {inline: ${JSON.stringify(jwks)}}}
      backends:
      - mcp:
          targets:
          - name: personal
            mcp: {host: ${JSON.stringify(personal.url)}}
            policies: {backendAuth: {passthrough: {}}}
`);
});

after(async () => {
  await proxy?.close();
  await secured?.close();
  await personal?.close();
});

for (const prefix of ['http', 'sse']) {
  test(`${prefix}: the key and the header reach the target; its tools answer`, async () => {
    const { client } = await connectClient(proxy.url(`/${prefix}`));
    try {
      const tools = await client.listTools();
      assert.ok(tools.tools.some((t) => t.name === 'echo'));
      const r = await client.callTool({ name: 'echo', arguments: { message: 'hi' } });
      assert.equal(textOf(r), 'secured echo: hi');
    } finally {
      await client.close();
    }
  });
}

test('credentials beside the key: the extra header reaches the target with the key', async () => {
  const { client } = await connectClient(proxy.url('/extra'));
  try {
    const r = await client.callTool({ name: 'echo', arguments: { message: 'both' } });
    assert.equal(textOf(r), 'secured echo: both');
  } finally {
    await client.close();
  }
});

test('without them the target answers 401, which the client hears as the session fails', async () => {
  const err = await connectClient(proxy.url('/bare')).then(
    async ({ client }) => {
      await client.close();
      return undefined;
    },
    (e: unknown) => e,
  );
  assert.ok(err instanceof Error, 'the session did not start');
  assert.match(err.message, /target secured: HTTP 401/);
});

test('passthrough: the client’s validated JWT reaches a target that takes only it', async () => {
  const client = new Client({ name: 'alice', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(proxy.url('/pass')), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  try {
    const r = await client.callTool({ name: 'echo', arguments: { message: 'mine' } });
    assert.equal(textOf(r), 'personal echo: mine');
  } finally {
    await client.close();
  }
});

test('policies an MCP target does not take are refused by name', () => {
  const load = (policies: string, target = 'mcp: {host: "http://127.0.0.1:1/mcp"}') => {
    try {
      loadConfigText(
        't.yaml',
        `binds:\n- port: 8080\n  listeners:\n  - routes:\n    - backends:\n      - mcp:\n          targets:\n          - name: t\n            ${target}\n            policies: ${policies}\n`,
        process.cwd(),
      );
      return '';
    } catch (err) {
      return (err as Error).message;
    }
  };
  assert.match(
    load('{responseHeaderModifier: {set: {a: b}}}'),
    /responseHeaderModifier on an MCP target is not supported/,
  );
  assert.match(load('{backendAuth: {aws: {}}}'), /backendAuth aws on an MCP target is not supported/);
  // the client's token only reaches a target called per client request
  assert.equal(load('{backendAuth: {passthrough: {}}}'), '');
  assert.match(
    load('{backendAuth: {passthrough: {}}}', 'sse: {host: "http://127.0.0.1:1/sse"}'),
    /backendAuth passthrough is for streamable-HTTP \(mcp\) targets/,
  );
  assert.match(
    load('{backendAuth: {key: {value: k, location: {queryParameter: {name: key}}}}}'),
    /an MCP target takes its key in a header/,
  );
  assert.match(
    load('{backendAuth: {credentials: [{location: {cookie: {name: c}}, key: k}]}}'),
    /backendAuth\.credentials\[0\]\.location: an MCP target takes its credentials in headers/,
  );
  assert.match(
    load('{backendAuth: {jwtSign: {signingKey: k}, credentials: [{location: {header: {name: c}}, key: k}]}}'),
    /backendAuth jwtSign on an MCP target is not supported/,
  );
  assert.equal(
    load('{backendAuth: {key: k}, requestHeaderModifier: {add: {x-a: b}}, tcp: {connectTimeout: 1s}}'),
    '',
  );
});
