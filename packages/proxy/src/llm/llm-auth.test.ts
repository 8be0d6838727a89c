// A model's `auth` (agentgateway's llm.models[].auth, and backendAuth on a route's ai provider): the
// credential the gateway presents to the provider, in any backendAuth form. A key alone is the
// provider's own key, sent its way; the other forms are written after the provider's request is
// ready and replace whatever the client sent. The official `openai` client against gw; fake
// providers in OpenAI's, Anthropic's and Bedrock's wire formats (Bedrock's checks SigV4).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ConfigError } from '@gw/api';
import { type FakeAnthropic, type FakeOpenAI, startFakeAnthropic, startFakeOpenAI } from '@gw/testkit';
import { type FakeBedrock, startFakeBedrock } from '@gw/testkit/llm/bedrock';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { exportPKCS8, exportSPKI, generateKeyPair, importSPKI, jwtVerify, SignJWT } from 'jose';
import OpenAI from 'openai';
import { loadConfigText } from '../config/load.ts';

const CREDS = { accessKeyId: 'AKIDMODELAUTH', secretAccessKey: 'model/auth/secret/key/EXAMPLE' };
const messages = [{ role: 'user' as const, content: 'Hello!' }];

let openai: FakeOpenAI;
let anthropic: FakeAnthropic;
let bedrock: FakeBedrock;
let proxy: TestProxy;
let jwtProxy: TestProxy;
let signerPublicPem: string;
let clientJwt: string;

before(async () => {
  openai = await startFakeOpenAI({ name: 'openai' });
  anthropic = await startFakeAnthropic({ apiKey: 'sk-ant-model' });
  bedrock = await startFakeBedrock({ ...CREDS, region: 'eu-west-3' });
  const signer = await generateKeyPair('ES256', { extractable: true });
  signerPublicPem = await exportSPKI(signer.publicKey);
  const signingKey = await exportPKCS8(signer.privateKey);
  const client = await generateKeyPair('RS256', { extractable: true });
  const jwk = {
    ...(await import('jose').then((j) => j.exportJWK(client.publicKey))),
    kid: 'c1',
    alg: 'RS256',
  };
  clientJwt = await new SignJWT({ sub: 'alice' })
    .setProtectedHeader({ alg: 'RS256', kid: 'c1' })
    .setIssuer('https://issuer.example.com')
    .setAudience('llm')
    .setExpirationTime('5m')
    .sign(client.privateKey);
  const head = (policies: string) => `config:
  adminAddr: "off"
llm:
  port: 0
${policies}  models:
`;
  proxy = await startProxy(`${head('')}  - name: claude
    provider: anthropic
    params: {baseUrl: "${anthropic.origin}"}
    auth: {key: sk-ant-model}
  - name: located
    provider: openai
    params: {baseUrl: "${openai.origin}/v1"}
    auth: {key: {value: team-key, location: {header: {name: x-team-key}}}}
  - name: extra
    provider: anthropic
    params: {baseUrl: "${anthropic.origin}"}
    auth: {key: sk-ant-model, credentials: [{location: {header: {name: anthropic-beta}}, key: "tools-2024"}, {location: {header: {name: x-project}}, key: p-7}]}
  - name: signed
    provider: openai
    params: {baseUrl: "${openai.origin}/v1"}
    auth:
      jwtSign:
        signingKey: ${JSON.stringify(signingKey)}
        alg: ES256
        claims: {iss: gw, aud: provider}
  - name: bedrock-claude
    provider: bedrock
    params: {awsRegion: eu-west-3, hostOverride: "127.0.0.1:${bedrock.port}", model: anthropic.claude-3-5-haiku-20241022-v1:0}
    auth:
      aws: {accessKeyId: ${CREDS.accessKeyId}, secretAccessKey: ${CREDS.secretAccessKey}}
`);
  // The client's JWT is validated by llm.policies.jwtAuth, then forwarded by `passthrough`.
  jwtProxy = await startProxy(`${head(`  policies:
    jwtAuth:
      issuer: https://issuer.example.com
      audiences: [llm]
      jwks: {inline: '${JSON.stringify({ keys: [jwk] })}'}
`)}  - name: forwarded
    provider: openai
    params: {baseUrl: "${openai.origin}/v1"}
    auth: {passthrough: {}}
`);
});

after(async () => {
  await proxy?.close();
  await jwtProxy?.close();
  await Promise.all([openai?.close(), anthropic?.close(), bedrock?.close()]);
});

const client = (apiKey = 'sk-client', to = () => proxy) =>
  new OpenAI({ apiKey, baseURL: to().url('/v1'), maxRetries: 0 });
