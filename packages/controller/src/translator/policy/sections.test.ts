// GwPolicy / GwBackend policy sections → standalone policy shapes. Each case builds its input through
// the CRD schema (validateResource, so defaults are applied as the API server would), translates it
// against an in-memory snapshot and checks the output twice: against the expected standalone object,
// and against the standalone zod schema the proxy validates it with.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import { BackendPolicies, FrontendPolicies, TrafficPolicies } from '@gw/api';
import { validateResource } from '@gw/api/crd/crds';
import type { GwBackendSpec } from '@gw/api/crd/gwbackend';
import type { GwPolicySpec } from '@gw/api/crd/gwpolicy';
import { inMemoryLookup } from '../lookup.ts';
import type { KubeObject } from '../types.ts';
import { backendPolicy } from './backend.ts';
import { DENY_ALL, EMPTY_JWKS } from './context.ts';
import { frontendPolicy } from './frontend.ts';
import { trafficPolicy } from './traffic.ts';

const NS = 'apps';
const TARGET = { targetRefs: [{ group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'gw' }] };

function validated(kind: 'GwPolicy' | 'GwBackend', spec: Record<string, unknown>): unknown {
  const r = validateResource({
    apiVersion: 'gw.dev/v1alpha1',
    kind,
    metadata: { name: 'x', namespace: NS },
    spec,
  });
  if (!r.ok) assert.fail(`invalid ${kind}: ${JSON.stringify(r.errors)}`);
  return r.spec;
}
const trafficSpec = (traffic: Record<string, unknown>) =>
  (validated('GwPolicy', { ...TARGET, traffic }) as GwPolicySpec).traffic!;
const backendSpec = (backend: Record<string, unknown>) =>
  (validated('GwPolicy', { ...TARGET, backend }) as GwPolicySpec).backend!;
const frontendSpec = (frontend: Record<string, unknown>) =>
  (validated('GwPolicy', { ...TARGET, frontend }) as GwPolicySpec).frontend!;

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
function secret(name: string, data: Record<string, string>, labels?: Record<string, string>): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: NS, ...(labels ? { labels } : {}) },
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
  };
}
function configMap(name: string, data: Record<string, string>, labels?: Record<string, string>): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace: NS, ...(labels ? { labels } : {}) },
    data,
  };
}
function service(name: string, ports: { port: number; appProtocol?: string }[], namespace = NS): KubeObject {
  return { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace }, spec: { ports } };
}

/** Translates spec.traffic and checks the output against `expected` and the standalone schema. */
function traffic(
  spec: Record<string, unknown>,
  objects: KubeObject[],
  expected: unknown,
  problems: string[] = [],
) {
  const r = trafficPolicy(trafficSpec(spec), NS, inMemoryLookup(objects));
  assert.deepEqual(r.policies, expected);
  const parsed = TrafficPolicies.safeParse(r.policies);
  assert.ok(parsed.success, `not a valid TrafficPolicies: ${parsed.error?.message}`);
  assert.deepEqual(r.problems, problems);
  return r;
}

const SHA_ALICE = 'alice:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=';
const SHA_BOB = 'bob:{SHA}fEqNCco3Yq9h5ZUglD3CZJT4lBs=';
const PEM_CERT = '-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n';
const PEM_CA = '-----BEGIN CERTIFICATE-----\nMIIBca\n-----END CERTIFICATE-----\n';
const PEM_KEY = '-----BEGIN PRIVATE KEY-----\nMIIEkey\n-----END PRIVATE KEY-----\n';
const hash = (k: string) => `sha256:${createHash('sha256').update(k).digest('hex')}`;
const denyAll = { action: 'Deny', policy: { matchExpressions: ['true'] } };

describe('traffic: direct mappings', () => {
  const cases: [string, Record<string, unknown>, unknown][] = [
    [
      'timeouts → timeout',
      { timeouts: { request: '10s', backendRequest: '2s' } },
      { timeout: { requestTimeout: '10s', backendRequestTimeout: '2s' } },
    ],
    [
      'retry (attempts defaulted)',
      { retry: { codes: [502, 503], backoff: '100ms' } },
      { retry: { attempts: 1, backoff: '100ms', codes: [502, 503] } },
    ],
    [
      'retry without codes (agentgateway writes it so): failed connections and resets only',
      { retry: { attempts: 3, backoff: '200ms' } },
      { retry: { attempts: 3, backoff: '200ms', codes: [] } },
    ],
    [
      'retry by condition alone',
      { retry: { attempts: 2, condition: 'response.code == 429' } },
      { retry: { attempts: 2, codes: [], condition: 'response.code == 429' } },
    ],
    [
      'cors',
      {
        cors: {
          allowOrigins: ['https://a.example'],
          allowMethods: ['GET'],
          allowHeaders: ['x-a'],
          exposeHeaders: ['x-b'],
          allowCredentials: true,
          maxAge: 3600,
        },
      },
      {
        cors: {
          allowOrigins: ['https://a.example'],
          allowMethods: ['GET'],
          allowHeaders: ['x-a'],
          exposeHeaders: ['x-b'],
          allowCredentials: true,
          maxAge: '3600s',
        },
      },
    ],
    [
      'csrf',
      { csrf: { additionalOrigins: ['https://b.example:8443'] } },
      { csrf: { additionalOrigins: ['https://b.example:8443'] } },
    ],
    [
      'authorization (action defaulted to Allow)',
      { authorization: { policy: { matchExpressions: ['request.path.startsWith("/a")'] } } },
      { authorization: { action: 'Allow', policy: { matchExpressions: ['request.path.startsWith("/a")'] } } },
    ],
    [
      'rateLimit.local → localRateLimit',
      {
        rateLimit: {
          local: [
            { requests: 10, unit: 'Minutes', burst: 5 },
            { tokens: 100, unit: 'Hours' },
          ],
        },
      },
      {
        localRateLimit: [
          { requests: 10, unit: 'Minutes', burst: 5 },
          { tokens: 100, unit: 'Hours' },
        ],
      },
    ],
    [
      'buffer (failureMode defaulted, lowercased)',
      { buffer: { request: { maxBytes: '1Mi' }, response: { failureMode: 'FailOpen' } } },
      {
        buffer: {
          request: { maxBytes: '1Mi', failureMode: 'failClosed' },
          response: { failureMode: 'failOpen' },
        },
      },
    ],
    [
      'headerModifiers → request/responseHeaderModifier maps',
      {
        headerModifiers: {
          request: {
            set: [{ name: 'x-set', value: '1' }],
            add: [
              { name: 'x-add', value: 'a' },
              { name: 'x-other', value: 'b' },
            ],
            remove: ['x-drop'],
          },
          response: { remove: ['server'] },
        },
      },
      {
        requestHeaderModifier: {
          set: { 'x-set': '1' },
          add: { 'x-add': 'a', 'x-other': 'b' },
          remove: ['x-drop'],
        },
        responseHeaderModifier: { remove: ['server'] },
      },
    ],
    [
      'directResponse',
      { directResponse: { status: 418, body: 'teapot' } },
      { directResponse: { status: 418, body: 'teapot' } },
    ],
    ['delay', { delay: { duration: '250ms' } }, { delay: { duration: '250ms' } }],
    [
      'delay as CEL',
      { delay: { duration: 'request.headers["x-delay"]' } },
      { delay: { duration: 'request.headers["x-delay"]' } },
    ],
    [
      'ipAccessControl',
      {
        ipAccessControl: {
          allow: ['10.0.0.0/8', '2001:db8::/32'],
          deny: ['10.0.1.0/24'],
          xffNumTrustedHops: 1,
          skipPrivateIps: true,
          enforceFullChain: false,
          maxXffLength: 10,
        },
      },
      {
        ipAccessControl: {
          allow: ['10.0.0.0/8', '2001:db8::/32'],
          deny: ['10.0.1.0/24'],
          xffNumTrustedHops: 1,
          skipPrivateIps: true,
          enforceFullChain: false,
          maxXffLength: 10,
        },
      },
    ],
    [
      'concurrencyLimit',
      {
        concurrencyLimit: [
          { maxConcurrent: 32 },
          { maxConcurrent: 2, key: 'jwt.sub', limitOverride: 'jwt.team == "research" ? 8 : 2' },
        ],
      },
      {
        concurrencyLimit: [
          { maxConcurrent: 32 },
          { maxConcurrent: 2, key: 'jwt.sub', limitOverride: 'jwt.team == "research" ? 8 : 2' },
        ],
      },
    ],
  ];
  for (const [name, spec, expected] of cases) {
    test(name, () => {
      traffic(spec, [], expected);
    });
  }

  test('a header listed twice keeps the last value and says so', () => {
    traffic(
      {
        headerModifiers: {
          request: {
            set: [
              { name: 'X-A', value: '1' },
              { name: 'x-a', value: '2' },
            ],
          },
        },
      },
      [],
      { requestHeaderModifier: { set: { 'x-a': '2' } } },
      ['traffic.headerModifiers.request.set: header "x-a" is listed more than once; the last value is used'],
    );
  });
});

