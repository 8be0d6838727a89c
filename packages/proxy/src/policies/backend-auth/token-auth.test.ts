// backendAuth's token forms against real token sources: oidc-provider (the testkit's identity
// provider) with RFC 8693 token exchange and RFC 7523 jwt-bearer grants for oauthTokenExchange and
// crossAppAccess, google-auth-library against that provider as a workload identity federation STS and
// against a local metadata server (GCE_METADATA_HOST) for an ID token, and @azure/identity's managed
// identity against a local App Service identity endpoint (IDENTITY_ENDPOINT). Upstreams see the token;
// the trace names the form, never the token; a failing token source is a 502 naming the form.
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConfigError } from '@gw/api';
import {
  type GrantRequest,
  type IdentityProvider,
  type SigningJwk,
  startIdentityProvider,
  startUpstream,
  type TestServer,
} from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { tempDir } from '@gw/testkit/temp-dir';
import { createLocalJWKSet, exportJWK, generateKeyPair, jwtVerify, SignJWT } from 'jose';
import { request } from 'undici';
import { loadConfigText } from '../../config/load.ts';

const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
const ID_JAG = 'urn:ietf:params:oauth:token-type:id-jag';
const EXCHANGE_PARAMS = [
  'subject_token',
  'subject_token_type',
  'actor_token',
  'actor_token_type',
  'requested_token_type',
  'audience',
  'resource',
  'scope',
  'tenant',
];