const lastOpenAI = () => openai.seen[openai.seen.length - 1];

describe('auth on a model', () => {
  test('{key}: the provider’s own key, sent its way (Anthropic’s x-api-key), not the client’s', async () => {
    const r = await client().chat.completions.create({ model: 'claude', messages });
    assert.equal(r.object, 'chat.completion');
    const seen = anthropic.seen[anthropic.seen.length - 1];
    assert.equal(seen?.headers['x-api-key'], 'sk-ant-model');
    assert.equal(seen?.headers.authorization, undefined);
  });

  test('credentials beside the provider’s key: the key goes its way, the extra headers beside it', async () => {
    const r = await client().chat.completions.create({ model: 'extra', messages });
    assert.equal(r.object, 'chat.completion');
    const seen = anthropic.seen[anthropic.seen.length - 1];
    assert.equal(seen?.headers['x-api-key'], 'sk-ant-model');
    assert.equal(seen?.headers['anthropic-beta'], 'tools-2024');
    assert.equal(seen?.headers['x-project'], 'p-7');
    assert.equal(seen?.headers.authorization, undefined);
  });

  test('a key with a location: that header, and the client’s credential is not passed on', async () => {
    await client().chat.completions.create({ model: 'located', messages });
    assert.equal(lastOpenAI()?.headers['x-team-key'], 'team-key');
    assert.equal(lastOpenAI()?.headers.authorization, undefined);
  });

  test('passthrough: the client’s validated JWT goes to the provider', async () => {
    await client(clientJwt, () => jwtProxy).chat.completions.create({ model: 'forwarded', messages });
    assert.equal(lastOpenAI()?.headers.authorization, `Bearer ${clientJwt}`);
  });

  test('jwtSign: a JWT signed for the request, verifiable with the signer’s public key', async () => {
    await client().chat.completions.create({ model: 'signed', messages });
    const auth = String(lastOpenAI()?.headers.authorization ?? '');
    assert.match(auth, /^Bearer ey/);
    const { payload } = await jwtVerify(auth.slice(7), await importSPKI(signerPublicPem, 'ES256'), {
      issuer: 'gw',
      audience: 'provider',
    });
    assert.ok(typeof payload.exp === 'number' && typeof payload.iat === 'number');
  });

  test('aws on Bedrock: SigV4 with the given keys, for bedrock in the provider’s region', async () => {
    const r = await client().chat.completions.create({ model: 'bedrock-claude', messages });
    assert.equal(r.object, 'chat.completion');
    const seen = bedrock.seen[bedrock.seen.length - 1];
    assert.equal(seen?.sigv4?.accessKeyId, CREDS.accessKeyId);
    assert.equal(seen?.sigv4?.region, 'eu-west-3');
    assert.equal(seen?.sigv4?.service, 'bedrock');
  });
});

describe('config errors name the field', () => {
  const load = (model: string) =>
    loadConfigText('llm.yaml', `llm:\n  port: 4000\n  models:\n${model}`, process.cwd());
  test('params.apiKey and auth together', () => {
    assert.throws(
      () => load('  - {name: m, provider: openai, params: {apiKey: a}, auth: {key: b}}\n'),
      (e: unknown) =>
        e instanceof ConfigError &&
        /llm\.models\[0\]\.auth: set params\.apiKey or auth, not both/.test(e.message),
    );
  });
  test('a form that cannot be built names its field (jwtSign with a key that is not PEM)', () => {
    assert.throws(
      () => load('  - {name: m, provider: openai, auth: {jwtSign: {signingKey: not-a-key}}}\n'),
      (e: unknown) =>
        e instanceof ConfigError && /llm\.models\[0\]\.auth\.jwtSign\.signingKey/.test(e.message),
    );
  });
  test('backendAuth on a route’s ai provider takes the same forms', () => {
    const { ir } = loadConfigText(
      'route.yaml',
      `binds:
- port: 8080
  listeners:
  - routes:
    - backends:
      - ai:
          name: p
          provider: {openAI: {}}
          policies:
            backendAuth: {key: {value: k, location: {header: {name: x-k}}}}
`,
      process.cwd(),
    );
    const target = ir.binds[0]?.listeners[0]?.routes[0]?.backends[0]?.target;
    assert.ok(target && 'kind' in target && target.kind === 'ai');
    const p = target.models[0]?.provider;
    assert.equal(p?.apiKey, undefined);
    assert.deepEqual(p?.auth && 'key' in p.auth ? p.auth.key.location : undefined, {
      header: { name: 'x-k' },
    });
  });
});