describe('traffic.jwtAuthentication → jwtAuth', () => {
  const jwks = '{"keys":[{"kty":"oct","kid":"k1","k":"c2VjcmV0"}]}';

  test('inline, url and Service JWKS; location, mode, preserveToken', () => {
    traffic(
      {
        jwtAuthentication: {
          mode: 'Optional',
          preserveToken: true,
          location: { header: { name: 'x-token', prefix: 'Token ' } },
          providers: [
            { issuer: 'https://inline', audiences: ['api'], jwks: { inline: jwks } },
            { issuer: 'https://url', jwks: { remote: { url: 'https://idp.example/jwks.json' } } },
            { issuer: 'https://svc', jwks: { remote: { backendRef: { name: 'idp', port: 8080 } } } },
            { issuer: 'https://svc-tls', jwks: { remote: { backendRef: { name: 'idp', port: 8443 } } } },
          ],
        },
      },
      [service('idp', [{ port: 8080 }, { port: 8443, appProtocol: 'https' }])],
      {
        jwtAuth: {
          mode: 'optional',
          preserveToken: true,
          location: { header: { name: 'x-token', prefix: 'Token ' } },
          providers: [
            { issuer: 'https://inline', audiences: ['api'], jwks: { inline: jwks } },
            { issuer: 'https://url', jwks: { url: 'https://idp.example/jwks.json' } },
            { issuer: 'https://svc', jwks: { url: `http://idp.${NS}.svc.cluster.local:8080` } },
            { issuer: 'https://svc-tls', jwks: { url: `https://idp.${NS}.svc.cluster.local:8443` } },
          ],
        },
      },
    );
  });

  test('defaults: mode strict, preserveToken false, no location', () => {
    traffic({ jwtAuthentication: { providers: [{ issuer: 'i', jwks: { inline: jwks } }] } }, [], {
      jwtAuth: { mode: 'strict', preserveToken: false, providers: [{ issuer: 'i', jwks: { inline: jwks } }] },
    });
  });

  test('a missing JWKS Service fails closed: empty JWKS for that provider, mode strict', () => {
    traffic(
      {
        jwtAuthentication: {
          mode: 'Permissive',
          providers: [
            { issuer: 'ok', jwks: { inline: jwks } },
            { issuer: 'gone', jwks: { remote: { backendRef: { name: 'idp', port: 80 } } } },
          ],
        },
      },
      [],
      {
        jwtAuth: {
          mode: 'strict',
          preserveToken: false,
          providers: [
            { issuer: 'ok', jwks: { inline: jwks } },
            { issuer: 'gone', jwks: { inline: EMPTY_JWKS } },
          ],
        },
      },
      [
        'traffic.jwtAuthentication.providers[1].jwks.remote.backendRef: service "idp" not found',
        'traffic.jwtAuthentication: a provider has no usable keys: tokens it issued are rejected and the mode is Strict',
      ],
    );
  });

  test('a Service without the port and cacheDuration are problems; an inline JWKS that is not one is invalid', () => {
    const r = traffic(
      {
        jwtAuthentication: {
          providers: [
            { issuer: 'a', jwks: { remote: { backendRef: { name: 'idp', port: 81 }, cacheDuration: '5m' } } },
            { issuer: 'b', jwks: { inline: '[]' } },
          ],
        },
      },
      [service('idp', [{ port: 80 }])],
      {
        jwtAuth: {
          mode: 'strict',
          preserveToken: false,
          providers: [
            { issuer: 'a', jwks: { inline: EMPTY_JWKS } },
            { issuer: 'b', jwks: { inline: EMPTY_JWKS } },
          ],
        },
      },
      [
        'traffic.jwtAuthentication.providers[0].jwks.remote.cacheDuration is not supported by this build of gw yet',
        'traffic.jwtAuthentication.providers[0].jwks.remote.backendRef: service "idp" has no port 81',
        'traffic.jwtAuthentication: a provider has no usable keys: tokens it issued are rejected and the mode is Strict',
      ],
    );
    assert.deepEqual(r.invalid, [
      {
        path: ['spec', 'traffic', 'jwtAuthentication', 'providers', 1, 'jwks', 'inline'],
        message: 'JWKS must be a JSON object with a "keys" list',
      },
    ]);
  });

  test('mcp: the one provider and the MCP settings become mcpAuthentication; keys not found fail closed', () => {
    const r = traffic(
      {
        jwtAuthentication: {
          mode: 'Permissive',
          providers: [
            {
              issuer: 'https://idp.example.com',
              audiences: ['https://gw.example.com/mcp'],
              jwks: { remote: { backendRef: { name: 'idp', port: 81 } } },
            },
          ],
          mcp: { provider: 'Auth0', clientId: 'pre', resourceMetadata: { scopesSupported: ['openid'] } },
        },
      },
      [service('idp', [{ port: 80 }])],
      {
        mcpAuthentication: {
          issuer: 'https://idp.example.com',
          audiences: ['https://gw.example.com/mcp'],
          jwks: { inline: EMPTY_JWKS },
          mode: 'strict',
          provider: { auth0: {} },
          resourceMetadata: { scopesSupported: ['openid'] },
          clientId: 'pre',
        },
      },
      [
        'traffic.jwtAuthentication.providers[0].jwks.remote.backendRef: service "idp" has no port 81',
        'traffic.jwtAuthentication: the provider has no usable keys: every token is rejected and the mode is Strict',
      ],
    );
    assert.deepEqual(r.invalid, []);
    // the Generic provider has no quirks: no provider in the standalone policy
    const g = trafficPolicy(
      trafficSpec({
        jwtAuthentication: {
          providers: [
            { issuer: 'https://idp.example.com', jwks: { remote: { url: 'https://idp.example.com/k' } } },
          ],
          mcp: { provider: 'Generic' },
        },
      }),
      NS,
      inMemoryLookup([]),
    );
    assert.equal(g.policies.mcpAuthentication?.provider, undefined);
    assert.equal(g.policies.jwtAuth, undefined);
    // Authentik and Descope are agentgateway's too (Descope without clientId needs an agentic issuer)
    for (const [provider, issuer, standalone] of [
      ['Authentik', 'https://ak.example.com/application/o/tools/', { authentik: {} }],
      ['Descope', 'https://api.descope.com/v1/apps/agentic/P2x/MS1', { descope: {} }],
      ['Entra', 'https://login.microsoftonline.com/t1/v2.0', { entra: {} }],
    ] as const) {
      const p = trafficPolicy(
        trafficSpec({
          jwtAuthentication: {
            providers: [{ issuer, jwks: { remote: { url: 'https://keys.example.com/k' } } }],
            mcp: { provider },
          },
        }),
        NS,
        inMemoryLookup([]),
      );
      assert.deepEqual(p.policies.mcpAuthentication?.provider, standalone, provider);
      assert.deepEqual(p.invalid, [], provider);
    }
  });
});

describe('traffic.basicAuthentication → basicAuth', () => {
  test('inline users, realm and mode', () => {
    traffic({ basicAuthentication: { users: [SHA_ALICE], realm: 'Staff', mode: 'Optional' } }, [], {
      basicAuth: { mode: 'optional', realm: 'Staff', users: [SHA_ALICE] },
    });
  });

  test('secretRef: the base64 .htaccess key becomes htpasswd text', () => {
    traffic(
      { basicAuthentication: { secretRef: { name: 'htpasswd' } } },
      [secret('htpasswd', { '.htaccess': `# staff\n${SHA_ALICE}\r\n\n${SHA_BOB}\n` })],
      { basicAuth: { mode: 'strict', realm: 'Restricted', htpasswd: `${SHA_ALICE}\n${SHA_BOB}\n` } },
    );
  });

  test('secretRef with a key; a line the proxy cannot verify is skipped without showing it', () => {
    traffic(
      {
        basicAuthentication: {
          secretRef: { name: 'creds', key: 'users' },
          location: { header: { name: 'x-auth', prefix: 'Basic ' } },
        },
      },
      [secret('creds', { users: `${SHA_ALICE}\nbob:plaintext\n` })],
      {
        basicAuth: {
          mode: 'strict',
          realm: 'Restricted',
          location: { header: { name: 'x-auth', prefix: 'Basic ' } },
          htpasswd: `${SHA_ALICE}\n`,
        },
      },
      [
        'traffic.basicAuthentication.secretRef: secret "creds" key "users" line 2: user bob: unsupported or plain-text password (use bcrypt, MD5 ($apr1$), SHA-1 or crypt hashes); it is skipped',
      ],
    );
  });

  test('a missing Secret denies every request (the standalone has no empty user list)', () => {
    traffic({ basicAuthentication: { secretRef: { name: 'htpasswd' } } }, [], { authorization: denyAll }, [
      'traffic.basicAuthentication.secretRef: secret "htpasswd" not found',
      'traffic.basicAuthentication: no usable users: every request is denied',
    ]);
  });

  test('a missing key denies every request, next to the policy own authorization', () => {
    traffic(
      {
        basicAuthentication: { secretRef: { name: 'x' } },
        authorization: { action: 'Require', policy: { matchExpressions: ['true'] } },
      },
      [secret('x', { other: SHA_ALICE })],
      { authorization: [{ action: 'Require', policy: { matchExpressions: ['true'] } }, denyAll] },
      [
        'traffic.basicAuthentication.secretRef: secret "x" has no key ".htaccess"',
        'traffic.basicAuthentication: no usable users: every request is denied',
      ],
    );
    assert.deepEqual(DENY_ALL, denyAll);
  });
});

