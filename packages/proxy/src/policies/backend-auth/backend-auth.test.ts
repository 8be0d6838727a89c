// backendAuth against real peers: upstreams that check the credential they get (a key, a JWT
// verified with jose against the public key of each algorithm, a SigV4 signature recomputed with the
// AWS SDK's signer), the client's JWT from the testkit's identity provider passed through, and the
// configurations refused at load.
import assert from 'node:assert/strict';
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ConfigError } from '@gw/api';
import {
  type IdentityProvider,
  type SigningJwk,
  startIdentityProvider,
  startUpstream,
  type TestServer,
} from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { tempDir } from '@gw/testkit/temp-dir';
import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';
import { exportJWK, generateKeyPair, jwtVerify } from 'jose';
import { request } from 'undici';
import { loadConfigText } from '../../config/load.ts';

const ALGS = ['RS256', 'RS384', 'RS512', 'PS256', 'ES256', 'ES384'] as const;
type Alg = (typeof ALGS)[number];

function keyPair(alg: Alg): { privatePem: string; publicKey: KeyObject } {
  const { privateKey, publicKey } = alg.startsWith('ES')
    ? generateKeyPairSync('ec', { namedCurve: alg === 'ES256' ? 'P-256' : 'P-384' })
    : generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { privatePem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), publicKey };
}

const indent = (s: string, n: number) => s.replace(/\n/g, `\n${' '.repeat(n)}`);

async function get(proxy: TestProxy, path: string, headers: Record<string, string> = {}, body?: string) {
  const r = await request(proxy.url(path), {
    method: body === undefined ? 'GET' : 'POST',
    headers: { ...headers, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body } : {}),
  });
  return { status: r.statusCode, text: await r.body.text() };
}

