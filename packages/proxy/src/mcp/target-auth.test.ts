// An MCP target's credential and headers: `policies.backendAuth.key` and `requestHeaderModifier` are
// sent on every call the gateway makes to it — the streamable-HTTP and the legacy SSE transports of
// the SDK's server, which answers 401 without them. Before, both were accepted and never sent. A
// target by backend reference (`mcp: {backend}`) takes the backend's host and those policies.
// `backendAuth.passthrough` sends a streamable-HTTP target the client's JWT the route validated. A
// policy may target one target of a named mcp backend (agentgateway's `section`). The policies a
// target does not take are refused by name at load.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { loadConfigText } from '../config/load.ts';
import { configIssues } from '../config/test-support.ts';
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
  const securedHost = new URL(secured.url).host;
  proxy = await startProxy(`backends:
- name: secured-backend
  host: ${JSON.stringify(securedHost)}
  policies: {backendAuth: {key: sk-mcp}, requestHeaderModifier: {set: {x-tenant: acme}}}
- name: bare-backend
  host: ${JSON.stringify(securedHost)}
- name: tools
  mcp:
    targets:
    - name: secured
      mcp: {host: ${JSON.stringify(secured.url)}}
policies:
# agentgateway's target of one part of a backend: the mcp target "secured" of backend "tools"
- name: tools-secured
  target: {backend: {backend: {name: tools, namespace: default, section: secured}}}
  policy: {backendAuth: {key: sk-mcp}, requestHeaderModifier: {set: {x-tenant: acme}}}
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
${route('http', `mcp: {host: ${JSON.stringify(secured.url)}}\n            ${policies}`)}
${route('sse', `sse: {host: ${JSON.stringify(sse)}}\n            ${policies}`)}
${route('bare', `mcp: {host: ${JSON.stringify(secured.url)}}`)}
${route('named', 'mcp: {backend: secured-backend}')}
${route('named-sse', 'sse: {backend: secured-backend, path: /sse}')}
${route('named-own', `mcp: {backend: bare-backend}\n            ${policies}`)}
${route('extra', `mcp: {host: ${JSON.stringify(secured.url)}}\n            policies: {backendAuth: {key: sk-mcp, credentials: [{location: {header: {name: x-tenant}}, key: acme}]}}`)}
    - matches: [{path: {pathPrefix: /sectioned}}]
      backends: [{backend: tools}]
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

/** Calls the secured echo through `path` with a new client session; returns the tool's text. */
async function echoThrough(path: string, message: string): Promise<string> {
  const { client } = await connectClient(proxy.url(path));
  try {
    return textOf(await client.callTool({ name: 'echo', arguments: { message } }));
  } finally {
    await client.close();
  }
}

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

test('a policy on one target of a named mcp backend (target.backend.backend.section) reaches that target', async () => {
  assert.equal(await echoThrough('/sectioned', 'section'), 'secured echo: section');
  // a section no target has applies to nothing: a warning names it
  const { warnings } = loadConfigText(
    'gw.yaml',
    `backends:\n- name: tools\n  mcp: {targets: [{name: a, mcp: {host: "http://127.0.0.1:1/mcp"}}]}\npolicies:\n- target: {backend: {backend: {name: tools, namespace: default, section: b}}}\n  policy: {requestHeaderModifier: {set: {x: y}}}\nbinds:\n- port: 0\n  listeners:\n  - routes: [{backends: [{backend: tools}]}]\n`,
    process.cwd(),
  );
  assert.ok(
    warnings.some(
      (w) =>
        w.path === 'policies[0].target.backend.backend.section' &&
        /no route uses an mcp target or ai provider "b" of backend "tools"/.test(w.message),
    ),
    JSON.stringify(warnings),
  );
  // a policy an MCP target does not take is refused where the policy is
  assert.match(
    configIssues(
      `backends:\n- name: tools\n  mcp: {targets: [{name: a, mcp: {host: "http://127.0.0.1:1/mcp"}}]}\npolicies:\n- target: {backend: {backend: {name: tools, namespace: default, section: a}}}\n  policy: {ai: {defaults: {temperature: 0.5}}}\nbinds:\n- port: 0\n  listeners:\n  - routes: [{backends: [{backend: tools}]}]\n`,
    ),
    /policies\[0\]\.policy\.ai: ai is not taken by MCP target a of backend "tools"/,
  );
});

for (const prefix of ['named', 'named-sse', 'named-own']) {
  test(`${prefix}: a target by backend reference takes the backend's host and policies (its own win)`, async () => {
    assert.equal(await echoThrough(`/${prefix}`, prefix), `secured echo: ${prefix}`);
  });
}

test('credentials beside the key: the extra header reaches the target with the key', async () => {
  assert.equal(await echoThrough('/extra', 'both'), 'secured echo: both');
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
  const load = (policies: string, target = 'mcp: {host: "http://127.0.0.1:1/mcp"}') =>
    configIssues(
      `binds:\n- port: 8080\n  listeners:\n  - routes:\n    - backends:\n      - mcp:\n          targets:\n          - name: t\n            ${target}\n            policies: ${policies}\n`,
    );
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
  // a target by backend reference: a host backend that exists, whose policies a target takes
  const named = (backends: string, target: string) =>
    configIssues(
      `backends:\n${backends}\nbinds:\n- port: 8080\n  listeners:\n  - routes:\n    - backends:\n      - mcp:\n          targets:\n          - name: t\n            ${target}\n`,
    );
  assert.match(
    named('- {name: api, host: "127.0.0.1:1"}', 'mcp: {backend: nope}'),
    /targets\[0\]\.mcp\.backend: no backend with a host named "nope" \(host backends: api\)/,
  );
  assert.match(
    named('- {name: api, host: "127.0.0.1:1", policies: {health: {eviction: {}}}}', 'mcp: {backend: api}'),
    /backends\[0\]\.policies\.health: health of backend "api" is not taken by MCP target t/,
  );
  assert.match(
    named(
      '- {name: api, host: "127.0.0.1:1", policies: {backendAuth: {jwtSign: {signingKey: k}}}}',
      'mcp: {backend: api}',
    ),
    /backends\[0\]\.policies\.backendAuth: backendAuth jwtSign on an MCP target is not supported/,
  );
  assert.match(
    named('- {name: api, host: "127.0.0.1:1"}', 'openapi: {schema: "{}", host: "a:1", backend: api}'),
    /targets\[0\]\.openapi\.backend: set host or backend, not both/,
  );
  assert.equal(
    named(
      '- {name: api, host: "127.0.0.1:1", policies: {backendTLS: {}}}',
      'sse: {backend: api, path: /events}',
    ),
    '',
  );
  const doc = JSON.stringify(
    JSON.stringify({
      openapi: '3.0.0',
      info: { title: 't', version: '1' },
      paths: { '/x': { get: { operationId: 'getX', responses: { '200': { description: 'ok' } } } } },
    }),
  );
  assert.equal(named('- {name: api, host: "127.0.0.1:1"}', `openapi: {schema: ${doc}, backend: api}`), '');
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