describe('traffic.apiKeyAuthentication → apiKey', () => {
  test('secretRef: plain keys and JSON entries with metadata (base64 data)', () => {
    traffic(
      {
        apiKeyAuthentication: { secretRef: { name: 'keys' }, location: { queryParameter: { name: 'key' } } },
      },
      [
        secret('keys', {
          alice: 'k-alice\n',
          bob: JSON.stringify({ key: 'k-bob', metadata: { team: 'b' } }),
          carol: JSON.stringify({ keyHash: hash('k-carol'), metadata: { team: 'c' } }),
        }),
      ],
      {
        apiKey: {
          mode: 'strict',
          location: { queryParameter: { name: 'key' } },
          keys: {
            alice: 'k-alice',
            bob: { key: 'k-bob', metadata: { team: 'b' } },
            carol: { keyHash: hash('k-carol'), metadata: { team: 'c' } },
          },
        },
      },
    );
  });

  test('secretSelector: every matching Secret, sorted; a repeated entry name keeps the first', () => {
    traffic(
      {
        apiKeyAuthentication: {
          mode: 'Optional',
          secretSelector: { matchLabels: { 'gw.dev/api-keys': 'yes' } },
        },
      },
      [
        secret('b-keys', { bob: 'k-bob', alice: 'k-alice-2' }, { 'gw.dev/api-keys': 'yes' }),
        secret('a-keys', { alice: 'k-alice' }, { 'gw.dev/api-keys': 'yes', team: 'a' }),
        secret('other', { eve: 'k-eve' }, { 'gw.dev/api-keys': 'no' }),
        {
          ...secret('elsewhere', { mallory: 'k-m' }, { 'gw.dev/api-keys': 'yes' }),
          metadata: { name: 'elsewhere', namespace: 'other', labels: { 'gw.dev/api-keys': 'yes' } },
        },
      ],
      { apiKey: { mode: 'optional', keys: { alice: 'k-alice', bob: 'k-bob' } } },
      [
        'traffic.apiKeyAuthentication.secretSelector: entry "alice" is in secret "a-keys" and secret "b-keys"; the one in secret "a-keys" is used',
      ],
    );
  });

  test('configMapSelector: keyHash entries only; a raw key names the ConfigMap and entry and is skipped', () => {
    traffic(
      { apiKeyAuthentication: { configMapSelector: { matchLabels: { keys: 'hashed' } } } },
      [
        configMap(
          'hashed',
          {
            alice: JSON.stringify({ keyHash: hash('k-alice'), metadata: { tier: 'gold' } }),
            bob: JSON.stringify({ key: 'k-bob' }),
            carol: 'k-carol',
            dave: JSON.stringify({ keyHash: 'sha256:nothex' }),
          },
          { keys: 'hashed' },
        ),
      ],
      {
        apiKey: { mode: 'strict', keys: { alice: { keyHash: hash('k-alice'), metadata: { tier: 'gold' } } } },
      },
      [
        'traffic.apiKeyAuthentication.configMapSelector: configmap "hashed" entry "bob" holds a raw key; ConfigMaps may only hold hashed keys ({"keyHash": "sha256:<hex>"}); the entry is skipped',
        'traffic.apiKeyAuthentication.configMapSelector: configmap "hashed" entry "carol" holds a raw key; ConfigMaps may only hold hashed keys ({"keyHash": "sha256:<hex>"}); the entry is skipped',
        'traffic.apiKeyAuthentication.configMapSelector: configmap "hashed" entry "dave" has a keyHash that is not sha256:<64 hex digits>; the entry is skipped',
      ],
    );
  });

  test('malformed Secret entries are skipped and never quoted', () => {
    const r = traffic(
      { apiKeyAuthentication: { secretRef: { name: 'keys' } } },
      [secret('keys', { a: '{not json', b: JSON.stringify({ key: 'k', extra: 1 }), c: '  ', d: 'good' })],
      { apiKey: { mode: 'strict', keys: { d: 'good' } } },
      [
        'traffic.apiKeyAuthentication.secretRef: secret "keys" entry "a" starts with "{" but is not valid JSON; the entry is skipped',
        'traffic.apiKeyAuthentication.secretRef: secret "keys" entry "b" has unknown fields "extra"; the entry is skipped',
        'traffic.apiKeyAuthentication.secretRef: secret "keys" entry "c" is empty; the entry is skipped',
      ],
    );
    assert.ok(!r.problems.join('\n').includes('{not json'));
  });

  test('a missing Secret fails closed: no keys, mode strict', () => {
    traffic(
      { apiKeyAuthentication: { mode: 'Permissive', secretRef: { name: 'keys' } } },
      [],
      { apiKey: { mode: 'strict', keys: {} } },
      [
        'traffic.apiKeyAuthentication.secretRef: secret "keys" not found',
        'traffic.apiKeyAuthentication: no usable API keys: every request is rejected',
      ],
    );
  });

  test('a selector matching nothing, or empty, fails closed', () => {
    traffic(
      { apiKeyAuthentication: { mode: 'Optional', secretSelector: { matchLabels: { app: 'none' } } } },
      [secret('keys', { a: 'k' })],
      { apiKey: { mode: 'strict', keys: {} } },
      [
        'traffic.apiKeyAuthentication.secretSelector: no Secret in namespace "apps" has the labels app=none',
        'traffic.apiKeyAuthentication: no usable API keys: every request is rejected',
      ],
    );
    traffic(
      { apiKeyAuthentication: { secretSelector: { matchLabels: {} } } },
      [secret('keys', { a: 'k' })],
      { apiKey: { mode: 'strict', keys: {} } },
      [
        'traffic.apiKeyAuthentication.secretSelector: matchLabels is empty, which would select every Secret in the namespace; name a label',
        'traffic.apiKeyAuthentication: no usable API keys: every request is rejected',
      ],
    );
  });
});

describe('traffic.extAuth → extAuthz', () => {
  const svc = service('authz', [{ port: 9000 }]);
  test('grpc', () => {
    traffic(
      {
        extAuth: {
          backendRef: { name: 'authz', port: 9000 },
          grpc: { contextExtensions: { team: 'a' }, requestMetadata: { user: 'jwt.sub' } },
          timeout: '300ms',
        },
      },
      [svc],
      {
        extAuthz: {
          grpc: {
            host: `authz.${NS}.svc.cluster.local:9000`,
            contextExtensions: { team: 'a' },
            requestMetadata: { user: 'jwt.sub' },
            timeout: '300ms',
          },
          failureMode: 'failClosed',
        },
      },
    );
  });

  test('cache: allowed answers kept by key until the ttl, as the standalone', () => {
    traffic(
      {
        extAuth: {
          backendRef: { name: 'authz', port: 9000 },
          grpc: {},
          cache: { key: ['request.headers["authorization"]'], ttl: '60s', maxEntries: 500 },
        },
      },
      [svc],
      {
        extAuthz: {
          grpc: { host: `authz.${NS}.svc.cluster.local:9000` },
          failureMode: 'failClosed',
          cache: { key: ['request.headers["authorization"]'], ttl: '60s', maxEntries: 500 },
        },
      },
    );
  });

  test('http', () => {
    traffic(
      {
        extAuth: {
          backendRef: { name: 'authz', port: 9000 },
          failureMode: 'FailOpen',
          http: {
            path: '"/check" + request.path',
            redirect: '"https://login.example"',
            allowedRequestHeaders: ['cookie'],
            addRequestHeaders: { 'x-route': '"r1"' },
            allowedResponseHeaders: ['x-user'],
            responseMetadata: { user: 'response.headers["x-user"]' },
          },
        },
      },
      [svc],
      {
        extAuthz: {
          http: {
            host: `authz.${NS}.svc.cluster.local:9000`,
            path: '"/check" + request.path',
            redirect: '"https://login.example"',
            allowedRequestHeaders: ['cookie'],
            addRequestHeaders: { 'x-route': '"r1"' },
            allowedResponseHeaders: ['x-user'],
            responseMetadata: { user: 'response.headers["x-user"]' },
          },
          failureMode: 'failOpen',
        },
      },
    );
  });

  test('a missing Service turns FailOpen into failClosed', () => {
    traffic(
      { extAuth: { backendRef: { name: 'authz', port: 9000 }, failureMode: 'FailOpen', grpc: {} } },
      [],
      { extAuthz: { grpc: { host: `authz.${NS}.svc.cluster.local:9000` }, failureMode: 'failClosed' } },
      [
        'traffic.extAuth.backendRef: service "authz" not found',
        'traffic.extAuth: failureMode is FailClosed until the backendRef resolves',
      ],
    );
  });

  test('forwardBody → includeRequestBody; an https Service port → TLS to the service', () => {
    traffic(
      {
        extAuth: {
          backendRef: { name: 'authz', port: 8443 },
          grpc: {},
          forwardBody: { maxSize: '16Ki' },
        },
      },
      [service('authz', [{ port: 8443, appProtocol: 'https' }])],
      {
        extAuthz: {
          grpc: { host: `authz.${NS}.svc.cluster.local:8443` },
          failureMode: 'failClosed',
          includeRequestBody: { maxRequestBytes: 16384 },
          policies: { backendTLS: {} },
        },
      },
    );
    traffic(
      { extAuth: { backendRef: { name: 'authz', port: 443 }, http: {}, forwardBody: { maxSize: 100 } } },
      [service('authz', [{ port: 443 }])],
      {
        extAuthz: {
          http: { host: `authz.${NS}.svc.cluster.local:443` },
          failureMode: 'failClosed',
          includeRequestBody: { maxRequestBytes: 100 },
          policies: { backendTLS: {} },
        },
      },
    );
  });

  test('a backendRef that is not a Service denies every request', () => {
    traffic(
      { extAuth: { backendRef: { group: 'gw.dev', kind: 'GwBackend', name: 'authz' }, grpc: {} } },
      [],
      { authorization: denyAll },
      [
        'traffic.extAuth.backendRef: backendRef kind "gw.dev/GwBackend" is not supported here; use a Service',
        'traffic.extAuth: no authorization service to call: every request is denied',
      ],
    );
  });
});

describe('traffic.rateLimit.global → remoteRateLimit', () => {
  test('host, domain, descriptors (name → key, expression → value, type lowercased), failureMode, timeout', () => {
    traffic(
      {
        rateLimit: {
          global: {
            backendRef: { name: 'ratelimit', port: 8081 },
            domain: 'gw',
            descriptors: [
              { entries: [{ name: 'user', expression: 'request.headers["x-user"]' }] },
              { entries: [{ name: 'model', expression: 'llm.model' }], type: 'Tokens' },
            ],
            timeout: '50ms',
          },
        },
      },
      [service('ratelimit', [{ port: 8081 }])],
      {
        remoteRateLimit: {
          host: `ratelimit.${NS}.svc.cluster.local:8081`,
          domain: 'gw',
          descriptors: [
            { entries: [{ key: 'user', value: 'request.headers["x-user"]' }], type: 'requests' },
            { entries: [{ key: 'model', value: 'llm.model' }], type: 'tokens' },
          ],
          failureMode: 'failClosed',
          timeout: '50ms',
        },
      },
    );
  });

  test('a missing Service is a problem; the failure mode stays the user one', () => {
    traffic(
      {
        rateLimit: {
          global: {
            backendRef: { name: 'ratelimit', port: 8081 },
            domain: 'gw',
            descriptors: [{ entries: [{ name: 'all', expression: '"all"' }] }],
            failureMode: 'FailOpen',
          },
        },
      },
      [],
      {
        remoteRateLimit: {
          host: `ratelimit.${NS}.svc.cluster.local:8081`,
          domain: 'gw',
          descriptors: [{ entries: [{ key: 'all', value: '"all"' }], type: 'requests' }],
          failureMode: 'failOpen',
        },
      },
      ['traffic.rateLimit.global.backendRef: service "ratelimit" not found'],
    );
  });
});

describe('traffic.extProc → extProc', () => {
  test('a Service over gRPC with its body modes and failure mode', () => {
    traffic(
      {
        extProc: {
          backendRef: { name: 'proc', port: 9000 },
          failureMode: 'FailOpen',
          requestBodyMode: 'Buffered',
          responseBodyMode: 'BufferedPartial',
        },
      },
      [service('proc', [{ port: 9000 }])],
      {
        extProc: {
          host: `proc.${NS}.svc.cluster.local:9000`,
          failureMode: 'failOpen',
          processingOptions: { requestBodyMode: 'buffered', responseBodyMode: 'bufferedPartial' },
        },
      },
    );
  });

  test('FullDuplexStreamed and allowModeOverride translate', () => {
    traffic(
      { extProc: { backendRef: { name: 'proc', port: 9000 }, responseBodyMode: 'FullDuplexStreamed' } },
      [service('proc', [{ port: 9000 }])],
      {
        extProc: {
          host: `proc.${NS}.svc.cluster.local:9000`,
          failureMode: 'failClosed',
          processingOptions: { requestBodyMode: 'none', responseBodyMode: 'fullDuplexStreamed' },
        },
      },
    );
  });
});

