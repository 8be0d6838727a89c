// The llm block's own policies that run before a model is chosen, as agentgateway's `llm.policies`:
// transformations, extProc and oidc (the others — authentication, authorization, CORS, rate limits —
// are in llm.test.ts). Real parts: the official `openai` client, a fake provider speaking OpenAI's
// wire format, a real ext_proc gRPC server, `oidc-provider` and a browser that logs in.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ConfigError } from '@gw/api';
import {
  Browser,
  type FakeLlmRequest,
  type FakeOpenAI,
  type IdentityProvider,
  type SigningJwk,
  startFakeOpenAI,
  startIdentityProvider,
} from '@gw/testkit';
import { type ExtProcServer, setRequestHeader, startExtProcServer } from '@gw/testkit/ext-proc-server';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { exportJWK, generateKeyPair } from 'jose';
import OpenAI from 'openai';
import { loadConfigText } from '../config/load.ts';

const CLIENT = { clientId: 'gw-llm', clientSecret: 'llm-secret' };
const messages = [{ role: 'user' as const, content: 'Hello!' }];

let provider: FakeOpenAI;
let proc: ExtProcServer;
let idp: IdentityProvider;
let plain: TestProxy; // transformations and extProc
let login: TestProxy; // oidc

const lastSeen = () => provider.seen[provider.seen.length - 1] as FakeLlmRequest;

function llmBlock(policies: string): string {
  return `config:
  adminAddr: "off"
llm:
  port: 0
  policies:
${policies}
  models:
  - name: gpt-4o-mini
    provider: openai
    params: {apiKey: sk-provider, baseUrl: "${provider.origin}/v1"}
`;
}

function oidcPolicies(issuer: string, origin: string): string {
  return `    oidc:
      issuer: "${issuer}"
      clientId: ${CLIENT.clientId}
      clientSecret: ${CLIENT.clientSecret}
      redirectURI: "${origin}/login/callback"
      logout: {path: /logout}`;
}

before(async () => {
  provider = await startFakeOpenAI({ name: 'openai', apiKey: 'sk-provider' });
  proc = await startExtProcServer((req) =>
    req.request.case === 'responseHeaders'
      ? { response: { case: 'responseHeaders', value: {} } }
      : setRequestHeader(req, 'x-processed', 'yes'),
  );
  plain = await startProxy(
    llmBlock(`    transformations:
      request:
        set: {x-team: 'request.headers["x-client-team"] + "-via-gw"'}
      response:
        set: {x-served-model: 'llm.requestModel'}
    extProc: {host: "${proc.host}", timeout: 5s, processingOptions: {requestBodyMode: none, responseBodyMode: none}}`),
  );
  // The proxy's port is part of the redirect URI the provider knows: start it, then point it there.
  login = await startProxy(llmBlock(oidcPolicies('http://127.0.0.1:1', 'http://127.0.0.1:1')));
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const key: SigningJwk = {
    ...(await exportJWK(privateKey)),
    kty: 'RSA',
    kid: 'k1',
    alg: 'RS256',
    use: 'sig',
  };
  idp = await startIdentityProvider({
    keys: [key],
    clients: [],
    resources: {},
    accounts: { alice: {} },
    webClients: [{ ...CLIENT, redirectUris: [login.url('/login/callback')] }],
  });
  await login.reload(llmBlock(oidcPolicies(idp.issuer, login.url(''))));
});

after(async () => {
  await plain?.close();
  await login?.close();
  await idp?.close();
  await proc?.close();
  await provider?.close();
});

describe('transformations and extProc in llm.policies', () => {
  test('a chat completion: the request header set by CEL and the processor reach the provider; the answer header is added', async () => {
    const client = new OpenAI({
      apiKey: 'sk-client',
      baseURL: plain.url('/v1'),
      maxRetries: 0,
      defaultHeaders: { 'x-client-team': 'search' },
    });
    const { data, response } = await client.chat.completions
      .create({ model: 'gpt-4o-mini', messages })
      .withResponse();
    assert.equal(data.object, 'chat.completion');
    const seen = lastSeen();
    assert.equal(seen.headers['x-team'], 'search-via-gw');
    assert.equal(seen.headers['x-processed'], 'yes');
    assert.equal(response.headers.get('x-served-model'), 'gpt-4o-mini');
    assert.ok(proc.streams.length > 0, 'the processor saw the request');
  });
});

describe('oidc in llm.policies', () => {
  test('without a session the LLM API sends the browser to the provider; after login it serves the model list', async () => {
    const browser = new Browser();
    const first = await browser.request(login.url('/v1/models'));
    assert.equal(first.status, 302);
    const to = new URL(first.headers.get('location') ?? '');
    assert.equal(`${to.origin}${to.pathname}`, idp.metadata['authorization_endpoint']);
    assert.equal(to.searchParams.get('redirect_uri'), login.url('/login/callback'));
    // The callback path is served by the llm route: the login completes and lands on the model list.
    const page = await browser.navigate(login.url('/v1/models'), { account: 'alice' });
    assert.equal(page.status, 200);
    const list = JSON.parse(page.text) as { data: { id: string }[] };
    assert.deepEqual(
      list.data.map((m) => m.id),
      ['gpt-4o-mini'],
    );
  });

  test('a config whose oidc redirectURI is not absolute names the field', () => {
    assert.throws(
      () =>
        loadConfigText(
          'llm.yaml',
          `llm:
  port: 4000
  policies:
    oidc: {issuer: "https://idp.example.com", clientId: a, clientSecret: b, redirectURI: /callback}
  models: [{name: m, provider: openai, params: {apiKey: k}}]
`,
          process.cwd(),
        ),
      (e: unknown) => e instanceof ConfigError && /llm\.policies\.oidc\.redirectURI/.test(e.message),
    );
  });
});