describe('key, jwtSign and aws', () => {
  const keys = Object.fromEntries(ALGS.map((a) => [a, keyPair(a)])) as Record<
    Alg,
    ReturnType<typeof keyPair>
  >;
  const AWS = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
  let up: TestServer;
  let flaky: TestServer;
  let awsUp: TestServer;
  let proxy: TestProxy;
  let failNext = 0;
  const awsVerdicts: string[] = [];

  before(async () => {
    const dir = tempDir('gw-bauth-');
    writeFileSync(join(dir, 'key.txt'), 'from-a-file\n');
    up = await startUpstream('up', (req, res) => {
      // an upstream that only answers the key it expects
      if (req.url?.startsWith('/key') && req.headers.authorization !== 'Bearer sekret') {
        res.writeHead(401).end('wrong key');
      }
    });
    flaky = await startUpstream('flaky', (_req, res) => {
      if (failNext > 0) {
        failNext--;
        res.writeHead(503).end('try again');
      }
    });
    awsUp = await startUpstream('aws', async (req, res, echo) => {
      // Recompute the signature from what arrived, with the same signer and credentials.
      const auth = String(req.headers.authorization ?? '');
      const date = String(req.headers['x-amz-date'] ?? '');
      const scope = /Credential=[^/]+\/\d{8}\/([^/]+)\/([^/]+)\//.exec(auth);
      const signed = /SignedHeaders=([^,]+)/.exec(auth)?.[1]?.split(';') ?? [];
      const url = new URL(req.url ?? '/', 'http://x');
      const headers: Record<string, string> = {};
      for (const h of signed) if (!h.startsWith('x-amz-')) headers[h] = String(req.headers[h]);
      if (req.headers['x-amz-security-token'])
        headers['x-amz-security-token'] = String(req.headers['x-amz-security-token']);
      const signer = new SignatureV4({
        credentials: AWS,
        region: scope?.[1] ?? '',
        service: scope?.[2] ?? '',
        sha256: Hash.bind(null, 'sha256'),
      });
      const when = new Date(
        `${date.slice(0, 4)}-${date.slice(4, 6)}-${date.slice(6, 8)}T${date.slice(9, 11)}:${date.slice(11, 13)}:${date.slice(13, 15)}Z`,
      );
      const again = await signer.sign(
        {
          method: req.method ?? 'GET',
          protocol: 'https:',
          hostname: String(req.headers.host),
          path: url.pathname,
          query: Object.fromEntries(url.searchParams),
          headers,
          body: echo.body,
        },
        { signingDate: when },
      );
      const ok = again.headers.authorization === auth;
      awsVerdicts.push(`${ok ? 'valid' : 'invalid'} ${scope?.[1]}/${scope?.[2]}`);
      if (!ok) res.writeHead(403).end('signature does not match');
    });
    const jwtRoutes = ALGS.map(
      (alg) => `    - name: jwt-${alg}
      matches: [{path: {pathPrefix: /jwt/${alg}}}]
      backends:
      - host: 127.0.0.1:${up.port}
        policies:
          backendAuth:
            jwtSign:
              alg: ${alg}
              kid: k-${alg}
              ttl: 120s
              claims: {iss: gw, sub: svc, aud: [snowflake], tenant: {id: 7}}
              signingKey: |
                ${indent(keys[alg].privatePem.trim(), 16)}`,
    ).join('\n');
    proxy = await startProxy(
      `binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - name: key
      matches: [{path: {pathPrefix: /key}}]
      policies:
        backendAuth: {key: sekret}
      backends: [{host: "127.0.0.1:${up.port}"}]
    - name: key-header
      matches: [{path: {pathPrefix: /header}}]
      backends:
      - host: 127.0.0.1:${up.port}
        policies:
          backendAuth:
            key: {value: {file: key.txt}, location: {header: {name: x-api-key}}}
    - name: key-query
      matches: [{path: {pathPrefix: /query}}]
      backends:
      - host: 127.0.0.1:${up.port}
        policies:
          backendAuth:
            key: {value: q-key, location: {queryParameter: {name: api_key}}}
    - name: credentials-alone
      matches: [{path: {pathPrefix: /extra/alone}}]
      backends:
      - host: 127.0.0.1:${up.port}
        policies:
          backendAuth:
            credentials:
            - {location: {header: {name: X-Tenant-Key, prefix: "Key "}}, key: {file: key.txt}}
            - {location: {queryParameter: {name: sig}}, key: q-extra}
            - {location: {cookie: {name: session}}, key: "c v"}
    - name: credentials-beside-key
      matches: [{path: {pathPrefix: /extra/key}}]
      backends:
      - host: 127.0.0.1:${up.port}
        policies:
          backendAuth:
            key: main
            credentials:
            - {location: {header: {name: authorization, prefix: "Basic "}}, key: loses}
            - {location: {header: {name: x-org}}, key: org-1}
    - name: headers-form
      matches: [{path: {pathPrefix: /extra/headers}}]
      backends:
      - host: 127.0.0.1:${up.port}
        policies:
          backendAuth:
            key: main
            headers:
            - {name: DD-API-KEY, value: {file: key.txt}}
            - {name: dd-application-key, prefix: "App ", value: app-1}
    - name: credentials-beside-aws
      matches: [{path: {pathPrefix: /aws/extra}}]
      backends:
      - host: 127.0.0.1:${awsUp.port}
        policies:
          backendAuth:
            aws: {accessKeyId: ${AWS.accessKeyId}, secretAccessKey: "${AWS.secretAccessKey}", region: eu-west-1}
            credentials:
            - {location: {queryParameter: {name: tenant}}, key: t-9}
    - name: retried
      matches: [{path: {pathPrefix: /retried}}]
      policies:
        retry: {attempts: 3, codes: [503]}
        backendAuth:
          jwtSign:
            signingKey: |
              ${indent(keys.RS256.privatePem.trim(), 14)}
            claims: {iss: gw}
      backends: [{host: "127.0.0.1:${flaky.port}"}]
    - name: aws-explicit
      matches: [{path: {pathPrefix: /aws/explicit}}]
      backends:
      - host: 127.0.0.1:${awsUp.port}
        policies:
          backendAuth:
            aws: {accessKeyId: ${AWS.accessKeyId}, secretAccessKey: "${AWS.secretAccessKey}", region: eu-west-1, serviceName: execute-api}
    - name: aws-env
      matches: [{path: {pathPrefix: /aws/env}}]
      backends:
      - host: 127.0.0.1:${awsUp.port}
        policies:
          backendAuth:
            aws: {region: us-east-2, serviceName: lambda}
${jwtRoutes}
`,
      dir,
    );
  });

  after(async () => {
    await proxy?.close();
    await Promise.all([up?.close(), flaky?.close(), awsUp?.close()]);
  });

  test("a key replaces the client's Authorization; the trace names the variant, not the key", async () => {
    const traced = proxy.trace();
    const r = await get(proxy, '/key/a', { authorization: 'Bearer the-client-s-own' });
    assert.equal(r.status, 200, r.text);
    assert.equal(JSON.parse(r.text).headers.authorization, 'Bearer sekret');
    const events = await traced;
    const applied = events.find((e) => e.message.type === 'backendAuth');
    assert.equal((applied?.message as { message?: string } | undefined)?.message, 'auth applied: key');
    assert.doesNotMatch(JSON.stringify(events), /sekret/);
  });

  test('a key from a file in a header of its own, or in a query parameter', async () => {
    let r = await get(proxy, '/header', { authorization: 'Bearer kept' });
    const h = JSON.parse(r.text).headers;
    assert.equal(h['x-api-key'], 'from-a-file');
    assert.equal(h.authorization, 'Bearer kept', 'another location leaves Authorization alone');
    r = await get(proxy, '/query?a=1&api_key=client');
    assert.equal(JSON.parse(r.text).url, '/query?a=1&api_key=q-key');
  });

  test('credentials alone: a header with its prefix, a query parameter and a cookie, none in the trace', async () => {
    const traced = proxy.trace();
    const r = await get(proxy, '/extra/alone?sig=client&a=1', {
      authorization: 'Bearer kept',
      cookie: 'session=client; theme=dark',
    });
    assert.equal(r.status, 200, r.text);
    const seen = JSON.parse(r.text);
    assert.equal(seen.headers['x-tenant-key'], 'Key from-a-file');
    assert.equal(seen.headers.authorization, 'Bearer kept', 'no main form: Authorization is left alone');
    assert.equal(seen.url, '/extra/alone?sig=q-extra&a=1');
    assert.equal(seen.headers.cookie, 'theme=dark; session=c%20v');
    const events = await traced;
    const applied = events.find((e) => e.message.type === 'backendAuth');
    assert.equal(
      (applied?.message as { message?: string } | undefined)?.message,
      'auth applied: credentials',
    );
    const shown = JSON.stringify(events);
    assert.doesNotMatch(shown, /from-a-file|q-extra/);
  });

  test('credentials beside a key: both written, the key wins the header both name', async () => {
    const r = await get(proxy, '/extra/key');
    assert.equal(r.status, 200, r.text);
    const h = JSON.parse(r.text).headers;
    assert.equal(h.authorization, 'Bearer main');
    assert.equal(h['x-org'], 'org-1');
  });

  test('headers (the earlier form of credentials): each secret header written beside the key, none in the trace', async () => {
    const traced = proxy.trace();
    const r = await get(proxy, '/extra/headers', { 'dd-api-key': 'client' });
    assert.equal(r.status, 200, r.text);
    const h = JSON.parse(r.text).headers;
    assert.equal(h.authorization, 'Bearer main');
    assert.equal(h['dd-api-key'], 'from-a-file');
    assert.equal(h['dd-application-key'], 'App app-1');
    assert.doesNotMatch(JSON.stringify(await traced), /from-a-file|app-1/);
  });

  test('credentials beside aws: the signature covers the query parameter they add', async () => {
    const r = await get(proxy, '/aws/extra/x?b=2');
    assert.equal(r.status, 200, r.text);
    assert.equal(JSON.parse(r.text).url, '/aws/extra/x?b=2&tenant=t-9');
    assert.equal(awsVerdicts.at(-1), 'valid eu-west-1/execute-api');
  });

  for (const alg of ALGS) {
    test(`jwtSign ${alg}: the upstream verifies the token with the public key`, async () => {
      const r = await get(proxy, `/jwt/${alg}`, { authorization: 'Bearer client' });
      assert.equal(r.status, 200, r.text);
      const token = String(JSON.parse(r.text).headers.authorization).replace(/^Bearer /, '');
      const { payload, protectedHeader } = await jwtVerify(token, keys[alg].publicKey, {
        algorithms: [alg],
        issuer: 'gw',
        audience: 'snowflake',
      });
      assert.equal(protectedHeader.kid, `k-${alg}`);
      assert.equal(payload.sub, 'svc');
      assert.deepEqual(payload.tenant, { id: 7 });
      assert.equal((payload.exp ?? 0) - (payload.iat ?? 0), 120);
      assert.equal(payload.nbf, payload.iat);
    });
  }

  test('each retry attempt is signed again', async () => {
    failNext = 2;
    const before = flaky.seen.length;
    const r = await get(proxy, '/retried', {}, '{"a":1}');
    assert.equal(r.status, 200, r.text);
    const attempts = flaky.seen.slice(before);
    assert.equal(attempts.length, 3);
    for (const a of attempts) {
      const token = String(a.headers.authorization).replace(/^Bearer /, '');
      const { payload } = await jwtVerify(token, keys.RS256.publicKey, { issuer: 'gw' });
      assert.equal((payload.exp ?? 0) - (payload.iat ?? 0), 300, 'default ttl 300s');
    }
  });

  test('aws: SigV4 with configured credentials verifies server-side, body and query included', async () => {
    const r = await get(proxy, '/aws/explicit/items?b=2&a=1', {}, '{"hello":"world"}');
    assert.equal(r.status, 200, r.text);
    assert.equal(awsVerdicts.at(-1), 'valid eu-west-1/execute-api');
    assert.equal(JSON.parse(r.text).body, '{"hello":"world"}', 'the body still reaches the upstream');
  });

  test('aws: credentials from the environment (the default chain), GET without a body', async () => {
    const saved = { ...process.env };
    process.env.AWS_ACCESS_KEY_ID = AWS.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = AWS.secretAccessKey;
    try {
      const r = await get(proxy, '/aws/env/fn');
      assert.equal(r.status, 200, r.text);
      assert.equal(awsVerdicts.at(-1), 'valid us-east-2/lambda');
    } finally {
      process.env = saved;
    }
  });
});