describe('traffic.phase PreRouting', () => {
  const refusal = (spec: Record<string, unknown>) => {
    const r = validateResource({
      apiVersion: 'gw.dev/v1alpha1',
      kind: 'GwPolicy',
      metadata: { name: 'x', namespace: NS },
      spec,
    });
    return r.ok ? undefined : JSON.stringify(r.errors);
  };
  test('the policies that run before routing translate as in PostRouting', () => {
    traffic({ phase: 'PreRouting', cors: { allowOrigins: ['https://app.example'] } }, [], {
      cors: { allowOrigins: ['https://app.example'] },
    });
  });
  test('the CRD refuses another policy, and a target other than a Gateway or ListenerSet', () => {
    assert.match(
      refusal({ ...TARGET, traffic: { phase: 'PreRouting', timeouts: { request: '5s' } } }) ?? '',
      /phase PreRouting takes cors, jwtAuthentication/,
    );
    assert.match(
      refusal({
        targetRefs: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', name: 'web' }],
        traffic: { phase: 'PreRouting', cors: { allowOrigins: ['*'] } },
      }) ?? '',
      /every target must be a Gateway or a ListenerSet/,
    );
    assert.equal(
      refusal({ ...TARGET, traffic: { phase: 'PostRouting', timeouts: { request: '5s' } } }),
      undefined,
    );
  });
});

describe('traffic.transformation → transformations', () => {
  test('the set/add lists become maps; remove and body are carried over', () => {
    traffic(
      {
        transformation: {
          request: {
            set: [
              { name: 'x-user', value: 'jwt.sub' },
              { name: ':path', value: '"/v2" + request.path' },
            ],
            add: [{ name: 'x-tag', value: '"gw"' }],
            remove: ['x-internal'],
            body: 'toJson(json(request.body))',
          },
          response: { set: [{ name: ':status', value: '200' }] },
        },
      },
      [],
      {
        transformations: {
          request: {
            set: { 'x-user': 'jwt.sub', ':path': '"/v2" + request.path' },
            add: { 'x-tag': '"gw"' },
            remove: ['x-internal'],
            body: 'toJson(json(request.body))',
          },
          response: { set: { ':status': '200' } },
        },
      },
    );
  });

  test('an expression that does not compile makes the policy invalid, at the entry the user wrote', () => {
    const r = traffic(
      {
        transformation: {
          request: {
            set: [
              { name: 'x-a', value: '"a"' },
              { name: 'x-b', value: 'request.path +' },
            ],
          },
        },
      },
      [],
      { transformations: { request: { set: { 'x-a': '"a"', 'x-b': 'request.path +' } } } },
    );
    assert.deepEqual(
      r.invalid.map((p) => p.path),
      [['spec', 'traffic', 'transformation', 'request', 'set', 1, 'value']],
    );
    assert.match(r.invalid[0]?.message ?? '', /^invalid CEL expression: Unexpected token: EOF/);
  });
});

function backend(spec: NonNullable<GwPolicySpec['backend']>, objects: KubeObject[], field?: string) {
  const r = backendPolicy(spec, NS, inMemoryLookup(objects), field);
  const parsed = BackendPolicies.safeParse(r.policies);
  assert.ok(parsed.success, `not a valid BackendPolicies: ${parsed.error?.message}`);
  return r;
}

describe('backend → BackendPolicies', () => {
  test('tcp keepalive (defaults applied), connectTimeout, http', () => {
    const r = backend(
      backendSpec({
        tcp: { keepalive: { retries: 3 }, connectTimeout: '2s' },
        http: { version: 'HTTP2', requestTimeout: '30s' },
      }),
      [],
    );
    assert.deepEqual(r, {
      policies: {
        tcp: {
          keepalives: { enabled: true, time: '180s', interval: '180s', retries: 3 },
          connectTimeout: '2s',
        },
        http: { version: 'HTTP2', requestTimeout: '30s' },
      },
      problems: [],
      invalid: [],
      failClosed: false,
    });
  });

  test('tls: sni, verifySubjectAltNames, alpn, CA from a ConfigMap, client certificate from a Secret', () => {
    const r = backend(
      backendSpec({
        tls: {
          sni: 'api.internal',
          verifySubjectAltNames: ['spiffe://cluster/ns/apps/sa/api'],
          alpnProtocols: ['h2'],
          caCertificateRefs: [{ name: 'ca' }],
          mtlsCertificateRef: [{ name: 'client' }],
        },
      }),
      [
        configMap('ca', { 'ca.crt': PEM_CA }),
        secret('client', { 'tls.crt': PEM_CERT, 'tls.key': PEM_KEY, 'ca.cert': 'ignored' }),
      ],
    );
    assert.deepEqual(r, {
      policies: {
        backendTLS: {
          hostname: 'api.internal',
          subjectAltNames: ['spiffe://cluster/ns/apps/sa/api'],
          alpn: ['h2'],
          cert: PEM_CERT,
          key: PEM_KEY,
          root: PEM_CA,
        },
      },
      problems: [],
      invalid: [],
      failClosed: false,
    });
  });

  test('tls: insecureSkipVerify All → insecure, Hostname → insecureHost; CA from a Secret; ca.cert of the client Secret', () => {
    assert.deepEqual(
      backend(
        backendSpec({
          tls: { insecureSkipVerify: 'All', caCertificateRefs: [{ kind: 'Secret', name: 'ca' }] },
        }),
        [secret('ca', { 'ca.crt': PEM_CA })],
      ).policies,
      { backendTLS: { insecure: true, root: PEM_CA } },
    );
    assert.deepEqual(
      backend(
        backendSpec({ tls: { insecureSkipVerify: 'Hostname', mtlsCertificateRef: [{ name: 'client' }] } }),
        [secret('client', { 'tls.crt': PEM_CERT, 'tls.key': PEM_KEY, 'ca.cert': PEM_CA })],
      ).policies,
      { backendTLS: { insecureHost: true, cert: PEM_CERT, key: PEM_KEY, root: PEM_CA } },
    );
    assert.deepEqual(backend(backendSpec({ tls: {} }), []).policies, { backendTLS: {} });
  });

  test('tls: a missing CA or client key, or material that is not PEM, fails closed', () => {
    assert.deepEqual(backend(backendSpec({ tls: { caCertificateRefs: [{ name: 'ca' }] } }), []), {
      policies: { backendTLS: {} },
      problems: ['backend.tls.caCertificateRefs[0]: configmap "ca" not found'],
      invalid: [],
      failClosed: true,
    });
    assert.deepEqual(
      backend(backendSpec({ tls: { mtlsCertificateRef: [{ name: 'client' }] } }), [
        secret('client', { 'tls.crt': PEM_CERT }),
      ]),
      {
        policies: { backendTLS: {} },
        problems: ['backend.tls.mtlsCertificateRef[0]: secret "client" has no key "tls.key"'],
        invalid: [],
        failClosed: true,
      },
    );
    assert.deepEqual(
      backend(backendSpec({ tls: { caCertificateRefs: [{ name: 'ca', kind: 'Secret' }] } }), [
        secret('ca', { 'ca.crt': '/etc/passwd' }),
      ]),
      {
        policies: { backendTLS: {} },
        problems: ['backend.tls.caCertificateRefs[0]: secret "ca" key "ca.crt" is not PEM'],
        invalid: [],
        failClosed: true,
      },
    );
  });

  test('health: passive → eviction, active → active (the CRD defaults spelled out)', () => {
    assert.deepEqual(
      backend(
        backendSpec({
          health: {
            passive: { consecutiveFailures: 3 },
            active: { path: '/healthz', unhealthyThreshold: 2 },
          },
        }),
        [],
      ),
      {
        policies: {
          health: {
            eviction: { consecutiveFailures: 3, duration: '30s' },
            active: {
              path: '/healthz',
              interval: '10s',
              timeout: '1s',
              healthyThreshold: 1,
              unhealthyThreshold: 2,
            },
          },
        },
        problems: [],
        invalid: [],
        failClosed: false,
      },
    );
    assert.deepEqual(backend(backendSpec({ health: { active: { interval: '5s' } } }), []).policies, {
      health: {
        active: { path: '/', interval: '5s', timeout: '1s', healthyThreshold: 1, unhealthyThreshold: 3 },
      },
    });
    // eviction's percentages become the standalone's scores
    assert.deepEqual(
      backend(
        backendSpec({ health: { eviction: { healthThreshold: 40, restoreHealth: 75, duration: '5s' } } }),
        [],
      ).policies,
      { health: { eviction: { duration: '5s', healthThreshold: 0.4, restoreHealth: 0.75 } } },
    );
    const zero = backend(backendSpec({ health: { active: { timeout: '0s' } } }), []);
    assert.deepEqual(zero.invalid, [
      { path: ['spec', 'backend', 'health', 'active', 'timeout'], message: 'timeout must be more than 0' },
    ]);
  });

  test('extAuth: the traffic form for the backend, a missing Service failing closed', () => {
    const svc = service('authz', [{ port: 9000 }]);
    const r = backend(
      backendSpec({ extAuth: { backendRef: { name: 'authz', port: 9000 }, http: {}, timeout: '300ms' } }),
      [svc],
    );
    assert.deepEqual(r.policies, {
      extAuthz: {
        http: { host: `authz.${NS}.svc.cluster.local:9000`, timeout: '300ms' },
        failureMode: 'failClosed',
      },
    });
    assert.deepEqual(r.problems, []);
    // a Service not found yet: its address, failing closed (as the traffic form)
    const missing = backend(
      backendSpec({
        extAuth: { backendRef: { name: 'nope', port: 9000 }, grpc: {}, failureMode: 'FailOpen' },
      }),
      [],
    );
    assert.deepEqual(missing.policies, {
      extAuthz: { grpc: { host: `nope.${NS}.svc.cluster.local:9000` }, failureMode: 'failClosed' },
    });
    assert.match(missing.problems.join('\n'), /backend\.extAuth\.backendRef/);
  });

  test('unsupported fields are reported', () => {
    const r = backend(
      backendSpec({
        tls: { certificateSource: 'SPIFFE', keyExchangeGroups: ['X25519'] },
      }),
      [],
    );
    assert.deepEqual(r, {
      policies: { backendTLS: { keyExchangeGroups: ['X25519'] } },
      problems: ['backend.tls.certificateSource SPIFFE is not supported by this build of gw yet'],
      invalid: [],
      failClosed: true,
    });
  });

  test('tls.keyExchangeGroups keep their names and order; one the TLS library lacks is Invalid, named', () => {
    assert.deepEqual(backend(backendSpec({ tls: { keyExchangeGroups: ['P-384', 'X25519'] } }), []).policies, {
      backendTLS: { keyExchangeGroups: ['P-384', 'X25519'] },
    });
    // The CRD's enum lets only names through that OpenSSL 3.5 (Node 24) has; past the API server, a
    // name the library lacks gets the standalone's words at the CRD's field.
    const spec = { tls: { keyExchangeGroups: ['X25519', 'X25519Kyber768Draft00'] } } as unknown as Parameters<
      typeof backendPolicy
    >[0];
    const r = backendPolicy(spec, NS, inMemoryLookup([]));
    assert.deepEqual(
      r.invalid.map((p) => p.path),
      [['spec', 'backend', 'tls', 'keyExchangeGroups', 1]],
    );
    assert.match(
      r.invalid[0]?.message ?? '',
      /^key exchange group X25519Kyber768Draft00 is not available in this build's TLS library/,
    );
  });

  test('tunnel: a Service backendRef is its cluster DNS name; a url is proxy.host (TLS for https)', () => {
    assert.deepEqual(
      backend(backendSpec({ tunnel: { backendRef: { name: 'squid', port: 3128 } } }), [
        service('squid', [{ port: 3128 }]),
      ]),
      {
        policies: { backendTunnel: { proxy: { host: `squid.${NS}.svc.cluster.local:3128` }, mode: 'Auto' } },
        problems: [],
        invalid: [],
        failClosed: false,
      },
    );
    assert.deepEqual(
      backend(backendSpec({ tunnel: { backendRef: { name: 'squid', port: 8443 }, mode: 'Connect' } }), [
        service('squid', [{ port: 8443, appProtocol: 'https' }]),
      ]).policies,
      {
        backendTunnel: {
          proxy: { host: `squid.${NS}.svc.cluster.local:8443` },
          policies: { backendTLS: {} },
          mode: 'Connect',
        },
      },
    );
    assert.deepEqual(backend(backendSpec({ tunnel: { url: 'http://proxy.example:3128' } }), []).policies, {
      backendTunnel: { proxy: { host: 'proxy.example:3128' }, mode: 'Auto' },
    });
    assert.deepEqual(backend(backendSpec({ tunnel: { url: 'https://proxy.example' } }), []).policies, {
      backendTunnel: { proxy: { host: 'proxy.example:443' }, policies: { backendTLS: {} }, mode: 'Auto' },
    });
    const withPath = backend(backendSpec({ tunnel: { url: 'http://proxy.example/squid' } }), []);
    assert.deepEqual(withPath.policies, {
      backendTunnel: { proxy: { host: 'proxy.example:80' }, mode: 'Auto' },
    });
    assert.deepEqual(withPath.problems, [
      'backend.tunnel.url: a forward proxy is addressed by host and port: "/squid" is ignored',
    ]);
  });

  test('tunnel: a missing Service or port, or no single address, fails closed naming the field', () => {
    const noTunnel = 'backend.tunnel: no forward proxy to reach the backend through: the backend is not used';
    assert.deepEqual(backend(backendSpec({ tunnel: { backendRef: { name: 'squid', port: 3128 } } }), []), {
      policies: {},
      problems: ['backend.tunnel.backendRef: service "squid" not found', noTunnel],
      invalid: [],
      failClosed: true,
    });
    assert.deepEqual(
      backend(backendSpec({ tunnel: { backendRef: { name: 'squid', port: 3128 } } }), [
        service('squid', [{ port: 80 }]),
      ]).problems,
      ['backend.tunnel.backendRef: service "squid" has no port 3128', noTunnel],
    );
    assert.deepEqual(
      backend(
        backendSpec({ tunnel: { backendRef: { group: 'gw.dev', kind: 'GwBackend', name: 'squid' } } }),
        [],
      ).problems,
      [
        'backend.tunnel.backendRef: backendRef kind "gw.dev/GwBackend" is not supported here; use a Service',
        noTunnel,
      ],
    );
    // Both or neither: the API server refuses them (the CRD says exactly one); past it, the same words.
    const unchecked = (tunnel: Record<string, unknown>) =>
      backendPolicy({ tunnel } as unknown as Parameters<typeof backendPolicy>[0], NS, inMemoryLookup([]));
    const both = unchecked({
      url: 'http://p:3128',
      backendRef: { group: '', kind: 'Service', name: 's', port: 1 },
    });
    assert.deepEqual(both.problems, [
      'backend.tunnel: exactly one of backendRef or url must be set, not both',
      noTunnel,
    ]);
    assert.equal(both.failClosed, true);
    assert.deepEqual(unchecked({ mode: 'Auto' }).problems, [
      'backend.tunnel: exactly one of backendRef or url must be set',
      noTunnel,
    ]);
    const r = validateResource({
      apiVersion: 'gw.dev/v1alpha1',
      kind: 'GwPolicy',
      metadata: { name: 'x', namespace: NS },
      spec: { ...TARGET, backend: { tunnel: { mode: 'Auto' } } },
    });
    assert.ok(!r.ok);
    assert.match(
      JSON.stringify(r.errors),
      /spec\.backend\.tunnel.*exactly one of backendRef or url must be set/,
    );
  });

  test('GwBackend spec.policies, with its own field prefix', () => {
    const spec = validated('GwBackend', {
      static: { host: 'api.internal', port: 443 },
      policies: {
        tls: { sni: 'api.internal' },
        tunnel: { url: 'http://proxy.example:3128', mode: 'Connect' },
      },
    }) as GwBackendSpec;
    assert.deepEqual(backend(spec.policies!, [], 'policies'), {
      policies: {
        backendTLS: { hostname: 'api.internal' },
        backendTunnel: { proxy: { host: 'proxy.example:3128' }, mode: 'Connect' },
      },
      problems: [],
      invalid: [],
      failClosed: false,
    });
    const missing = validated('GwBackend', {
      static: { host: 'api.internal', port: 443 },
      policies: { tunnel: { backendRef: { name: 'squid', port: 3128 } } },
    }) as GwBackendSpec;
    assert.deepEqual(backend(missing.policies!, [], 'policies').problems, [
      'policies.tunnel.backendRef: service "squid" not found',
      'policies.tunnel: no forward proxy to reach the backend through: the backend is not used',
    ]);
  });
});

