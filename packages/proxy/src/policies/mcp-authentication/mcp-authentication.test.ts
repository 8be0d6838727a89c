// mcpAuthentication's config (agentgateway's fields, the errors a mistake gets, naming its field)
// and the parts of its behaviour the OAuth flow test does not reach: a provider's quirks in the
// authorization server metadata, registrations passed on to the provider, the token kept from the
// upstream, the backend form, and CORS preflights on the discovery endpoints.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  type IdentityProvider,
  type SigningJwk,
  startIdentityProvider,
  startUpstream,
  type TestServer,
} from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { exportJWK, generateKeyPair } from 'jose';
import { loadConfigText } from '../../config/load.ts';
import { assertConfigRejects, EVERYTHING } from '../../mcp/test-support.ts';
import { derivedJwks } from './index.ts';

const load = (text: string) => loadConfigText('gw.yaml', text, '/tmp');

const route = (auth: string, backend = '{host: "127.0.0.1:8080"}') => `binds:
- port: 3000
  listeners:
  - routes:
    - policies:
        mcpAuthentication:
${auth
  .trim()
  .split('\n')
  .map((l) => `          ${l}`)
  .join('\n')}
      backends: [${backend}]
`;

const rejects = (text: string, re: RegExp) => assertConfigRejects(load, text, re);

describe('config', () => {
  test("agentgateway's fields load; a JWKS file is read into the policy", (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'gw-mcp-auth-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(join(dir, 'jwks.json'), '{"keys":[]}');
    const ir = load(
      route(`issuer: https://idp.example.com/realms/mcp
audiences: [mcp_proxy]
provider: {keycloak: {}}
mode: optional
clientId: gw
jwks: {file: ${join(dir, 'jwks.json')}}
authorizationLocation: {header: {name: x-token}}
jwtValidationOptions: {requiredClaims: [exp, sub]}
resourceMetadata:
  resource: https://gw.example.com/mcp
  scopesSupported: [openid]
  bearerMethodsSupported: [header]`),
    ).ir;
    const p = ir.binds[0]?.listeners[0]?.routes[0]?.policies.mcpAuthentication;
    assert.equal(p?.issuer, 'https://idp.example.com/realms/mcp');
    assert.deepEqual(p?.provider, { keycloak: {} });
    assert.deepEqual(p?.jwks, { inline: '{"keys":[]}' });
    assert.ok(ir.global.sensitiveHeaders.includes('x-token'), 'the token header is redacted in diagnostics');
  });

  test('mistakes are config errors naming the field', () => {
    rejects(
      route('issuer: idp.example.com'),
      /mcpAuthentication\.issuer: issuer "idp\.example\.com" must be an http\(s\) URL/,
    );
    rejects(
      route('issuer: https://idp.example.com\nresourceMetadata: {resource: /mcp}'),
      /mcpAuthentication\.resourceMetadata\.resource: resource must be the http\(s\) URL/,
    );
    rejects(
      route(`issuer: https://idp.example.com\njwks: '{"nokeys": 1}'`),
      /mcpAuthentication\.jwks: JWKS must be/,
    );
    rejects(route('issuer: https://idp.example.com\njwks: {file: /nonexistent/jwks.json}'), /jwks\.file/);
    rejects(
      route('issuer: https://idp.example.com\njwtValidationOptions: {requiredClaims: [sub]}'),
      /requiredClaims: gw always requires exp/,
    );
    rejects(route('issuer: https://idp.example.com\nmode: lenient'), /mcpAuthentication\.mode/);
    // the entra provider and clientSecret have their own tests (below)
    rejects(
      route('issuer: https://idp.example.com\nprovider: {entra: {}}'),
      /the entra issuer "https:\/\/idp\.example\.com" names no tenant/,
    );
    rejects(route('audiences: [a]'), /mcpAuthentication\.issuer/);
    rejects(
      `binds:
- port: 3000
  listeners:
  - routes:
    - backends:
      - host: "127.0.0.1:8080"
        policies:
          mcpAuthentication: {issuer: "https://idp.example.com"}
`,
      /backends\[0\]\.policies\.mcpAuthentication: mcpAuthentication on a backend applies only to mcp backends/,
    );
  });

  test('without jwks the keys are where the provider publishes them', () => {
    assert.deepEqual(
      derivedJwks({ issuer: 'https://kc.example.com/realms/mcp', provider: { keycloak: {} } }),
      {
        url: 'https://kc.example.com/realms/mcp/protocol/openid-connect/certs',
      },
    );
    assert.deepEqual(derivedJwks({ issuer: 'https://tenant.auth0.com/' }), {
      url: 'https://tenant.auth0.com/.well-known/jwks.json',
    });
  });
});