describe('passthrough', () => {
  const API = 'https://gw.test/api';
  const CLIENT = { clientId: 'gw-test', clientSecret: 'gw-test-secret' };
  let up: TestServer;
  let idp: IdentityProvider;
  let proxy: TestProxy;

  before(async () => {
    const { privateKey } = await generateKeyPair('RS256', { extractable: true });
    const key: SigningJwk = {
      ...(await exportJWK(privateKey)),
      kty: 'RSA',
      kid: 'idp-1',
      alg: 'RS256',
      use: 'sig',
    };
    up = await startUpstream();
    idp = await startIdentityProvider({
      keys: [key],
      clients: [{ ...CLIENT, scope: 'api:read' }],
      resources: { [API]: { audience: 'gw-api', scope: 'api:read' } },
    });
    const jwt = `jwtAuth:
          providers:
          - issuer: "${idp.issuer}"
            audiences: [gw-api]
            jwks: {url: "${idp.metadata.jwks_uri}"}`;
    proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - name: forwarded
      matches: [{path: {pathPrefix: /fwd}}]
      policies:
        ${jwt}
        backendAuth: {passthrough: {}}
      backends: [{host: "127.0.0.1:${up.port}"}]
    - name: elsewhere
      matches: [{path: {pathPrefix: /elsewhere}}]
      policies:
        ${jwt}
      backends:
      - host: 127.0.0.1:${up.port}
        policies:
          backendAuth: {passthrough: {location: {header: {name: x-user-token}}}}
`);
  });

  after(async () => {
    await proxy?.close();
    await idp?.close();
    await up?.close();
  });

  test("the client's validated JWT reaches the upstream (jwtAuth alone would remove it)", async () => {
    const token = await idp.token({ ...CLIENT, resource: API, scope: 'api:read' });
    let r = await get(proxy, '/fwd', { authorization: `Bearer ${token}` });
    assert.equal(r.status, 200, r.text);
    assert.equal(JSON.parse(r.text).headers.authorization, `Bearer ${token}`);
    r = await get(proxy, '/elsewhere', { authorization: `Bearer ${token}` });
    const h = JSON.parse(r.text).headers;
    assert.equal(h['x-user-token'], token);
    assert.equal(h.authorization, undefined);
    r = await get(proxy, '/fwd', { authorization: 'Bearer not-a-jwt' });
    assert.equal(r.status, 401);
  });
});

describe('configurations refused at load', () => {
  const rsa = keyPair('RS256').privatePem;
  const issues = (auth: string): string[] => {
    try {
      loadConfigText(
        'gw.yaml',
        `binds:
- port: 8080
  listeners:
  - routes:
    - backends:
      - host: 127.0.0.1:1
        policies:
          backendAuth: ${auth}
`,
        process.cwd(),
        () => undefined,
      );
    } catch (err) {
      assert.ok(err instanceof ConfigError, String(err));
      return err.issues.map((i) => `${i.path}: ${i.message}`);
    }
    assert.fail('accepted');
  };
  const pem = JSON.stringify(rsa);

  test('reserved claims, a key that is not PEM or not for the alg', () => {
    assert.match(
      issues(`{jwtSign: {signingKey: ${pem}, claims: {exp: 1, sub: x}}}`).join('\n'),
      /backendAuth\.jwtSign\.claims\.exp: claim exp is reserved/,
    );
    assert.match(
      issues(
        `{jwtSign: {signingKey: "-----BEGIN PRIVATE KEY-----\\nnope\\n-----END PRIVATE KEY-----"}}`,
      ).join('\n'),
      /backendAuth\.jwtSign\.signingKey: signingKey is not a PEM private key/,
    );
    assert.match(
      issues(`{jwtSign: {signingKey: ${pem}, alg: ES256}}`).join('\n'),
      /signingKey is a key of type rsa; ES256 needs a P-256 EC private key/,
    );
    assert.match(
      issues(`{jwtSign: {signingKey: ${pem}, location: {expression: "'x'"}}}`).join('\n'),
      /cannot be written to an expression/,
    );
  });

  test('credentials: a location that cannot carry one, an empty key and an empty list are refused', () => {
    assert.match(
      issues('{credentials: [{key: x, location: {expression: "\'x\'"}}]}').join('\n'),
      /backendAuth\.credentials\[0\]\.location\.expression: a backend credential cannot be written to an expression/,
    );
    assert.match(
      issues('{key: k, credentials: [{key: "", location: {header: {name: x-a}}}]}').join('\n'),
      /backendAuth\.credentials\[0\]\.key: the key is empty/,
    );
    assert.match(issues('{credentials: []}').join('\n'), /backendAuth/);
    assert.match(
      issues('{credentials: [{key: x, location: {header: {name: "bad header"}}}]}').join('\n'),
      /backendAuth/,
    );
    assert.match(
      issues('{headers: [{name: x-a, value: ""}]}').join('\n'),
      /backendAuth\.headers\[0\]\.value: the value is empty/,
    );
    assert.match(
      issues('{headers: [{name: "bad header", value: v}]}').join('\n'),
      /backendAuth\.headers\[0\]\.name/,
    );
  });

  test('forms this build does not have are refused by name', () => {
    // copilot is built for backends (llm/llm-copilot.test.ts): it loads here
    const { ir } = loadConfigText(
      'gw.yaml',
      'binds:\n- port: 8080\n  listeners:\n  - routes:\n    - backends:\n      - host: 127.0.0.1:1\n        policies: {backendAuth: copilot}\n',
      process.cwd(),
    );
    assert.deepEqual(ir.binds[0]?.listeners[0]?.routes[0]?.backends[0]?.policies.backendAuth, {
      copilot: true,
    });
  });
});