describe('frontend → FrontendPolicies', () => {
  test('networkAuthorization, accessLog, http', () => {
    const r = frontendPolicy(
      frontendSpec({
        networkAuthorization: {
          action: 'Deny',
          policy: { matchExpressions: ['cidr("10.0.0.0/8").containsIP(source.address)'] },
        },
        accessLog: {
          filter: 'response.code >= 400',
          attributes: { add: [{ name: 'user', expression: 'jwt.sub' }], remove: ['request.headers'] },
        },
        http: { maxBufferSize: '4Mi', http1IdleTimeout: '60s', http2KeepaliveInterval: '30s' },
      }),
      NS,
      inMemoryLookup([]),
    );
    const expected = {
      networkAuthorization: {
        action: 'Deny',
        policy: { matchExpressions: ['cidr("10.0.0.0/8").containsIP(source.address)'] },
      },
      accessLog: { filter: 'response.code >= 400', add: { user: 'jwt.sub' }, remove: ['request.headers'] },
      http: { maxBufferSize: '4Mi', http1IdleTimeout: '60s', http2KeepaliveInterval: '30s' },
    };
    assert.deepEqual(r, { policies: expected, problems: [], invalid: [] });
    assert.ok(FrontendPolicies.safeParse(r.policies).success);
  });

  test('tracing: the collector Service becomes its cluster address, the lists the standalone maps, sampling and filter CEL', () => {
    const r = frontendPolicy(
      frontendSpec({
        tracing: {
          backendRef: { name: 'otel', port: 4318 },
          protocol: 'HTTP',
          path: '/otlp/v1/traces',
          randomSampling: '0.25',
          clientSampling: "request.headers['x-trace'] == '1'",
          filter: 'response.code >= 500',
          resources: [{ name: 'service.name', expression: '"edge"' }],
          attributes: {
            add: [{ name: 'tenant', expression: "request.headers['x-tenant']" }],
            remove: ['http.route'],
          },
        },
      }),
      NS,
      inMemoryLookup([service('otel', [{ port: 4318 }])]),
    );
    assert.deepEqual(r, {
      policies: {
        tracing: {
          host: `otel.${NS}.svc.cluster.local:4318`,
          protocol: 'http',
          path: '/otlp/v1/traces',
          resources: { 'service.name': '"edge"' },
          attributes: { tenant: "request.headers['x-tenant']" },
          remove: ['http.route'],
          randomSampling: '0.25',
          clientSampling: "request.headers['x-trace'] == '1'",
          filter: 'response.code >= 500',
        },
      },
      problems: [],
      invalid: [],
    });
    assert.ok(FrontendPolicies.safeParse(r.policies).success);
    // gRPC (the default) over TLS when the Service port says https; a url as written
    const tls = frontendPolicy(
      frontendSpec({ tracing: { backendRef: { name: 'otel', port: 4317 } } }),
      NS,
      inMemoryLookup([service('otel', [{ port: 4317, appProtocol: 'https' }])]),
    );
    assert.deepEqual(tls.policies, {
      tracing: { host: `https://otel.${NS}.svc.cluster.local:4317`, protocol: 'grpc' },
    });
    const url = frontendPolicy(
      frontendSpec({ tracing: { url: 'http://otel.example:4317' } }),
      NS,
      inMemoryLookup([]),
    );
    assert.deepEqual(url.policies, { tracing: { host: 'http://otel.example:4317', protocol: 'grpc' } });
  });

  test('tracing: a missing Service is named (spans are still sent to its address), a Service in another namespace leaves tracing off, CEL is checked at its CRD path', () => {
    const missing = frontendPolicy(
      frontendSpec({ tracing: { backendRef: { name: 'otel', port: 4317 } } }),
      NS,
      inMemoryLookup([]),
    );
    assert.deepEqual(missing.policies, {
      tracing: { host: `otel.${NS}.svc.cluster.local:4317`, protocol: 'grpc' },
    });
    assert.deepEqual(missing.problems, ['frontend.tracing.backendRef: service "otel" not found']);
    const other = frontendPolicy(
      frontendSpec({ tracing: { backendRef: { name: 'otel', namespace: 'obs', port: 4317 } } }),
      NS,
      inMemoryLookup([]),
    );
    assert.deepEqual(other.policies, {});
    assert.deepEqual(other.problems, [
      'frontend.tracing.backendRef: no ReferenceGrant in namespace obs allows this GwPolicy to use service "otel"',
      'frontend.tracing: no collector to export to: requests are not traced',
    ]);
    const bad = frontendPolicy(
      frontendSpec({
        tracing: {
          url: 'http://otel.example:4317',
          randomSampling: 'request.path ==',
          resources: [
            { name: 'a', expression: '"ok"' },
            { name: 'b', expression: '(' },
          ],
          attributes: { add: [{ name: 'c', expression: 'nosuchvar' }] },
        },
      }),
      NS,
      inMemoryLookup([]),
    );
    assert.deepEqual(
      bad.invalid.map((p) => `${p.path.join('.')}: ${p.message.replace(/: .*/s, '')}`),
      [
        'spec.frontend.tracing.randomSampling: invalid CEL expression',
        'spec.frontend.tracing.resources.1.expression: invalid CEL expression',
        'spec.frontend.tracing.attributes.add.0.expression: invalid CEL expression',
      ],
    );
  });

  test('http.maxConcurrentRequests and tcp.maxConnections map, with or without a keepalive beside them', () => {
    const both = frontendPolicy(
      frontendSpec({ http: { maxConcurrentRequests: 500 }, tcp: { maxConnections: 2000 } }),
      NS,
      inMemoryLookup([]),
    );
    assert.deepEqual(both.policies, { http: { maxConcurrentRequests: 500 }, tcp: { maxConnections: 2000 } });
    assert.ok(FrontendPolicies.safeParse(both.policies).success);
    assert.deepEqual([both.invalid, both.problems], [[], []]);
    const withKeepalive = frontendPolicy(
      frontendSpec({ tcp: { maxConnections: 10, keepalive: { time: '30s' } } }),
      NS,
      inMemoryLookup([]),
    );
    assert.deepEqual(withKeepalive.policies.tcp, {
      keepalives: { enabled: true, time: '30s', interval: '180s', retries: 9 },
      maxConnections: 10,
    });
  });

  test('tls.handshakeTimeout, accessLog.otlp, http1MaxHeaders, the HTTP/2 keepalive and tcp keepalive (the CRD’s interval default filled in) map', () => {
    const r = frontendPolicy(
      frontendSpec({
        tcp: { keepalive: { time: '30s', retries: 3 } },
        tls: { handshakeTimeout: '5s' },
        accessLog: {
          filter: 'true',
          otlp: {
            url: 'http://otel.example:4318',
            protocol: 'HTTP',
            path: '/v1/logs',
            filter: 'response.code >= 500',
            attributes: { add: [{ name: 'user', expression: 'jwt.sub' }], remove: ['src.addr'] },
          },
        },
        http: { http1MaxHeaders: 50, http2KeepaliveTimeout: '10s' },
      }),
      NS,
      inMemoryLookup([]),
    );
    assert.deepEqual(r, {
      policies: {
        accessLog: {
          filter: 'true',
          otlp: {
            host: 'http://otel.example:4318',
            protocol: 'http',
            path: '/v1/logs',
            filter: 'response.code >= 500',
            fields: { add: { user: 'jwt.sub' }, remove: ['src.addr'] },
          },
        },
        http: { http1MaxHeaders: 50, http2KeepaliveTimeout: '10s' },
        tcp: { keepalives: { enabled: true, time: '30s', interval: '180s', retries: 3 } },
        tls: { handshakeTimeout: '5s' },
      },
      problems: [],
      invalid: [],
    });
    assert.ok(FrontendPolicies.safeParse(r.policies).success);
    // a Service collector is its cluster address (as tracing's: one not found yet is named, and its
    // address used)
    const svc = frontendPolicy(
      frontendSpec({ accessLog: { otlp: { backendRef: { name: 'otel', port: 4317 } } } }),
      NS,
      inMemoryLookup([]),
    );
    assert.deepEqual(svc.policies, {
      accessLog: { otlp: { host: 'otel.apps.svc.cluster.local:4317', protocol: 'grpc' } },
    });
    assert.match(svc.problems.join('\n'), /frontend\.accessLog\.otlp\.backendRef/);
  });

  test('tls: versions, cipher suites, key exchange groups and ALPN in the standalone names', () => {
    const r = frontendPolicy(
      frontendSpec({
        tls: {
          minProtocolVersion: 'TLS12',
          maxProtocolVersion: 'TLS13',
          cipherSuites: ['TLS13_AES_128_GCM_SHA256', 'TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256'],
          keyExchangeGroups: ['X25519', 'P-256'],
          alpnProtocols: ['h2'],
        },
      }),
      NS,
      inMemoryLookup([]),
    );
    assert.deepEqual(r.policies, {
      tls: {
        minVersion: 'TLS_V1_2',
        maxVersion: 'TLS_V1_3',
        cipherSuites: ['TLS13_AES_128_GCM_SHA256', 'TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256'],
        keyExchangeGroups: ['X25519', 'P-256'],
        alpn: ['h2'],
      },
    });
    assert.ok(FrontendPolicies.safeParse(r.policies).success);
    assert.deepEqual(r.problems, []);
  });
});