describe('behaviour', () => {
  let idp: IdentityProvider;
  let up: TestServer;
  let proxy: TestProxy;
  const SERVICE = { clientId: 'svc', clientSecret: 'svc-secret' };

  before(async () => {
    const { privateKey } = await generateKeyPair('RS256', { extractable: true });
    const key: SigningJwk = {
      ...(await exportJWK(privateKey)),
      kty: 'RSA',
      kid: 'k',
      alg: 'RS256',
      use: 'sig',
    };
    [idp, up] = await Promise.all([
      startIdentityProvider({
        keys: [key],
        clients: [{ ...SERVICE, scope: 'api' }],
        resources: (r) => (r.startsWith('http://127.0.0.1:') ? { audience: r, scope: 'api' } : undefined),
        registration: true,
      }),
      startUpstream(),
    ]);
    const auth = (extra: string) =>
      `{issuer: "${idp.issuer}", jwks: {url: "${idp.metadata.jwks_uri}"}${extra}}`;
    proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - name: auth0
      matches: [{path: {pathPrefix: /.well-known/oauth-authorization-server/auth0}}]
      policies: {mcpAuthentication: ${auth(', provider: {auth0: {}}, audiences: [urn:gw]')}}
      backends: [{host: "127.0.0.1:${up.port}"}]
    - name: plain
      matches: [{path: {pathPrefix: /.well-known/oauth-authorization-server/plain}}, {path: {pathPrefix: /api}}]
      policies: {mcpAuthentication: ${auth('')}}
      backends: [{host: "127.0.0.1:${up.port}"}]
`);
  });

  after(async () => {
    await proxy?.close();
    await up?.close();
    await idp?.close();
  });

  test('auth0: the authorization endpoint carries the audience, as Auth0 takes no resource indicators', async () => {
    const r = await fetch(proxy.url('/.well-known/oauth-authorization-server/auth0/mcp'));
    assert.equal(r.status, 200);
    const doc = (await r.json()) as { authorization_endpoint: string; issuer: string };
    assert.equal(
      doc.issuer,
      idp.issuer,
      'read through OpenID discovery, as the provider has no RFC 8414 document',
    );
    assert.equal(new URL(doc.authorization_endpoint).searchParams.get('audience'), 'urn:gw');
  });

  test('without clientId a registration sent to the gateway is passed on to the provider', async () => {
    const before = idp.registrations.length;
    const r = await fetch(proxy.url('/.well-known/oauth-authorization-server/plain/client-registration'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        redirect_uris: ['http://localhost:3999/callback'],
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code'],
        response_types: ['code'],
      }),
    });
    assert.equal(r.status, 201, await r.clone().text());
    assert.equal(r.headers.get('access-control-allow-origin'), '*');
    const client = (await r.json()) as { client_id: string };
    assert.equal(idp.registrations.length, before + 1);
    assert.equal(client.client_id, idp.registrations.at(-1));
  });

  test('a CORS preflight on a discovery endpoint is answered without credentials', async () => {
    const r = await fetch(proxy.url('/.well-known/oauth-authorization-server/plain'), {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'GET' },
    });
    assert.equal(r.status, 204);
    assert.equal(r.headers.get('access-control-allow-origin'), '*');
  });

  test('on an mcp backend (where the deprecated CRD field lands) it guards the backend the same way', async () => {
    const onBackend = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - backends:
      - mcp: {targets: [{name: everything, stdio: {cmd: ${JSON.stringify(EVERYTHING.cmd)}, args: ${JSON.stringify(EVERYTHING.args)}}}]}
        policies:
          mcpAuthentication: {issuer: "${idp.issuer}", jwks: {url: "${idp.metadata.jwks_uri}"}}
`);
    try {
      const init = (token?: string) =>
        fetch(onBackend.url('/mcp'), {
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
            params: {
              protocolVersion: '2025-06-18',
              capabilities: {},
              clientInfo: { name: 't', version: '1' },
            },
          }),
        });
      const r = await init();
      assert.equal(r.status, 401);
      assert.equal(
        r.headers.get('www-authenticate'),
        `Bearer resource_metadata="${onBackend.url('/.well-known/oauth-protected-resource/mcp')}"`,
      );
      const token = await idp.token({ ...SERVICE, resource: onBackend.url('/mcp'), scope: 'api' });
      assert.equal((await init(token)).status, 200);
    } finally {
      await onBackend.close();
    }
  });

  test('the upstream never sees the token; the metadata of an unreachable issuer is a 502', async () => {
    const token = await idp.token({ ...SERVICE, resource: proxy.url('/api/x'), scope: 'api' });
    const r = await fetch(proxy.url('/api/x'), { headers: { authorization: `Bearer ${token}` } });
    assert.equal(r.status, 200, await r.clone().text());
    const echoed = (await r.json()) as { headers: Record<string, unknown> };
    assert.equal(echoed.headers['authorization'], undefined);

    const down = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - policies: {mcpAuthentication: {issuer: "http://127.0.0.1:1", jwks: '{"keys":[]}'}}
      backends: [{host: "127.0.0.1:${up.port}"}]
`);
    try {
      const m = await fetch(down.url('/.well-known/oauth-authorization-server'));
      assert.equal(m.status, 502);
      assert.match(await m.text(), /authorization server's metadata is not available/);
    } finally {
      await down.close();
    }
  });
});

// Descope's agentic apps: an issuer per MCP server (…/v1/apps/agentic/<project>/<server>) that
// publishes only OpenID discovery, and takes dynamic client registrations at its management API,
// without CORS headers. A stand-in on the wire shapes Descope documents.
describe('the descope provider', () => {
  let descope: import('node:http').Server;
  let base: string;
  let proxy: TestProxy;
  const hits: string[] = [];
  const registered: unknown[] = [];

  before(async () => {
    const http = await import('node:http');
    descope = http.createServer((req, res) => {
      hits.push(`${req.method} ${req.url}`);
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const issuer = `${base}/v1/apps/agentic/P2x/MS1`;
        if (req.method === 'GET' && req.url === '/v1/apps/agentic/P2x/MS1/.well-known/openid-configuration') {
          res.writeHead(200, { 'content-type': 'application/json' }).end(
            JSON.stringify({
              issuer,
              authorization_endpoint: `${issuer}/authorize`,
              token_endpoint: `${issuer}/token`,
              jwks_uri: `${issuer}/.well-known/jwks.json`,
              registration_endpoint: `${base}/v1/mgmt/mcp/client/P2x/MS1/register`,
            }),
          );
          return;
        }
        if (req.method === 'POST' && req.url === '/v1/mgmt/mcp/client/P2x/MS1/register') {
          registered.push(JSON.parse(Buffer.concat(chunks).toString()));
          res.writeHead(201, { 'content-type': 'application/json' }).end('{"client_id":"dsc-1"}');
          return;
        }
        res.writeHead(404).end();
      });
    });
    await new Promise<void>((r) => descope.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(descope.address() as import('node:net').AddressInfo).port}`;
    proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - policies:
        mcpAuthentication:
          issuer: "${base}/v1/apps/agentic/P2x/MS1"
          provider: {descope: {}}
          jwks: '{"keys":[]}'
      backends: [{host: "127.0.0.1:1"}]
`);
  });

  after(async () => {
    await proxy?.close();
    await new Promise((r) => descope?.close(r));
  });

  test('its OpenID discovery, fronted: registrations come to the gateway', async () => {
    const r = await fetch(proxy.url('/.well-known/oauth-authorization-server/mcp'));
    assert.equal(r.status, 200);
    const doc = (await r.json()) as Record<string, string>;
    assert.equal(doc['token_endpoint'], `${base}/v1/apps/agentic/P2x/MS1/token`);
    assert.equal(
      doc['registration_endpoint'],
      proxy.url('/.well-known/oauth-authorization-server/mcp/client-registration'),
    );
    assert.ok(
      hits.every((h) => !h.includes('/.well-known/oauth-authorization-server')),
      `only OpenID discovery is asked for: ${hits.join(', ')}`,
    );
  });

  test("a registration goes to the agentic app's MCP server, and the browser can read the answer", async () => {
    const r = await fetch(proxy.url('/.well-known/oauth-authorization-server/mcp/client-registration'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: ['http://localhost:3999/cb'], client_name: 'cli' }),
    });
    assert.equal(r.status, 201);
    assert.equal(r.headers.get('access-control-allow-origin'), '*');
    assert.deepEqual(await r.json(), { client_id: 'dsc-1' });
    assert.deepEqual(registered.at(-1), { redirect_uris: ['http://localhost:3999/cb'], client_name: 'cli' });
  });

  test('without clientId the issuer must be an agentic app', () => {
    rejects(
      route('issuer: https://api.descope.com/P2x\nprovider: {descope: {}}'),
      /mcpAuthentication\.issuer: with the descope provider and no clientId the issuer is an agentic app/,
    );
    load(route('issuer: https://api.descope.com/P2x\nprovider: {descope: {}}\nclientId: pre-registered'));
  });
});

/**
 * An identity provider stand-in on loopback with a real RS256 key (served at `keysPath` under kid
 * `kid`): `answer` takes its other paths (true when it answered), every request is in `hits`; and a
 * gateway whose route runs mcpAuthentication (`auth`, given the stand-in's base URL) before an echo
 * upstream. `sign` makes a token for `issuer` and `audience`, with the stand-in's key unless another.
 */
async function providerStandIn(opts: {
  kid: string;
  keysPath: string;
  answer: (
    req: import('node:http').IncomingMessage,
    body: Buffer,
    res: import('node:http').ServerResponse,
    base: string,
  ) => boolean;
  auth: (base: string) => string;
}) {
  const http = await import('node:http');
  const { SignJWT } = await import('jose');
  const pair = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(pair.publicKey)), kid: opts.kid, alg: 'RS256', use: 'sig' };
  const hits: string[] = [];
  let base = '';
  const server = http.createServer((req, res) => {
    hits.push(`${req.method} ${req.url}`);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === opts.keysPath) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] }));
        return;
      }
      if (!opts.answer(req, Buffer.concat(chunks), res, base)) res.writeHead(404).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as import('node:net').AddressInfo).port}`;
  const up = await startUpstream('echo');
  const proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - policies:
        mcpAuthentication:
${opts
  .auth(base)
  .trim()
  .split('\n')
  .map((l) => `          ${l}`)
  .join('\n')}
      backends: [{host: "127.0.0.1:${up.port}"}]
`);
  const json = (res: import('node:http').ServerResponse, status: number, body: unknown) =>
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  return {
    base,
    proxy,
    hits,
    json,
    sign: async (issuer: string, audience: string, key?: SigningKey) =>
      new SignJWT({ sub: 'alice' })
        .setProtectedHeader({ alg: 'RS256', kid: opts.kid })
        .setIssuer(issuer)
        .setAudience(audience)
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(key ?? pair.privateKey),
    async close() {
      await proxy.close();
      await up.close();
      await new Promise((r) => server.close(r));
    },
  };
}
type StandIn = Awaited<ReturnType<typeof providerStandIn>>;

type SigningKey = Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];

// authentik: an issuer per application (https://<host>/application/o/<slug>/, trailing slash) that
// publishes OpenID discovery and its keys at jwks/ under it. A stand-in on those paths, with a real
// RS256 key: with no jwks configured the gateway finds the keys where authentik keeps them.
describe('the authentik provider', () => {
  let ak: StandIn;
  const issuer = () => `${ak.base}/application/o/tools/`;

  before(async () => {
    ak = await providerStandIn({
      kid: 'ak-1',
      keysPath: '/application/o/tools/jwks/',
      answer: (req, _body, res, base) => {
        if (req.url !== '/application/o/tools/.well-known/openid-configuration') return false;
        ak.json(res, 200, {
          issuer: `${base}/application/o/tools/`,
          authorization_endpoint: `${base}/application/o/authorize/`,
          token_endpoint: `${base}/application/o/token/`,
          jwks_uri: `${base}/application/o/tools/jwks/`,
        });
        return true;
      },
      auth: (base) =>
        `issuer: "${base}/application/o/tools/"\naudiences: [tools-client]\nprovider: {authentik: {}}`,
    });
  });

  after(async () => {
    await ak?.close();
  });

  test('the keys come from jwks/ under the issuer: a token it signed passes, another is refused', async () => {
    assert.deepEqual(
      derivedJwks({ issuer: 'https://ak.example.com/application/o/tools/', provider: { authentik: {} } }),
      { url: 'https://ak.example.com/application/o/tools/jwks/' },
    );
    const ok = await fetch(ak.proxy.url('/mcp'), {
      headers: { authorization: `Bearer ${await ak.sign(issuer(), 'tools-client')}` },
    });
    assert.equal(ok.status, 200);
    assert.ok(ak.hits.includes('GET /application/o/tools/jwks/'), ak.hits.join(', '));
    const other = (await generateKeyPair('RS256')).privateKey;
    const bad = await fetch(ak.proxy.url('/mcp'), {
      headers: { authorization: `Bearer ${await ak.sign(issuer(), 'tools-client', other)}` },
    });
    assert.equal(bad.status, 401);
    assert.match(bad.headers.get('www-authenticate') ?? '', /resource_metadata=/);
  });

  test('its OpenID discovery is what the gateway serves as the authorization server metadata', async () => {
    const r = await fetch(ak.proxy.url('/.well-known/oauth-authorization-server/mcp'));
    assert.equal(r.status, 200);
    const doc = (await r.json()) as Record<string, string>;
    assert.equal(doc['token_endpoint'], `${ak.base}/application/o/token/`);
    assert.ok(
      ak.hits.every((h) => !h.includes('/.well-known/oauth-authorization-server')),
      `only OpenID discovery is asked for: ${ak.hits.join(', ')}`,
    );
  });
});

// Microsoft Entra ID: a tenant's v2.0 OpenID discovery (no registration endpoint, no PKCE methods
// listed) and OAuth endpoints that refuse the RFC 8707 resource parameter. A stand-in on the
// tenant's paths records what reaches it; the gateway fronts the authorize and token endpoints.
describe('the entra provider', () => {
  let entra: StandIn;
  let proxy: TestProxy;
  let base: string;
  const forms: URLSearchParams[] = [];
  const tokenHeaders: Record<string, string | string[] | undefined>[] = [];
  const TENANT = '11111111-2222-3333-4444-555555555555';

  before(async () => {
    entra = await providerStandIn({
      kid: 'entra-1',
      keysPath: `/${TENANT}/discovery/v2.0/keys`,
      answer: (req, body, res, at) => {
        const t = `${at}/${TENANT}`;
        if (req.url === `/${TENANT}/v2.0/.well-known/openid-configuration`) {
          entra.json(res, 200, {
            issuer: `${t}/v2.0`,
            authorization_endpoint: `${t}/oauth2/v2.0/authorize`,
            token_endpoint: `${t}/oauth2/v2.0/token`,
            jwks_uri: `${t}/discovery/v2.0/keys`,
          });
          return true;
        }
        if (req.method !== 'POST' || req.url !== `/${TENANT}/oauth2/v2.0/token`) return false;
        const form = new URLSearchParams(body.toString());
        forms.push(form);
        tokenHeaders.push(req.headers);
        if (form.has('resource')) entra.json(res, 400, { error: 'invalid_target' });
        else entra.json(res, 200, { access_token: 'at-1', token_type: 'Bearer', expires_in: 3600 });
        return true;
      },
      auth: (at) =>
        [
          `issuer: "${at}/${TENANT}/v2.0"`,
          'audiences: ["api://tools"]',
          'provider: {entra: {}}',
          'clientId: app-registration-1',
          'clientSecret: entra-app-secret',
        ].join('\n'),
    });
    proxy = entra.proxy;
    base = entra.base;
  });

  after(async () => {
    await entra?.close();
  });

  const AS = '/.well-known/oauth-authorization-server/mcp';

  test('its discovery, fronted: the authorize, token and registration endpoints are the gateway’s; PKCE is said', async () => {
    const r = await fetch(proxy.url(AS));
    assert.equal(r.status, 200);
    const doc = (await r.json()) as Record<string, unknown>;
    assert.equal(doc['authorization_endpoint'], proxy.url(`${AS}/authorize`));
    assert.equal(doc['token_endpoint'], proxy.url(`${AS}/token`));
    assert.equal(doc['registration_endpoint'], proxy.url(`${AS}/client-registration`));
    assert.deepEqual(doc['code_challenge_methods_supported'], ['S256']);
    const reg = await fetch(proxy.url(`${AS}/client-registration`), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: ['http://localhost:3999/cb'] }),
    });
    assert.equal(reg.status, 201);
    assert.equal(((await reg.json()) as { client_id: string }).client_id, 'app-registration-1');
  });

  test('authorize: sent on to Entra without the resource parameter', async () => {
    const r = await fetch(
      proxy.url(
        `${AS}/authorize?response_type=code&client_id=app-registration-1&resource=${encodeURIComponent('http://gw/mcp')}&scope=api%3A%2F%2Ftools%2F.default&state=s1`,
      ),
      { redirect: 'manual' },
    );
    assert.equal(r.status, 302);
    const to = new URL(r.headers.get('location') ?? '');
    assert.equal(`${to.origin}${to.pathname}`, `${base}/${TENANT}/oauth2/v2.0/authorize`);
    assert.equal(to.searchParams.get('resource'), null);
    assert.equal(to.searchParams.get('state'), 's1');
    assert.equal(to.searchParams.get('scope'), 'api://tools/.default');
  });

  const token = (form: Record<string, string>, headers: Record<string, string> = {}) =>
    fetch(proxy.url(`${AS}/token`), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(form).toString(),
    });

  test('token: without resource; the secret added only to the configured client’s user grants', async () => {
    const r = await token({
      grant_type: 'authorization_code',
      client_id: 'app-registration-1',
      code: 'c1',
      code_verifier: 'v1',
      resource: 'http://gw/mcp',
    });
    assert.equal(r.status, 200);
    assert.equal(((await r.json()) as { access_token: string }).access_token, 'at-1');
    const sent = forms.at(-1);
    assert.equal(sent?.get('resource'), null);
    assert.equal(sent?.get('client_secret'), 'entra-app-secret');
    assert.equal(sent?.get('code_verifier'), 'v1');

    for (const [form, headers] of [
      [{ grant_type: 'client_credentials', client_id: 'app-registration-1' }, {}],
      [{ grant_type: 'authorization_code', client_id: 'someone-else', code: 'c' }, {}],
      [
        { grant_type: 'refresh_token', client_id: 'app-registration-1', refresh_token: 'r' },
        { authorization: 'Basic eDp5' },
      ],
    ] as const) {
      await (await token(form, headers)).arrayBuffer();
      assert.equal(forms.at(-1)?.get('client_secret'), null, JSON.stringify(form));
    }
    assert.equal(tokenHeaders.at(-1)?.['authorization'], 'Basic eDp5', 'the client’s own credential goes on');
    const refresh = await token({
      grant_type: 'refresh_token',
      client_id: 'app-registration-1',
      refresh_token: 'r',
    });
    await refresh.arrayBuffer();
    assert.equal(forms.at(-1)?.get('client_secret'), 'entra-app-secret');
    assert.equal((await fetch(proxy.url(`${AS}/token`))).status, 405);
  });

  test('tokens verify with the tenant’s keys (discovery/v2.0/keys); the secret is never printed', async () => {
    const jwt = await entra.sign(`${base}/${TENANT}/v2.0`, 'api://tools');
    const ok = await fetch(proxy.url('/mcp'), { headers: { authorization: `Bearer ${jwt}` } });
    assert.equal(ok.status, 200);
    const { ir } = load(
      route(
        'issuer: https://login.microsoftonline.com/t1/v2.0\nprovider: {entra: {}}\nclientId: app\nclientSecret: never-printed',
      ),
    );
    assert.doesNotMatch(JSON.stringify(ir), /never-printed/);
    assert.deepEqual(derivedJwks({ issuer: 'https://sts.windows.net/t1/', provider: { entra: {} } }), {
      url: 'https://login.microsoftonline.com/t1/discovery/v2.0/keys',
    });
  });

  test('config: the issuer names a tenant; clientSecret is entra’s and needs clientId', () => {
    rejects(
      route('issuer: https://login.microsoftonline.com/\nprovider: {entra: {}}'),
      /mcpAuthentication\.issuer: the entra issuer .* names no tenant/,
    );
    rejects(
      route(
        'issuer: https://kc.example.com/realms/x\nprovider: {keycloak: {}}\nclientId: a\nclientSecret: s',
      ),
      /mcpAuthentication\.clientSecret: clientSecret is for the entra provider/,
    );
    rejects(
      route('issuer: https://login.microsoftonline.com/t1/v2.0\nprovider: {entra: {}}\nclientSecret: s'),
      /mcpAuthentication\.clientSecret: clientSecret belongs to the app registration clientId names/,
    );
  });
});

// The registration endpoint answers before any authentication: an anonymous client that stops
// sending its registration mid-body must not hold the request past requestBodyIdleTimeout.
test('a client registration whose body stalls is answered 408 after requestBodyIdleTimeout', async () => {
  const proxy = await startProxy(`frontendPolicies: {http: {requestBodyIdleTimeout: 300ms}}
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - policies: {mcpAuthentication: {issuer: "http://127.0.0.1:1", jwks: '{"keys":[]}'}}
      backends: [{host: "127.0.0.1:1"}]
`);
  try {
    const { connect } = await import('node:net');
    const started = performance.now();
    const answer = await new Promise<string>((resolve) => {
      let data = '';
      const sock = connect(proxy.port(), '127.0.0.1', () =>
        sock.write(
          'POST /.well-known/oauth-authorization-server/client-registration HTTP/1.1\r\nhost: gw.test\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"redi',
        ),
      );
      sock.setEncoding('utf8');
      sock.on('data', (c: string) => {
        data += c;
      });
      sock.on('close', () => resolve(data));
      setTimeout(() => sock.destroy(), 5000).unref();
    });
    assert.match(answer, /^HTTP\/1\.1 408 /);
    assert.ok(
      performance.now() - started < 2000,
      `answered after ${Math.round(performance.now() - started)} ms`,
    );
  } finally {
    await proxy.close();
  }
});