async function signingKey(
  kid: string,
): Promise<{ jwk: SigningJwk; jwks: { keys: Record<string, unknown>[] } }> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' } as SigningJwk;
  return { jwk, jwks: { keys: [{ ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' }] } };
}

const claimsOf = (jwt: string) =>
  JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString()) as Record<string, unknown>;

async function get(proxy: TestProxy, path: string, headers: Record<string, string> = {}) {
  const r = await request(proxy.url(path), { headers });
  return { status: r.statusCode, text: await r.body.text() };
}
const bearerAt = (text: string) =>
  String(JSON.parse(text).headers.authorization ?? '').replace(/^Bearer /, '');

describe('oauthTokenExchange and crossAppAccess against oidc-provider', () => {
  let sts: IdentityProvider;
  let idp: IdentityProvider;
  let ras: IdentityProvider;
  let up: TestServer;
  let proxy: TestProxy;
  // the user's tokens, signed by "their" issuer: the authorization servers trust this key
  const gwKey = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const userToken = (sub: string, extra: Record<string, unknown> = {}) =>
    new SignJWT({ sub, ...extra })
      .setProtectedHeader({ alg: 'RS256', kid: 'user' })
      .setIssuer('https://users.example')
      .setExpirationTime('5m')
      .sign(gwKey.privateKey);
  const verifyUser = async (token: unknown) => {
    const jwks = { keys: [{ ...gwKey.publicKey.export({ format: 'jwk' }), kid: 'user', alg: 'RS256' }] };
    return (await jwtVerify(String(token), createLocalJWKSet(jwks as never))).payload;
  };
  let ttl = 60;
  const dir = tempDir('gw-token-auth-');

  before(async () => {
    const stsKey = await signingKey('sts');
    const gwClient = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const gwClientJwk = { ...gwClient.publicKey.export({ format: 'jwk' }), kid: 'gw-client', alg: 'RS256' };
    writeFileSync(
      join(dir, 'client.pem'),
      gwClient.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    );
    // RFC 8693 at a real authorization server: the subject token must verify, the answer is the
    // provider's own JWT for the audience, with the subject and the request's parameters in it
    sts = await startIdentityProvider({
      keys: [stsKey.jwk],
      clients: [
        { clientId: 'gw', clientSecret: 'gw-secret', grantTypes: [TOKEN_EXCHANGE, JWT_BEARER] },
        {
          clientId: 'gw-post',
          clientSecret: 'post-secret',
          tokenEndpointAuthMethod: 'client_secret_post',
          grantTypes: [TOKEN_EXCHANGE],
        },
        { clientId: 'gw-pkjwt', jwks: { keys: [gwClientJwk] }, grantTypes: [TOKEN_EXCHANGE] },
      ],
      resources: {},
      grants: {
        [TOKEN_EXCHANGE]: {
          params: EXCHANGE_PARAMS,
          repeated: ['audience', 'resource'],
          async handle(req: GrantRequest) {
            let subject: Record<string, unknown>;
            try {
              subject = await verifyUser(req.params.subject_token);
            } catch {
              return { error: 'invalid_grant', error_description: 'the subject token does not verify' };
            }
            const token = await req.sign(
              {
                sub: subject.sub,
                aud: req.params.audience,
                client_id: req.clientId,
                subject_token_type: req.params.subject_token_type,
                ...(req.params.scope ? { scope: req.params.scope } : {}),
                ...(req.params.tenant ? { tenant: req.params.tenant } : {}),
                ...(req.params.actor_token
                  ? { act: { sub: claimsOf(String(req.params.actor_token)).sub } }
                  : {}),
              },
              ttl,
            );
            return {
              access_token: token,
              issued_token_type: 'urn:ietf:params:oauth:token-type:access_token',
              token_type: 'Bearer',
              expires_in: ttl,
            };
          },
        },
        [JWT_BEARER]: {
          params: ['assertion', 'scope'],
          async handle(req) {
            const subject = await verifyUser(req.params.assertion).catch(() => undefined);
            if (!subject) return { error: 'invalid_grant' };
            return {
              access_token: await req.sign({ sub: subject.sub, grant: 'jwt-bearer' }, 60),
              token_type: 'Bearer',
            };
          },
        },
      },
    });
    // cross-app access: the IdP issues an ID-JAG for the resource authorization server, which checks
    // it against the IdP's keys and audience and issues its own access token
    const idpKey = await signingKey('idp');
    idp = await startIdentityProvider({
      keys: [idpKey.jwk],
      clients: [{ clientId: 'agent', clientSecret: 'agent-secret', grantTypes: [TOKEN_EXCHANGE] }],
      resources: {},
      grants: {
        [TOKEN_EXCHANGE]: {
          params: EXCHANGE_PARAMS,
          repeated: ['audience', 'resource'],
          async handle(req) {
            if (req.params.requested_token_type !== ID_JAG) return { error: 'invalid_request' };
            const subject = await verifyUser(req.params.subject_token).catch(() => undefined);
            if (!subject) return { error: 'invalid_grant' };
            const jag = await req.sign(
              {
                sub: subject.sub,
                aud: req.params.audience,
                client_id: req.clientId,
                ...(req.params.resource ? { resource: req.params.resource } : {}),
                ...(req.params.scope ? { scope: req.params.scope } : {}),
              },
              300,
              'oauth-id-jag+jwt',
            );
            return { access_token: jag, issued_token_type: ID_JAG, token_type: 'N_A', expires_in: 300 };
          },
        },
      },
    });
    const rasKey = await signingKey('ras');
    ras = await startIdentityProvider({
      keys: [rasKey.jwk],
      clients: [{ clientId: 'agent-at-ras', clientSecret: 'ras-secret', grantTypes: [JWT_BEARER] }],
      resources: {},
      grants: {
        [JWT_BEARER]: {
          params: ['assertion', 'scope', 'resource'],
          async handle(req) {
            try {
              const { payload, protectedHeader } = await jwtVerify(
                String(req.params.assertion),
                createLocalJWKSet(idpKey.jwks as never),
                { issuer: idp.issuer, audience: ras.issuer },
              );
              if (protectedHeader.typ !== 'oauth-id-jag+jwt') return { error: 'invalid_grant' };
              return {
                access_token: await req.sign(
                  { sub: payload.sub, aud: 'https://api.example', scope: req.params.scope ?? '' },
                  120,
                ),
                token_type: 'Bearer',
                expires_in: 120,
              };
            } catch {
              return { error: 'invalid_grant', error_description: 'the ID-JAG does not verify' };
            }
          },
        },
      },
    });
    up = await startUpstream('up');
    const host = (p: IdentityProvider) => `127.0.0.1:${p.port}`;
    /** A route to the upstream whose backend authenticates by `auth` (backendAuth's YAML). */
    const route = (name: string, path: string, auth: string) => `
    - name: ${name}
      matches: [{path: {pathPrefix: ${path}}}]
      backends:
      - host: 127.0.0.1:${up.port}
        policies:
          backendAuth:
            ${auth}`;
    proxy = await startProxy(
      `binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:${route(
    'exchange',
    '/exchange',
    `oauthTokenExchange:
              host: ${host(sts)}
              path: /token
              clientAuth: {clientId: gw, clientSecret: gw-secret}
              audiences: [https://api.example]
              scopes: [read, write]
              additionalParams: {tenant: 'request.headers["x-tenant"]'}`,
  )}${route(
    'exchange-actor',
    '/actor',
    `oauthTokenExchange:
              host: ${host(sts)}
              path: /token
              clientAuth: {method: clientSecretPost, clientId: gw-post, clientSecret: post-secret}
              subjectToken: {source: {header: {name: x-user-token}}, tokenType: urn:ietf:params:oauth:token-type:jwt}
              actorToken: {source: {header: {name: x-agent-token}}}
              audiences: [https://api.example]
              authorizationLocation: {header: {name: x-upstream-token}}`,
  )}${route(
    'exchange-may-act',
    '/may-act',
    `oauthTokenExchange:
              host: ${host(sts)}
              path: /token
              clientAuth: {method: clientSecretPost, clientId: gw-post, clientSecret: post-secret}
              subjectToken: {source: {header: {name: x-user-token}}, tokenType: urn:ietf:params:oauth:token-type:jwt}
              actorToken: {source: {header: {name: x-agent-token}}, enforceMayAct: true}
              audiences: [https://api.example]
              cache: {maxEntries: 0}`,
  )}${route(
    'exchange-pkjwt',
    '/pkjwt',
    `oauthTokenExchange:
              host: ${host(sts)}
              path: /token
              clientAuth: {method: privateKeyJwt, clientId: gw-pkjwt, signingKey: {file: client.pem}, kid: gw-client, assertionAudience: "${sts.issuer}/token"}
              audiences: [https://pk.example]`,
  )}${route(
    'jwt-bearer',
    '/bearer',
    `oauthTokenExchange:
              host: ${host(sts)}
              path: /token
              grantType: jwtBearer
              clientAuth: {clientId: gw, clientSecret: gw-secret}
              cache: {maxEntries: 0}`,
  )}${route('down', '/down', `oauthTokenExchange: {host: "127.0.0.1:1", path: /token}`)}${route(
    'xaa',
    '/xaa',
    `crossAppAccess:
              identityProvider: {host: ${host(idp)}, path: /token, clientAuth: {clientId: agent, clientSecret: agent-secret}}
              resourceAuthorizationServer: {host: ${host(ras)}, path: /token, clientAuth: {clientId: agent-at-ras, clientSecret: ras-secret}}
              audience: ${ras.issuer}
              resources: [https://api.example]
              scopes: [calendar.read]`,
  )}${route(
    'exchange-by-service',
    '/by-service',
    `oauthTokenExchange:
              service: {name: auth/sts.auth, port: 8443}
              path: /token
              clientAuth: {clientId: gw, clientSecret: gw-secret}
              audiences: [https://svc.example]`,
  )}${route(
    'exchange-by-backend',
    '/by-backend',
    `oauthTokenExchange:
              backend: sts
              path: /token
              clientAuth: {clientId: gw, clientSecret: gw-secret}
              audiences: [https://named.example]`,
  )}${route(
    'xaa-form',
    '/xaa-form',
    `xaa:
              idp: {host: ${host(idp)}, tokenEndpointPath: /token, clientAuth: {clientId: agent, clientSecret: agent-secret}}
              resourceAs: {host: ${host(ras)}, tokenEndpointPath: /token, clientAuth: {clientId: agent-at-ras, clientSecret: ras-secret}}
              audience: ${ras.issuer}
              resources: [https://api.example]
              scopes: [calendar.read]`,
  )}${route(
    'oauth-form',
    '/oauth-form',
    `oauth:
              tokenEndpoint: {backend: sts}
              tokenEndpointPath: /token
              clientAuth: {clientId: gw, clientSecret: gw-secret}
              audiences: [https://oauth-form.example]
              scopes: [read]`,
  )}
services:
- {name: sts, namespace: auth, hostname: sts.auth, vips: [], ports: {"8443": ${sts.port}}}
workloads:
- {name: sts-0, namespace: auth, workloadIps: [127.0.0.1], services: {"auth/sts.auth": {}}}
backends:
- {name: sts, host: "${host(sts)}"}
`,
      dir,
    );
  });
  after(async () => {
    await proxy?.close();
    await Promise.all([sts?.close(), idp?.close(), ras?.close(), up?.close()]);
  });

  test('the exchanged token reaches the upstream; one exchange per subject while it is fresh', async () => {
    const before = sts.grantRequests.length;
    const alice = await userToken('alice');
    const traced = proxy.trace();
    const r = await get(proxy, '/exchange', { authorization: `Bearer ${alice}`, 'x-tenant': 't1' });
    assert.equal(r.status, 200, r.text);
    const token = bearerAt(r.text);
    const { payload } = await jwtVerify(
      token,
      createLocalJWKSet((await (await fetch(sts.metadata.jwks_uri)).json()) as never),
      {
        issuer: sts.issuer,
        audience: 'https://api.example',
      },
    );
    assert.equal(payload.sub, 'alice');
    assert.equal(payload.client_id, 'gw');
    assert.equal(payload.scope, 'read write');
    assert.equal(payload.tenant, 't1');
    assert.equal(payload.subject_token_type, 'urn:ietf:params:oauth:token-type:access_token');
    const events = await traced;
    const step = events.find((e) => e.message.type === 'backendAuth')?.message as
      | { message?: string }
      | undefined;
    assert.equal(step?.message, 'auth applied: oauthTokenExchange (tokenExchange)');
    assert.doesNotMatch(JSON.stringify(events), new RegExp(token.slice(-20)));

    // the same subject: cached; another subject: exchanged
    const again = await get(proxy, '/exchange', { authorization: `Bearer ${alice}`, 'x-tenant': 't1' });
    assert.equal(bearerAt(again.text), token);
    const bob = await get(proxy, '/exchange', {
      authorization: `Bearer ${await userToken('bob')}`,
      'x-tenant': 't1',
    });
    assert.equal(claimsOf(bearerAt(bob.text)).sub, 'bob');
    assert.equal(sts.grantRequests.length - before, 2);
  });

  test('a token near expiry is refreshed in the background, the old one served meanwhile', async (t) => {
    ttl = 3;
    // The cache ages tokens by Date.now(): a mocked Date, moved on by hand, puts the second request
    // at 2.5 s of the token's 3 s (past 80%, before the last 10%) however slow the machine is.
    t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
    try {
      const carol = `Bearer ${await userToken('carol')}`;
      const before = sts.grantRequests.length;
      const first = bearerAt((await get(proxy, '/exchange', { authorization: carol, 'x-tenant': 'r' })).text);
      t.mock.timers.tick(2_500);
      const during = bearerAt(
        (await get(proxy, '/exchange', { authorization: carol, 'x-tenant': 'r' })).text,
      );
      assert.equal(during, first);
      // the refresh runs after the answer: wait for it to reach the token endpoint and come back
      for (let i = 0; i < 250 && sts.grantRequests.length - before < 2; i++) await sleep(20);
      assert.equal(sts.grantRequests.length - before, 2, 'refreshed once in the background');
      let next = first;
      for (let i = 0; i < 250 && next === first; i++) {
        next = bearerAt((await get(proxy, '/exchange', { authorization: carol, 'x-tenant': 'r' })).text);
        if (next === first) await sleep(20);
      }
      assert.notEqual(next, first);
      assert.equal(sts.grantRequests.length - before, 2);
    } finally {
      t.mock.timers.reset();
      ttl = 60;
    }
  });

  test('actor token, client_secret_post, a token type and a location of their own', async () => {
    const r = await get(proxy, '/actor', {
      'x-user-token': await userToken('dave'),
      'x-agent-token': await userToken('agent-7'),
    });
    assert.equal(r.status, 200, r.text);
    const h = JSON.parse(r.text).headers;
    const c = claimsOf(String(h['x-upstream-token']));
    assert.equal(c.sub, 'dave');
    assert.deepEqual(c.act, { sub: 'agent-7' });
    assert.equal(c.client_id, 'gw-post');
    assert.equal(c.subject_token_type, 'urn:ietf:params:oauth:token-type:jwt');
    const last = sts.grantRequests.at(-1);
    assert.equal(last?.params.actor_token_type, 'urn:ietf:params:oauth:token-type:access_token');
  });

  test("enforceMayAct: only the actor the subject token's may_act names is exchanged for", async () => {
    const before = sts.grantRequests.length;
    const ask = async (subject: string, actor?: string) =>
      get(proxy, '/may-act', {
        'x-user-token': subject,
        ...(actor !== undefined ? { 'x-agent-token': actor } : {}),
      });
    const named = await userToken('gil', { may_act: { sub: 'agent-1' } });
    const ok = await ask(named, await userToken('agent-1'));
    assert.equal(ok.status, 200, ok.text);
    assert.deepEqual(claimsOf(bearerAt(ok.text)).act, { sub: 'agent-1' });
    assert.equal(sts.grantRequests.length, before + 1);
    // another actor, a subject that names none, no actor, a may_act with an issuer it lacks: 403,
    // and the token endpoint is not asked
    for (const [subject, actor, why] of [
      [named, await userToken('agent-2'), /actor token's subject is not the one/],
      [await userToken('gil'), await userToken('agent-1'), /no may_act claim/],
      [named, undefined, /no actor token/],
      [
        await userToken('gil', { may_act: { sub: 'agent-1', iss: 'https://elsewhere' } }),
        await userToken('agent-1'),
        /not the one/,
      ],
      [named, 'opaque-token', /actor token is not a JWT/],
    ] as const) {
      const r = await ask(subject, actor);
      assert.equal(r.status, 403, r.text);
      assert.match(r.text, why);
    }
    assert.equal(sts.grantRequests.length, before + 1);
  });

  test('privateKeyJwt client authentication is accepted by the server', async () => {
    const r = await get(proxy, '/pkjwt', { authorization: `Bearer ${await userToken('erin')}` });
    assert.equal(r.status, 200, r.text);
    assert.equal(claimsOf(bearerAt(r.text)).client_id, 'gw-pkjwt');
  });

  test('jwtBearer grant with the cache off: every request asks', async () => {
    const before = sts.grantRequests.length;
    const t = `Bearer ${await userToken('fay')}`;
    for (let i = 0; i < 2; i++) {
      const r = await get(proxy, '/bearer', { authorization: t });
      assert.equal(r.status, 200, r.text);
      assert.equal(claimsOf(bearerAt(r.text)).grant, 'jwt-bearer');
    }
    assert.equal(sts.grantRequests.length - before, 2);
    assert.equal(sts.grantRequests.at(-1)?.grantType, JWT_BEARER);
  });

  test('failures: no subject token 401, refused or unreachable token endpoint 502 naming the form', async () => {
    let r = await get(proxy, '/exchange');
    assert.equal(r.status, 401);
    assert.match(r.text, /backendAuth oauthTokenExchange: the request has no subject token/);
    const forged = await new SignJWT({ sub: 'mallory' })
      .setProtectedHeader({ alg: 'RS256' })
      .sign(generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey);
    r = await get(proxy, '/exchange', { authorization: `Bearer ${forged}` });
    assert.equal(r.status, 502);
    assert.match(
      r.text,
      /backendAuth oauthTokenExchange: token endpoint http:\/\/127\.0\.0\.1:\d+\/token answered 400 invalid_grant/,
    );
    assert.doesNotMatch(r.text, /gw-secret|eyJ/);
    r = await get(proxy, '/down', { authorization: `Bearer ${await userToken('gus')}` });
    assert.equal(r.status, 502);
    assert.match(
      r.text,
      /backendAuth oauthTokenExchange: token endpoint http:\/\/127\.0\.0\.1:1\/token failed: ECONNREFUSED/,
    );
  });

  test('the token endpoint as a Service of services or a named host backend', async () => {
    for (const [path, audience] of [
      ['/by-service', 'https://svc.example'],
      ['/by-backend', 'https://named.example'],
    ] as const) {
      const r = await get(proxy, path, { authorization: `Bearer ${await userToken('dora')}` });
      assert.equal(r.status, 200, `${path}: ${r.text}`);
      const claims = claimsOf(bearerAt(r.text));
      assert.equal(claims.sub, 'dora');
      assert.equal(claims.aud, audience);
    }
  });

  test("agentgateway's newer oauth form (the endpoint under tokenEndpoint) exchanges as oauthTokenExchange", async () => {
    const before = sts.grantRequests.length;
    const r = await get(proxy, '/oauth-form', { authorization: `Bearer ${await userToken('erin')}` });
    assert.equal(r.status, 200, r.text);
    const claims = claimsOf(bearerAt(r.text));
    assert.equal(claims.sub, 'erin');
    assert.equal(claims.aud, 'https://oauth-form.example');
    assert.equal(sts.grantRequests.length, before + 1, 'one exchange at the token endpoint');
  });

  test('crossAppAccess: ID-JAG from the identity provider, access token from the resource server, cached', async () => {
    const beforeIdp = idp.grantRequests.length;
    const beforeRas = ras.grantRequests.length;
    const id = `Bearer ${await userToken('hana')}`;
    const traced = proxy.trace();
    const r = await get(proxy, '/xaa', { authorization: id });
    assert.equal(r.status, 200, r.text);
    const c = claimsOf(bearerAt(r.text));
    assert.equal(c.iss, ras.issuer);
    assert.equal(c.sub, 'hana');
    assert.equal(c.scope, 'calendar.read');
    const asked = idp.grantRequests.at(-1);
    assert.equal(asked?.params.audience, ras.issuer);
    assert.equal(asked?.params.subject_token_type, 'urn:ietf:params:oauth:token-type:id_token');
    assert.equal(asked?.params.resource, 'https://api.example');
    const step = (await traced).find((e) => e.message.type === 'backendAuth')?.message as {
      message?: string;
    };
    assert.equal(step?.message, 'auth applied: crossAppAccess');
    await get(proxy, '/xaa', { authorization: id });
    assert.equal(idp.grantRequests.length - beforeIdp, 1);
    assert.equal(ras.grantRequests.length - beforeRas, 1);
  });

  test("agentgateway's newer xaa form (idp, resourceAs, tokenEndpointPath) is crossAppAccess", async () => {
    const beforeIdp = idp.grantRequests.length;
    const r = await get(proxy, '/xaa-form', { authorization: `Bearer ${await userToken('ines')}` });
    assert.equal(r.status, 200, r.text);
    const c = claimsOf(bearerAt(r.text));
    assert.equal(c.iss, ras.issuer);
    assert.equal(c.sub, 'ines');
    assert.equal(idp.grantRequests.length - beforeIdp, 1);
    assert.equal(idp.grantRequests.at(-1)?.params.audience, ras.issuer);
  });
});

describe('gcp and azure through their SDKs', () => {
  let sts: IdentityProvider;
  let metadata: http.Server;
  let identity: http.Server;
  let up: TestServer;
  let proxy: TestProxy;
  const metadataAsks: string[] = [];
  const identityAsks: { resource: string | null; secret: string | undefined }[] = [];
  const saved = { ...process.env };

  const listen = async (s: http.Server) => {
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    return (s.address() as AddressInfo).port;
  };

  before(async () => {
    const dir = tempDir('gw-cloud-auth-');
    const subjectKey = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const subject = await new SignJWT({ sub: 'workload-1' })
      .setProtectedHeader({ alg: 'RS256' })
      .setIssuer('https://k8s.example')
      .setExpirationTime('1h')
      .sign(subjectKey.privateKey);
    writeFileSync(join(dir, 'subject.jwt'), subject);
    // the STS of workload identity federation is RFC 8693: oidc-provider with the exchange grant
    sts = await startIdentityProvider({
      keys: [(await signingKey('sts')).jwk],
      clients: [{ clientId: 'wif', clientSecret: 'wif-secret', grantTypes: [TOKEN_EXCHANGE] }],
      resources: {},
      grants: {
        [TOKEN_EXCHANGE]: {
          params: EXCHANGE_PARAMS,
          repeated: ['audience', 'resource'],
          async handle(req) {
            const { payload } = await jwtVerify(String(req.params.subject_token), subjectKey.publicKey).catch(
              () => ({
                payload: undefined,
              }),
            );
            if (!payload) return { error: 'invalid_grant' };
            return {
              access_token: `ya29.${randomUUID()}`,
              issued_token_type: 'urn:ietf:params:oauth:token-type:access_token',
              token_type: 'Bearer',
              expires_in: 3600,
              ...(req.params.scope ? { scope: String(req.params.scope) } : {}),
            };
          },
        },
      },
    });
    // the GCE metadata server's identity document (ID tokens for an audience)
    metadata = http.createServer((req, res) => {
      metadataAsks.push(req.url ?? '');
      res.setHeader('metadata-flavor', 'Google');
      const url = new URL(req.url ?? '/', 'http://x');
      if (req.headers['metadata-flavor'] !== 'Google') return res.writeHead(403).end();
      if (url.pathname.endsWith('/service-accounts/default/identity')) {
        const aud = url.searchParams.get('audience');
        const now = Math.floor(Date.now() / 1000);
        const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
        return res.end(
          `${b64({ alg: 'RS256' })}.${b64({ aud, iss: 'https://accounts.google.com', exp: now + 3600 })}.sig`,
        );
      }
      res.end('');
    });
    const metadataPort = await listen(metadata);
    // Azure App Service's managed identity endpoint
    identity = http.createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      identityAsks.push({
        resource: url.searchParams.get('resource'),
        secret: req.headers['x-identity-header'] as string,
      });
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          access_token: `az-${randomUUID()}`,
          expires_on: String(Math.floor(Date.now() / 1000) + 3600),
          resource: url.searchParams.get('resource'),
          token_type: 'Bearer',
        }),
      );
    });
    const identityPort = await listen(identity);
    process.env.GCE_METADATA_HOST = `127.0.0.1:${metadataPort}`;
    process.env.IDENTITY_ENDPOINT = `http://127.0.0.1:${identityPort}/msi/token`;
    process.env.IDENTITY_HEADER = 'identity-header-value';
    process.env.GOOGLE_APPLICATION_CREDENTIALS = join(dir, 'none.json');
    delete process.env.GOOGLE_APPLICATION_CREDENTIALS;
    const external = (tokenUrl: string) =>
      JSON.stringify({
        type: 'external_account',
        audience: '//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/providers/k8s',
        subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
        token_url: tokenUrl,
        client_id: 'wif',
        client_secret: 'wif-secret',
        credential_source: { file: join(dir, 'subject.jwt') },
      });
    writeFileSync(join(dir, 'wif.json'), external(`${sts.issuer}/token`));
    writeFileSync(join(dir, 'broken.json'), external('http://127.0.0.1:1/token'));
    up = await startUpstream('up');
    proxy = await startProxy(
      `binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - name: gcp-access
      matches: [{path: {pathPrefix: /gcp/access}}]
      backends:
      - host: 127.0.0.1:${up.port}
        policies:
          backendAuth: {gcp: {credential: {file: wif.json}}}
    - name: gcp-id
      matches: [{path: {pathPrefix: /gcp/id}}]
      backends:
      - host: 127.0.0.1:${up.port}
        policies:
          backendAuth: {gcp: {type: idToken, audience: https://run.example}}
    - name: gcp-broken
      matches: [{path: {pathPrefix: /gcp/broken}}]
      backends:
      - host: 127.0.0.1:${up.port}
        policies:
          backendAuth: {gcp: {credential: {file: broken.json}}}
    - name: azure
      matches: [{path: {pathPrefix: /azure}}]
      backends:
      - host: 127.0.0.1:${up.port}
        policies:
          backendAuth: {azure: {explicitConfig: {managedIdentity: {}}}}
    - name: azure-scoped
      matches: [{path: {pathPrefix: /scoped/azure}}]
      backends:
      - host: 127.0.0.1:${up.port}
        policies:
          backendAuth: {azure: {explicitConfig: {managedIdentity: {}}, scopes: ["https://ai.azure.com/.default"]}}
`,
      dir,
    );
  });

  after(async () => {
    await proxy?.close();
    await Promise.all([sts?.close(), up?.close()]);
    metadata?.close();
    identity?.close();
    for (const k of [
      'GCE_METADATA_HOST',
      'IDENTITY_ENDPOINT',
      'IDENTITY_HEADER',
      'GOOGLE_APPLICATION_CREDENTIALS',
    ])
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
  });

  test('gcp accessToken: the external account credential exchanged at the STS, fetched once', async () => {
    const before = sts.grantRequests.length;
    const traced = proxy.trace();
    const r = await get(proxy, '/gcp/access', { authorization: 'Bearer client-own' });
    assert.equal(r.status, 200, r.text);
    const token = bearerAt(r.text);
    assert.match(token, /^ya29\./);
    const asked = sts.grantRequests.at(-1);
    assert.equal(asked?.params.subject_token_type, 'urn:ietf:params:oauth:token-type:jwt');
    assert.equal(asked?.params.scope, 'https://www.googleapis.com/auth/cloud-platform');
    const step = (await traced).find((e) => e.message.type === 'backendAuth')?.message as {
      message?: string;
    };
    assert.equal(step?.message, 'auth applied: gcp (accessToken)');
    assert.equal(bearerAt((await get(proxy, '/gcp/access')).text), token);
    assert.equal(sts.grantRequests.length - before, 1);
  });

  test('gcp idToken from the metadata server, for the configured audience', async () => {
    const r = await get(proxy, '/gcp/id');
    assert.equal(r.status, 200, r.text);
    assert.equal(claimsOf(bearerAt(r.text)).aud, 'https://run.example');
    assert.ok(
      metadataAsks.some((u) => /\/identity\?.*audience=https:\/\/run\.example/.test(u)),
      metadataAsks.join(),
    );
  });

  test('gcp: a token source that fails is a 502 naming the form', async () => {
    const r = await get(proxy, '/gcp/broken');
    assert.equal(r.status, 502);
    assert.match(r.text, /backendAuth gcp accessToken: no token/);
  });

  test('azure managed identity: the identity endpoint asked once for the Cognitive Services scope', async () => {
    const traced = proxy.trace();
    const r = await get(proxy, '/azure');
    assert.equal(r.status, 200, r.text);
    const token = bearerAt(r.text);
    assert.match(token, /^az-/);
    assert.deepEqual(identityAsks, [
      { resource: 'https://cognitiveservices.azure.com', secret: 'identity-header-value' },
    ]);
    const events = await traced;
    const step = events.find((e) => e.message.type === 'backendAuth')?.message as { message?: string };
    assert.equal(step?.message, 'auth applied: azure (managedIdentity)');
    assert.doesNotMatch(JSON.stringify(events), new RegExp(token));
    assert.equal(bearerAt((await get(proxy, '/azure')).text), token);
    assert.equal(identityAsks.length, 1);
  });

  test("azure scopes (agentgateway's): the token is asked for the scope given", async () => {
    const r = await get(proxy, '/scoped/azure');
    assert.equal(r.status, 200, r.text);
    assert.equal(identityAsks.at(-1)?.resource, 'https://ai.azure.com');
  });
});

describe('token forms refused at load', () => {
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

  test('azure scope and scopes, not both', () => {
    assert.match(
      issues('{azure: {implicit: {}, scope: a, scopes: [b]}}').join('\n'),
      /backendAuth\.azure(\.scopes)?: set scope or scopes, not both/,
    );
  });

  test('fields named on bad input', () => {
    assert.match(
      issues('{gcp: {type: accessToken, audience: x}}').join('\n'),
      /gcp\.audience: audience is only valid with type idToken/,
    );
    assert.match(
      issues('{gcp: {credential: "{}"}}').join('\n'),
      /gcp\.credential: not a Google credential JSON/,
    );
    assert.match(
      issues('{oauthTokenExchange: {path: /token}}').join('\n'),
      /oauthTokenExchange\.host: set host/,
    );
    assert.match(
      issues('{oauthTokenExchange: {host: "a:1", authorizationLocation: {expression: "1"}}}').join('\n'),
      /oauthTokenExchange\.authorizationLocation\.expression: a backend credential cannot be written to an expression/,
    );
    assert.match(
      issues('{oauthTokenExchange: {host: "a:1", service: {name: x/y, port: 1}}}').join('\n'),
      /oauthTokenExchange\.service: set one of host, backend and service, not host and service/,
    );
    assert.match(
      issues('{oauthTokenExchange: {service: {name: x/y, port: 1}}}').join('\n'),
      /oauthTokenExchange\.service\.name: no service "x\/y" in services \(there are none\)/,
    );
    assert.match(
      issues('{oauthTokenExchange: {backend: nope}}').join('\n'),
      /oauthTokenExchange\.backend: no backend named "nope"/,
    );
    assert.match(
      issues(
        '{crossAppAccess: {identityProvider: {host: "a:1"}, resourceAuthorizationServer: {host: "b:1", clientAuth: {clientId: c, clientSecret: s}}, audience: x}}',
      ).join('\n'),
      /crossAppAccess\.identityProvider\.clientAuth/,
    );
    assert.match(issues('{azure: {explicitConfig: {nope: {}}}}').join('\n'), /backendAuth\.azure/);
  });
});