describe('traffic: conditional forms (issue 16), each entry as the plain form', () => {
  test('directResponse: entries in order with their conditions, the fallback without one', () => {
    traffic(
      {
        directResponse: {
          conditional: [
            {
              condition: "request.path == '/a'",
              policy: {
                status: 200,
                bodyExpression: 'request.path',
                headers: [{ name: 'content-type', value: '"text/plain"' }],
              },
            },
            { policy: { status: 404, body: 'none' } },
          ],
        },
      },
      [],
      {
        directResponse: {
          conditional: [
            {
              status: 200,
              bodyExpression: 'request.path',
              headers: { 'content-type': '"text/plain"' },
              condition: "request.path == '/a'",
            },
            { status: 404, body: 'none' },
          ],
        },
      },
    );
  });

  test('extAuth and extProc: each entry its Service; an entry with nothing to call denies every request', () => {
    const svcs = [service('authz', [{ port: 9000 }]), service('proc', [{ port: 9001 }])];
    traffic(
      {
        extAuth: {
          conditional: [
            {
              condition: "request.headers['x-tenant'] == 'a'",
              policy: { backendRef: { name: 'authz', port: 9000 }, grpc: {}, failureMode: 'FailOpen' },
            },
            { policy: { backendRef: { name: 'authz', port: 9000 }, http: { path: '"/check"' } } },
          ],
        },
        extProc: {
          conditional: [
            {
              condition: 'request.method == "POST"',
              policy: { backendRef: { name: 'proc', port: 9001 }, requestBodyMode: 'Buffered' },
            },
          ],
        },
      },
      svcs,
      {
        extAuthz: {
          conditional: [
            {
              grpc: { host: `authz.${NS}.svc.cluster.local:9000` },
              failureMode: 'failOpen',
              condition: "request.headers['x-tenant'] == 'a'",
            },
            {
              http: { host: `authz.${NS}.svc.cluster.local:9000`, path: '"/check"' },
              failureMode: 'failClosed',
            },
          ],
        },
        extProc: {
          conditional: [
            {
              host: `proc.${NS}.svc.cluster.local:9001`,
              failureMode: 'failClosed',
              processingOptions: { requestBodyMode: 'buffered', responseBodyMode: 'none' },
              condition: 'request.method == "POST"',
            },
          ],
        },
      },
    );
    // the second entry's backendRef names no port: nothing to call, so no request gets through
    traffic(
      {
        extAuth: {
          conditional: [
            { condition: 'true', policy: { backendRef: { name: 'authz', port: 9000 }, grpc: {} } },
            { policy: { backendRef: { name: 'authz', kind: 'Other', group: 'x.dev' }, grpc: {} } },
          ],
        },
      },
      svcs,
      {
        authorization: DENY_ALL,
        extAuthz: {
          conditional: [
            {
              grpc: { host: `authz.${NS}.svc.cluster.local:9000` },
              failureMode: 'failClosed',
              condition: 'true',
            },
          ],
        },
      },
      [
        'traffic.extAuth.conditional[1].policy.backendRef: backendRef kind "x.dev/Other" is not supported here; use a Service',
        'traffic.extAuth.conditional[1].policy: no authorization service to call: every request is denied',
      ],
    );
  });

  test('rateLimit: local entries become token buckets, global ones remote calls; an entry with one kind keeps later entries of the other from applying', () => {
    traffic(
      {
        rateLimit: {
          conditional: [
            {
              condition: "request.path == '/a'",
              policy: { local: [{ requests: 10, unit: 'Seconds', burst: 5 }] },
            },
            {
              condition: "request.path == '/b'",
              policy: {
                global: {
                  backendRef: { name: 'rl', port: 8081 },
                  domain: 'gw',
                  descriptors: [{ entries: [{ name: 'u', expression: 'jwt.sub' }] }],
                },
              },
            },
            {
              policy: {
                local: [
                  { tokens: 1000, unit: 'Minutes' },
                  { requests: 1, unit: 'Hours' },
                ],
                global: {
                  backendRef: { name: 'rl', port: 8081 },
                  domain: 'gw',
                  descriptors: [{ entries: [{ name: 'p', expression: 'request.path' }] }],
                },
              },
            },
          ],
        },
      },
      [service('rl', [{ port: 8081 }])],
      {
        localRateLimit: {
          conditional: [
            {
              maxTokens: 15,
              tokensPerFill: 10,
              fillInterval: '1s',
              type: 'requests',
              condition: "request.path == '/a'",
            },
            // the fallback: not where the /b entry (global only) applies
            {
              maxTokens: 1000,
              tokensPerFill: 1000,
              fillInterval: '1m',
              type: 'tokens',
              condition: "!(request.path == '/b')",
            },
          ],
        },
        remoteRateLimit: {
          conditional: [
            {
              host: `rl.${NS}.svc.cluster.local:8081`,
              domain: 'gw',
              descriptors: [{ entries: [{ key: 'u', value: 'jwt.sub' }], type: 'requests' }],
              failureMode: 'failClosed',
              condition: "!(request.path == '/a') && (request.path == '/b')",
            },
            {
              host: `rl.${NS}.svc.cluster.local:8081`,
              domain: 'gw',
              descriptors: [{ entries: [{ key: 'p', value: 'request.path' }], type: 'requests' }],
              failureMode: 'failClosed',
              condition: "!(request.path == '/a')",
            },
          ],
        },
      },
      [
        'traffic.rateLimit.conditional[2].policy.local: a conditional entry takes one local limit in this build: only the first applies',
      ],
    );
  });

  test('transformation: each entry checked and mapped as the plain form', () => {
    traffic(
      {
        transformation: {
          conditional: [
            {
              condition: "request.path.startsWith('/v1')",
              policy: { request: { set: [{ name: 'x-v', value: '"1"' }] } },
            },
            { policy: { response: { remove: ['server'] } } },
          ],
        },
      },
      [],
      {
        transformations: {
          conditional: [
            { request: { set: { 'x-v': '"1"' } }, condition: "request.path.startsWith('/v1')" },
            { response: { remove: ['server'] } },
          ],
        },
      },
    );
  });

  test("a condition that does not compile, or an entry's own CEL, makes the policy invalid at its CRD path", () => {
    const r = trafficPolicy(
      trafficSpec({
        directResponse: {
          conditional: [
            { condition: 'true', policy: { status: 200 } },
            { condition: 'request.path ==', policy: { status: 201, bodyExpression: '(' } },
          ],
        },
      }),
      NS,
      inMemoryLookup([]),
    );
    assert.deepEqual(
      r.invalid.map((p) => `${p.path.join('.')}: ${p.message.replace(/: .*/s, '')}`),
      [
        'spec.traffic.directResponse.conditional.1.condition: invalid CEL expression',
        'spec.traffic.directResponse.conditional.1.policy.bodyExpression: invalid CEL expression',
      ],
    );
  });
});

