// examples/mcp-auth.yaml as a user runs it, with a local oidc-provider standing in for the issuer the
// file names: an unauthenticated call gets 401 and the metadata URL, the MCP SDK client signs in
// (registration, authorization code + PKCE) and calls a tool, and the rule on jwt.groups decides who
// gets get-env.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { signIn } from '@gw/proxy/policies/mcp-authentication/test-support';
import { type IdentityProvider, startIdentityProvider } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';

const dir = dirname(fileURLToPath(import.meta.url));
let idp: IdentityProvider;
let proxy: TestProxy;

before(async () => {
  const { generateKeyPairSync } = await import('node:crypto');
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = privateKey.export({ format: 'jwk' });
  idp = await startIdentityProvider({
    keys: [{ ...jwk, kty: 'RSA', kid: 'example', alg: 'RS256', use: 'sig' }],
    clients: [],
    resources: (r) => (r.startsWith('http://127.0.0.1:') ? { audience: r, scope: 'mcp:tools' } : undefined),
    scopes: ['mcp:tools'],
    accounts: { alice: { groups: ['eng'] }, bob: { groups: ['sales'] } },
    registration: true,
  });
  const text = readFileSync(join(dir, 'mcp-auth.yaml'), 'utf8')
    .replaceAll('${PORT:-3000}', '0')
    .replaceAll('${MCP_ISSUER:-http://localhost:9000}', idp.issuer)
    .replaceAll('${MCP_JWKS:-http://localhost:9000/.well-known/jwks.json}', idp.metadata.jwks_uri)
    .replaceAll('${MCP_SERVERS:-examples/node_modules}', join(dir, 'node_modules'));
  proxy = await startProxy(text, dir);
});

after(async () => {
  await proxy?.close();
  await idp?.close();
});

test('mcp-auth.yaml: 401 with the metadata URL, then the SDK client signs in and calls tools', async () => {
  const r = await fetch(proxy.url('/mcp'), { method: 'POST', body: '{}' });
  assert.equal(r.status, 401);
  const metadata = proxy.url('/.well-known/oauth-protected-resource/mcp');
  assert.equal(r.headers.get('www-authenticate'), `Bearer resource_metadata="${metadata}"`);
  const prm = (await (await fetch(metadata)).json()) as Record<string, unknown>;
  assert.equal(prm['resource'], proxy.url('/mcp'));
  assert.deepEqual(prm['authorization_servers'], [idp.issuer]);

  const alice = await signIn(proxy.url('/mcp'), idp, 'alice');
  try {
    const tools = (await alice.client.listTools()).tools.map((t) => t.name);
    assert.ok(tools.includes('get-env'), 'alice is in eng');
    const echoed = await alice.client.callTool({ name: 'echo', arguments: { message: 'hello' } });
    assert.match(JSON.stringify(echoed.content), /hello/);
  } finally {
    await alice.client.close();
  }
  const bob = await signIn(proxy.url('/mcp'), idp, 'bob');
  try {
    const tools = (await bob.client.listTools()).tools.map((t) => t.name);
    assert.ok(tools.includes('echo') && !tools.includes('get-env'), tools.join(','));
  } finally {
    await bob.client.close();
  }
});
