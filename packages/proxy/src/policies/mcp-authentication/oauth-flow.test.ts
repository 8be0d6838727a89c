// mcpAuthentication end to end with real parts: `oidc-provider` as the identity provider (authorization
// code + PKCE, dynamic client registration on one instance, none on the other), the MCP SDK client's
// own OAuth support (its OAuthClientProvider and the streamable HTTP transport's authProvider), and
// server-everything behind the gateway. The browser part of the flow (login and consent) is driven
// headlessly by the test identity provider's `authorize`.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type IdentityProvider, type SigningJwk, startIdentityProvider } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { exportJWK, generateKeyPair, importJWK, SignJWT } from 'jose';
import { EVERYTHING, textOf } from '../../mcp/test-support.ts';
import { REDIRECT, signIn } from './test-support.ts';

const SCOPE = 'mcp:tools';
/** A service account of the identity provider (client_credentials), for tokens made outside the flow. */
const SERVICE = { clientId: 'svc', clientSecret: 'svc-secret' };

async function signingKey(kid: string): Promise<SigningJwk> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  return { ...(await exportJWK(privateKey)), kty: 'RSA', kid, alg: 'RS256', use: 'sig' };
}

/** A JSON-RPC initialize as a client sends it first, with an optional bearer token. */
async function initialize(url: string, token?: string) {
  const r = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    }),
  });
  return { status: r.status, challenge: r.headers.get('www-authenticate'), text: await r.text() };
}

let key: SigningJwk;
let dcrIdp: IdentityProvider; // has dynamic client registration
let plainIdp: IdentityProvider; // has not: only a pre-registered public client
let proxy: TestProxy;