describe("@gw/api's checks, at the CRD's field paths", () => {
  const invalid = (r: { invalid: { path: readonly (string | number)[]; message: string }[] }) =>
    r.invalid.map((p) => `${p.path.join('.')}: ${p.message.replace(/: .*/s, '')}`);
  const svc = service('authz', [{ port: 9000 }]);

  test('traffic: authorization, token locations, ext_authz, rate limit descriptors, delay, users', () => {
    const r = trafficPolicy(
      trafficSpec({
        authorization: { policy: { matchExpressions: ['true', 'request.path.startsWith('] } },
        apiKeyAuthentication: { secretRef: { name: 'k' }, location: { expression: 'request.headers[' } },
        extAuth: {
          backendRef: { name: 'authz', port: 9000 },
          http: { path: 'nosuchvar', allowedRequestHeaders: [':authority'] },
        },
        rateLimit: {
          global: {
            backendRef: { name: 'authz', port: 9000 },
            domain: 'd',
            descriptors: [
              {
                entries: [
                  { name: 'a', expression: 'request.path' },
                  { name: 'b', expression: '(' },
                ],
              },
            ],
          },
        },
        delay: { duration: 'not a duration +' },
        basicAuthentication: { users: ['alice:$2y$05$tooshort'] },
      }),
      NS,
      inMemoryLookup([svc, secret('k', { a: 'key-a' })]),
    );
    assert.deepEqual(invalid(r), [
      'spec.traffic.authorization.policy.matchExpressions.1: invalid CEL expression',
      'spec.traffic.basicAuthentication.users.0: user alice',
      'spec.traffic.apiKeyAuthentication.location.expression: invalid CEL expression',
      'spec.traffic.extAuth.http.path: invalid CEL expression',
      'spec.traffic.extAuth.http.allowedRequestHeaders.0: pseudo-header :authority cannot be sent over HTTP',
      'spec.traffic.rateLimit.global.descriptors.0.entries.1.expression: invalid CEL expression',
      'spec.traffic.delay.duration: invalid CEL expression',
    ]);
  });

  test('ipAccessControl that is not addresses fails closed; a concurrency key that is not CEL is named', () => {
    const r = trafficPolicy(
      trafficSpec({
        ipAccessControl: { allow: ['10.0.0.0/33', '192.0.2.1'] },
        concurrencyLimit: [{ maxConcurrent: 1, key: 'jwt.sub +' }],
      }),
      NS,
      inMemoryLookup([]),
    );
    assert.deepEqual(invalid(r), [
      'spec.traffic.ipAccessControl.allow.0: expected an IP address or CIDR such as 10.0.0.0/8 or 2001:db8::/32, got "10.0.0.0/33"',
      'spec.traffic.concurrencyLimit.0.key: invalid CEL expression',
    ]);
  });

  test('an ext_authz without a Service to call is still checked', () => {
    const r = trafficPolicy(
      trafficSpec({
        extAuth: { backendRef: { group: 'x', kind: 'Y', name: 'n' }, grpc: { requestMetadata: { a: '(' } } },
      }),
      NS,
      inMemoryLookup([]),
    );
    assert.deepEqual(invalid(r), ['spec.traffic.extAuth.grpc.requestMetadata.a: invalid CEL expression']);
    assert.deepEqual(r.policies, { authorization: denyAll });
  });

  test('frontend: network authorization and access log attributes', () => {
    const r = frontendPolicy(
      frontendSpec({
        networkAuthorization: {
          policy: { matchExpressions: ['cidr("10.0.0.0/8").containsIP(source.address) &&'] },
        },
        accessLog: { filter: 'true', attributes: { add: [{ name: 'u', expression: 'jwt.' }] } },
      }),
      NS,
      inMemoryLookup([]),
    );
    assert.deepEqual(invalid(r), [
      'spec.frontend.networkAuthorization.policy.matchExpressions.0: invalid CEL expression',
      'spec.frontend.accessLog.attributes.add.0.expression: invalid CEL expression',
    ]);
  });
});

describe('inMemoryLookup', () => {
  test('get by kind, namespace and name; list sorted, optionally by namespace; cluster-scoped under ""', () => {
    const ns: KubeObject = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'apps' } };
    const l = inMemoryLookup([service('b', [], 'x'), service('a', [], 'y'), service('c', [], 'x'), ns]);
    assert.equal(l.get('Service', 'x', 'c')?.metadata.name, 'c');
    assert.equal(l.get('Service', 'y', 'c'), undefined);
    assert.equal(l.get('Namespace', '', 'apps'), ns);
    assert.deepEqual(
      l.list('Service').map((o) => `${o.metadata.namespace}/${o.metadata.name}`),
      ['x/b', 'x/c', 'y/a'],
    );
    assert.deepEqual(
      l.list('Service', 'x').map((o) => o.metadata.name),
      ['b', 'c'],
    );
    assert.deepEqual(l.list('Secret'), []);
  });
});

describe("agentgateway's field names (issue 16): translated, or refused by name", () => {
  test('frontend: HTTP/2 sizes (numbers and quantities) and maxConnectionDuration become the standalone numbers; metrics labels; http1HeaderCase; connect Tunnel', () => {
    const r = frontendPolicy(
      frontendSpec({
        http: {
          http2WindowSize: '1Mi',
          http2ConnectionWindowSize: 4194304,
          http2FrameSize: '32Ki',
          http2MaxHeaderSize: 16384,
          maxConnectionDuration: '10m',
          http1HeaderCase: 'Preserve',
        },
        proxyProtocol: {},
        connect: { mode: 'Tunnel' },
        metrics: { attributes: { add: [{ name: 'tenant', expression: 'request.path' }] } },
      }),
      NS,
      inMemoryLookup([]),
    );
    assert.deepEqual(r.policies, {
      http: {
        http2WindowSize: 1048576,
        http2ConnectionWindowSize: 4194304,
        http2FrameSize: 32768,
        http2MaxHeaderSize: 16384,
        maxConnectionDuration: '10m',
        http1HeaderCase: 'preserve',
      },
      metrics: { fields: { add: { tenant: 'request.path' } } },
      // the CRD's defaults: V2, Strict
      proxyProtocol: { version: 'v2', mode: 'strict' },
      connect: { mode: 'tunnel' },
    });
    assert.ok(FrontendPolicies.safeParse(r.policies).success);
    assert.deepEqual(r.invalid, []);
    assert.deepEqual(r.problems, []);
    for (const [mode, want] of [
      ['Route', 'route'],
      ['Deny', 'deny'],
    ] as const) {
      const c = frontendPolicy(frontendSpec({ connect: { mode } }), NS, inMemoryLookup([]));
      assert.deepEqual([c.policies, c.problems], [{ connect: { mode: want } }, []]);
      assert.ok(FrontendPolicies.safeParse(c.policies).success);
    }
  });

  test('frontend.metrics: a label that is not a Prometheus name, one gw sets, and bad CEL are Invalid at the entry', () => {
    const r = frontendPolicy(
      frontendSpec({
        metrics: {
          attributes: {
            add: [
              { name: 'team-name', expression: '"a"' },
              { name: 'route', expression: '"b"' },
              { name: 'ok', expression: 'request.(' },
              { name: 'env', expression: '"prod"' },
            ],
          },
        },
      }),
      NS,
      inMemoryLookup([]),
    );
    assert.deepEqual(
      r.invalid.map((p) => [p.path.join('.'), p.message.split(':')[0]]),
      [
        [
          'spec.frontend.metrics.attributes.add.0',
          '"team-name" is not a Prometheus label name (letters, digits and _, not first a digit)',
        ],
        ['spec.frontend.metrics.attributes.add.1', '"route" is a label gw sets itself'],
        ['spec.frontend.metrics.attributes.add.2', r.invalid[2]?.message.split(':')[0]],
      ],
    );
    assert.match(r.invalid[2]?.message ?? '', /CEL/i);
  });

  test('traffic: a direct response with CEL headers and body, a descriptor unit, a JWKS path, transformation metadata', () => {
    traffic(
      {
        directResponse: {
          status: 200,
          bodyExpression: 'request.path',
          headers: [{ name: 'content-type', value: '"text/plain"' }],
        },
        rateLimit: {
          global: {
            backendRef: { name: 'rl', port: 8081 },
            domain: 'gw',
            descriptors: [{ entries: [{ name: 'u', expression: 'jwt.sub' }], unit: 'Tokens' }],
          },
        },
        jwtAuthentication: {
          providers: [
            { issuer: 'i', jwks: { remote: { backendRef: { name: 'idp', port: 8080 }, jwksPath: '/keys' } } },
          ],
        },
        transformation: { request: { metadata: { tenant: "request.headers['x-tenant']" } } },
      },
      [service('rl', [{ port: 8081 }]), service('idp', [{ port: 8080 }])],
      {
        jwtAuth: {
          mode: 'strict',
          providers: [{ issuer: 'i', jwks: { url: `http://idp.${NS}.svc.cluster.local:8080/keys` } }],
          preserveToken: false,
        },
        remoteRateLimit: {
          host: `rl.${NS}.svc.cluster.local:8081`,
          domain: 'gw',
          descriptors: [{ entries: [{ key: 'u', value: 'jwt.sub' }], type: 'tokens' }],
          failureMode: 'failClosed',
        },
        transformations: { request: { metadata: { tenant: "request.headers['x-tenant']" } } },
        directResponse: {
          status: 200,
          bodyExpression: 'request.path',
          headers: { 'content-type': '"text/plain"' },
        },
      },
    );
  });

  test('traffic: hostRewrite and the retry conditions carry over', () => {
    traffic(
      {
        retry: { codes: [503], condition: 'response.code == 429', precondition: 'request.method == "GET"' },
        hostRewrite: { mode: 'None' },
      },
      [],
      {
        retry: {
          attempts: 1,
          codes: [503],
          condition: 'response.code == 429',
          precondition: 'request.method == "GET"',
        },
        hostRewrite: { mode: 'none' },
      },
    );
  });

  test('services by url: TLS for https (extAuth, extProc, the rate limit service)', () => {
    traffic(
      {
        extAuth: { url: 'https://authz.example.com', grpc: {} },
        extProc: { url: 'http://proc.example:9000' },
        rateLimit: {
          global: {
            url: 'http://rls.example:8081',
            domain: 'gw',
            descriptors: [{ entries: [{ name: 'k', expression: '"v"' }] }],
          },
        },
      },
      [],
      {
        extAuthz: {
          grpc: { host: 'authz.example.com:443' },
          failureMode: 'failClosed',
          policies: { backendTLS: {} },
        },
        extProc: {
          host: 'proc.example:9000',
          failureMode: 'failClosed',
          processingOptions: { requestBodyMode: 'none', responseBodyMode: 'none' },
        },
        remoteRateLimit: {
          host: 'rls.example:8081',
          domain: 'gw',
          descriptors: [{ entries: [{ key: 'k', value: '"v"' }], type: 'requests' }],
          failureMode: 'failClosed',
        },
      },
    );
    // An http extAuth url's path is not used, and said so; an https url of a gRPC service is TLS with
    // the system's roots.
    traffic(
      {
        extAuth: { url: 'http://authz.example/check', http: {} },
        extProc: { url: 'https://proc.example:9000' },
        rateLimit: {
          global: {
            url: 'https://rls.example',
            domain: 'gw',
            descriptors: [{ entries: [{ name: 'k', expression: '"v"' }] }],
          },
        },
      },
      [],
      {
        extAuthz: { http: { host: 'authz.example:80' }, failureMode: 'failClosed' },
        extProc: {
          host: 'proc.example:9000',
          policies: { backendTLS: {} },
          failureMode: 'failClosed',
          processingOptions: { requestBodyMode: 'none', responseBodyMode: 'none' },
        },
        remoteRateLimit: {
          host: 'rls.example:443',
          policies: { backendTLS: {} },
          domain: 'gw',
          descriptors: [{ entries: [{ key: 'k', value: '"v"' }], type: 'requests' }],
          failureMode: 'failClosed',
        },
      },
      ['traffic.extAuth.url: the url\'s path "/check" is not used: set http.path'],
    );
  });

  test('a backendRef in another namespace: called when a ReferenceGrant there allows GwPolicies, else named and not called', () => {
    const spec = { extAuth: { backendRef: { name: 'authz', namespace: 'other', port: 9000 }, grpc: {} } };
    traffic(spec, [service('authz', [{ port: 9000 }], 'other')], { authorization: DENY_ALL }, [
      'traffic.extAuth.backendRef: no ReferenceGrant in namespace other allows this GwPolicy to use service "authz"',
      'traffic.extAuth: no authorization service to call: every request is denied',
    ]);
    const grant = (kind: string, name?: string): KubeObject => ({
      apiVersion: 'gateway.networking.k8s.io/v1beta1',
      kind: 'ReferenceGrant',
      metadata: { name: `grant-${kind}`, namespace: 'other' },
      spec: {
        from: [{ group: 'gw.dev', kind, namespace: NS }],
        to: [{ group: '', kind: 'Service', ...(name ? { name } : {}) }],
      },
    });
    traffic(spec, [service('authz', [{ port: 9000 }], 'other'), grant('GwPolicy', 'authz')], {
      extAuthz: { grpc: { host: 'authz.other.svc.cluster.local:9000' }, failureMode: 'failClosed' },
    });
    // a grant for another kind, or another Service, does not do
    for (const g of [grant('GwBackend'), grant('GwPolicy', 'other-service')])
      traffic(spec, [service('authz', [{ port: 9000 }], 'other'), g], { authorization: DENY_ALL }, [
        'traffic.extAuth.backendRef: no ReferenceGrant in namespace other allows this GwPolicy to use service "authz"',
        'traffic.extAuth: no authorization service to call: every request is denied',
      ]);
  });

  test('extProc processingOptions: header and trailer modes pass through; FullDuplexStreamed is its default', () => {
    traffic(
      {
        extProc: {
          backendRef: { name: 'proc', port: 9000 },
          processingOptions: {
            requestBodyMode: 'Buffered',
            responseBodyMode: 'None',
            responseHeaderMode: 'Skip',
          },
        },
      },
      [service('proc', [{ port: 9000 }])],
      {
        extProc: {
          host: `proc.${NS}.svc.cluster.local:9000`,
          failureMode: 'failClosed',
          processingOptions: {
            requestBodyMode: 'buffered',
            responseBodyMode: 'none',
            requestHeaderMode: 'send',
            responseHeaderMode: 'skip',
            requestTrailerMode: 'send',
            responseTrailerMode: 'send',
          },
        },
      },
    );
    // processingOptions' defaults: FullDuplexStreamed both ways; allowModeOverride passes through.
    const r = trafficPolicy(
      trafficSpec({
        extProc: { backendRef: { name: 'proc', port: 9000 }, processingOptions: { allowModeOverride: true } },
      }),
      NS,
      inMemoryLookup([service('proc', [{ port: 9000 }])]),
    );
    assert.deepEqual(r.problems, []);
    assert.deepEqual((r.policies.extProc as { processingOptions?: unknown } | undefined)?.processingOptions, {
      requestBodyMode: 'fullDuplexStreamed',
      responseBodyMode: 'fullDuplexStreamed',
      requestHeaderMode: 'send',
      responseHeaderMode: 'send',
      requestTrailerMode: 'send',
      responseTrailerMode: 'send',
      allowModeOverride: true,
    });
  });

  test('backend: eviction and unhealthyCondition become passive health; guard scope, webhook failureMode and header matches; promptCaching; ai fields without support are named', () => {
    // backendPolicy directly: the ai policy rides on the result until resources.ts moves it into the providers
    const r = backendPolicy(
      backendSpec({
        health: { eviction: { consecutiveFailures: 3 }, unhealthyCondition: 'response.code >= 500' },
        ai: {
          promptGuard: {
            request: [
              {
                webhook: {
                  backendRef: { name: 'guard', port: 8000 },
                  failureMode: 'FailOpen',
                  forwardHeaderMatches: [
                    { name: 'x-user', value: '^a', type: 'RegularExpression' },
                    { name: 'x-team', value: 'red' },
                  ],
                },
                scope: ['Messages'],
              },
            ],
          },
          promptCaching: { cacheTools: true },
          modelAliases: { fast: 'gpt-4o-mini' },
        },
        extAuth: { backendRef: { name: 'guard', port: 8000 }, http: {} },
      }),
      NS,
      inMemoryLookup([service('guard', [{ port: 8000 }])]),
    );
    assert.deepEqual(r.policies.health, {
      unhealthyExpression: 'response.code >= 500',
      eviction: { consecutiveFailures: 3, duration: '3s' },
    });
    assert.deepEqual((r.policies as { ai?: unknown }).ai, {
      promptGuard: {
        request: [
          {
            webhook: {
              target: { host: `guard.${NS}.svc.cluster.local:8000` },
              forwardHeaderMatches: [
                { name: 'x-user', value: { regex: '^a' } },
                { name: 'x-team', value: { exact: 'red' } },
              ],
              failureMode: 'failOpen',
            },
            scope: ['messages'],
          },
        ],
      },
      // the CRD's defaults filled in
      promptCaching: {
        cacheSystem: true,
        cacheMessages: true,
        cacheTools: true,
        cacheMessageOffset: 0,
        minTokens: 1024,
      },
      modelAliases: { fast: 'gpt-4o-mini' },
    });
    // extAuth at the backend translates as the traffic form does
    assert.deepEqual(r.policies.extAuthz, {
      http: { host: `guard.${NS}.svc.cluster.local:8000` },
      failureMode: 'failClosed',
    });
    assert.deepEqual(r.problems, []);
  });

  test('backend: a regex guard without action masks, as agentgateway and a standalone file do', () => {
    const r = backend(
      backendSpec({ ai: { promptGuard: { request: [{ regex: { builtins: ['Ssn'] } }] } } }),
      [],
    );
    const guard = (r.policies as { ai?: { promptGuard?: { request: { regex: { action: string } }[] } } }).ai
      ?.promptGuard?.request[0];
    assert.equal(guard?.regex.action, 'mask');
    assert.deepEqual(r.problems, []);
  });

  test('backend: promptInjection and a raw webhook with its path and size floor become the standalone guards', () => {
    const r = backend(
      backendSpec({
        ai: {
          promptGuard: {
            request: [
              { promptInjection: { threshold: '0.6', action: 'Audit' }, scope: ['Messages', 'ToolOutput'] },
              { promptInjection: { action: 'Reject' } },
              {
                webhook: {
                  backendRef: { name: 'compressor', port: 8080 },
                  action: 'Enforce',
                  messageFormat: 'Raw',
                  path: '/compress',
                  minSizeBytes: 20000,
                },
              },
            ],
          },
        },
      }),
      [service('compressor', [{ port: 8080 }])],
    );
    assert.deepEqual((r.policies as { ai?: { promptGuard?: unknown } }).ai?.promptGuard, {
      request: [
        { promptInjection: { threshold: 0.6, action: 'audit' }, scope: ['messages', 'toolOutput'] },
        { promptInjection: { action: 'reject' } },
        {
          webhook: {
            target: { host: `compressor.${NS}.svc.cluster.local:8080` },
            messageFormat: 'raw',
            path: '/compress',
            minSizeBytes: 20000,
          },
        },
      ],
    });
    assert.deepEqual(r.problems, []);
  });
});