before(async () => {
  key = await signingKey('k1');
  const common = {
    keys: [key],
    clients: [{ ...SERVICE, scope: SCOPE }],
    // every URL of the gateway is a resource whose tokens carry it as their audience
    resources: (indicator: string) =>
      indicator.startsWith('http://127.0.0.1:') ? { audience: indicator, scope: SCOPE } : undefined,
    scopes: [SCOPE],
    accounts: { alice: { groups: ['eng'] }, bob: { groups: ['sales'] } },
  };
  [dcrIdp, plainIdp] = await Promise.all([
    startIdentityProvider({ ...common, registration: true }),
    startIdentityProvider({ ...common, publicClients: [{ clientId: 'gw-mcp', redirectUris: [REDIRECT] }] }),
  ]);
  const target = `targets: [{name: everything, stdio: {cmd: ${JSON.stringify(EVERYTHING.cmd)}, args: ${JSON.stringify(EVERYTHING.args)}}}]`;
  const auth = (idp: IdentityProvider, extra = '') =>
    `mcpAuthentication: {issuer: "${idp.issuer}", jwks: {url: "${idp.metadata.jwks_uri}"}, resourceMetadata: {scopesSupported: [${SCOPE}]}${extra}}`;
  proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - name: dcr
      matches:
      - path: {exact: /mcp}
      - path: {pathPrefix: /.well-known/oauth-protected-resource/mcp}
      policies:
        ${auth(dcrIdp)}
        mcpAuthorization:
          rules:
          - deny: 'has(mcp.tool) && mcp.tool.name == "get-env" && jwt.sub != "alice"'
      backends: [{mcp: {${target}}}]
    - name: preregistered
      matches:
      - path: {exact: /pre/mcp}
      - path: {pathPrefix: /.well-known/oauth-protected-resource/pre/mcp}
      - path: {pathPrefix: /.well-known/oauth-authorization-server/pre/mcp}
      policies:
        ${auth(plainIdp, ', clientId: gw-mcp')}
      backends: [{mcp: {${target}}}]
    - name: optional
      matches: [{path: {exact: /optional/mcp}}]
      policies:
        ${auth(dcrIdp, ', mode: optional')}
      backends: [{mcp: {${target}}}]
    - name: permissive
      matches: [{path: {exact: /permissive/mcp}}]
      policies:
        ${auth(dcrIdp, ', mode: permissive')}
        mcpAuthorization:
          # without a JWT, jwt.iss cannot be evaluated: get-env is not allowed
          rules: ['!has(mcp.tool) || mcp.tool.name != "get-env" || jwt.iss != ""']
      backends: [{mcp: {${target}}}]
`);
});

after(async () => {
  await proxy?.close();
  await dcrIdp?.close();
  await plainIdp?.close();
});

describe('discovery', () => {
  test('an unauthenticated call gets 401 pointing at the protected resource metadata, which names the issuer', async () => {
    const r = await initialize(proxy.url('/mcp'));
    assert.equal(r.status, 401, r.text);
    const metadataUrl = proxy.url('/.well-known/oauth-protected-resource/mcp');
    assert.equal(r.challenge, `Bearer resource_metadata="${metadataUrl}"`);
    const m = await fetch(metadataUrl);
    assert.equal(m.status, 200);
    assert.equal(m.headers.get('access-control-allow-origin'), '*');
    assert.deepEqual(await m.json(), {
      resource: proxy.url('/mcp'),
      authorization_servers: [dcrIdp.issuer],
      bearer_methods_supported: ['header'],
      scopes_supported: [SCOPE],
    });
  });

  test('with clientId the gateway fronts the authorization server metadata and its registration endpoint', async () => {
    const prm = (await (await fetch(proxy.url('/.well-known/oauth-protected-resource/pre/mcp'))).json()) as {
      authorization_servers: string[];
    };
    assert.deepEqual(prm.authorization_servers, [proxy.url('/pre/mcp')]);
    const asm = await fetch(proxy.url('/.well-known/oauth-authorization-server/pre/mcp'));
    assert.equal(asm.status, 200);
    const doc = (await asm.json()) as Record<string, unknown>;
    assert.equal(doc['issuer'], plainIdp.issuer, 'the rest is the provider’s own metadata');
    assert.equal(doc['token_endpoint'], plainIdp.metadata.token_endpoint);
    assert.equal(
      doc['registration_endpoint'],
      proxy.url('/.well-known/oauth-authorization-server/pre/mcp/client-registration'),
    );
  });
});

describe('the whole flow with the SDK client', () => {
  test('dynamic client registration at the provider, code + PKCE, then tools/call through the gateway', async () => {
    const before = dcrIdp.registrations.length;
    const { client, oauth } = await signIn(proxy.url('/mcp'), dcrIdp, 'alice');
    try {
      assert.equal(dcrIdp.registrations.length, before + 1, 'the client registered itself with the provider');
      assert.equal(oauth.clientInformation()?.client_id, dcrIdp.registrations.at(-1));
      const r = await client.callTool({ name: 'echo', arguments: { message: 'through the gateway' } });
      assert.match(textOf(r), /through the gateway/);
      // jwt.sub reached the mcpAuthorization rule: alice may call get-env
      const names = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(names.includes('get-env'), names.join(','));
    } finally {
      await client.close();
    }
  });

  test('jwt.sub in an mcpAuthorization rule: bob does not see or get get-env', async () => {
    const { client } = await signIn(proxy.url('/mcp'), dcrIdp, 'bob');
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(names.includes('echo'));
      assert.ok(!names.includes('get-env'), names.join(','));
      await assert.rejects(client.callTool({ name: 'get-env', arguments: {} }), /not allowed|unknown tool/i);
    } finally {
      await client.close();
    }
  });

  test('a provider without registration: the gateway answers it with the configured clientId', async () => {
    const { client, oauth } = await signIn(proxy.url('/pre/mcp'), plainIdp, 'alice');
    try {
      assert.equal(oauth.clientInformation()?.client_id, 'gw-mcp');
      assert.equal(plainIdp.registrations.length, 0);
      const r = await client.callTool({ name: 'echo', arguments: { message: 'pre-registered' } });
      assert.match(textOf(r), /pre-registered/);
    } finally {
      await client.close();
    }
  });
});

describe('tokens the gateway refuses', () => {
  const token = (resource: string) => dcrIdp.token({ ...SERVICE, resource, scope: SCOPE });

  test('a token for another resource (wrong audience) is a 401 that says why', async () => {
    const t = await token(proxy.url('/elsewhere'));
    const r = await initialize(proxy.url('/mcp'), t);
    assert.equal(r.status, 401, r.text);
    assert.match(
      r.challenge ?? '',
      /^Bearer error="invalid_token", error_description="invalid JWT: claim aud is not valid", resource_metadata="/,
    );
    assert.match(r.text, /claim aud is not valid/);
  });

  test('an expired token, signed with the provider’s own key, is a 401', async () => {
    const now = Math.floor(Date.now() / 1000);
    const expired = await new SignJWT({ scope: SCOPE })
      .setProtectedHeader({ alg: 'RS256', kid: key.kid })
      .setIssuer(dcrIdp.issuer)
      .setSubject('alice')
      .setAudience(proxy.url('/mcp'))
      .setIssuedAt(now - 600)
      .setExpirationTime(now - 300)
      .sign(await importJWK(key, 'RS256'));
    const r = await initialize(proxy.url('/mcp'), expired);
    assert.equal(r.status, 401, r.text);
    assert.match(r.challenge ?? '', /error_description="invalid JWT: token expired"/);
  });

  test('garbage and a token of another issuer are 401s, never a crash', async () => {
    for (const bad of [
      'not-a-jwt',
      await plainIdp.token({ ...SERVICE, resource: proxy.url('/mcp'), scope: SCOPE }),
    ]) {
      const r = await initialize(proxy.url('/mcp'), bad);
      assert.equal(r.status, 401, r.text);
      assert.match(r.challenge ?? '', /error="invalid_token"/);
    }
    assert.equal((await initialize(proxy.url('/mcp'), await token(proxy.url('/mcp')))).status, 200);
  });
});

describe('modes', () => {
  test('optional: no token passes, a bad token is still refused', async () => {
    assert.equal((await initialize(proxy.url('/optional/mcp'))).status, 200);
    assert.equal((await initialize(proxy.url('/optional/mcp'), 'not-a-jwt')).status, 401);
    const good = await dcrIdp.token({ ...SERVICE, resource: proxy.url('/optional/mcp'), scope: SCOPE });
    assert.equal((await initialize(proxy.url('/optional/mcp'), good)).status, 200);
  });

  test('permissive: nothing is refused, but only a valid token gives jwt.* to the rules', async () => {
    assert.equal((await initialize(proxy.url('/permissive/mcp'), 'not-a-jwt')).status, 200);
    const tools = async (token?: string) => {
      const client = new Client({ name: 'permissive', version: '1.0.0' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(proxy.url('/permissive/mcp')), {
          requestInit: token ? { headers: { authorization: `Bearer ${token}` } } : {},
        }),
      );
      try {
        return (await client.listTools()).tools.map((t) => t.name);
      } finally {
        await client.close();
      }
    };
    assert.ok(!(await tools()).includes('get-env'), 'no token: no claims, the rule hides get-env');
    const good = await dcrIdp.token({ ...SERVICE, resource: proxy.url('/permissive/mcp'), scope: SCOPE });
    assert.ok((await tools(good)).includes('get-env'), 'a valid token: jwt.sub is there');
  });
});
