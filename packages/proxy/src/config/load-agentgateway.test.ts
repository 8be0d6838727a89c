// agentgateway's spellings of the standalone config (issue 16): each loads into the same IR as gw's own
// form, and the variants this build does not implement are refused by name, at their line and field.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError } from '@gw/api';
import { loadConfigText } from './load.ts';

const load = (yaml: string) => loadConfigText('gw.yaml', yaml, process.cwd(), () => undefined).ir;

function issues(yaml: string): string[] {
  try {
    load(yaml);
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${err}`);
    return err.issues.map((i) => `${i.line}:${i.column} ${i.path}: ${i.message}`);
  }
  assert.fail('config was accepted');
}

/** One route on port 8080 with these policies (YAML flow or block text indented for `policies:`). */
const withPolicies = (policies: string, backendPolicies = '') => `binds:
- port: 8080
  listeners:
  - routes:
    - policies:
${policies}
      backends:
      - host: 127.0.0.1:9${backendPolicies ? `\n        policies:\n${backendPolicies}` : ''}
`;
const route = (yaml: string) => load(yaml).binds[0]?.listeners[0]?.routes[0];
const NOT_YET = /is not supported by this build of gw yet/;

describe('extAuthz', () => {
  test('host with the default protocol is a gRPC check; allow/deny are failOpen/failClosed', () => {
    const r = route(
      withPolicies(`        extAuthz:
          host: authz:9000
          protocol: {grpc: {context: {team: a}, metadata: {user: 'request.headers["x-user"]'}}}
          failureMode: allow`),
    );
    assert.deepEqual(r?.policies.extAuthz, {
      grpc: {
        host: 'authz:9000',
        contextExtensions: { team: 'a' },
        requestMetadata: { user: 'request.headers["x-user"]' },
      },
      failureMode: 'failOpen',
    });
    const bare = route(withPolicies('        extAuthz: {host: authz:9000, failureMode: deny}'));
    assert.deepEqual(bare?.policies.extAuthz, { grpc: { host: 'authz:9000' }, failureMode: 'failClosed' });
  });

  test('protocol http maps to the HTTP check with its headers, path and metadata', () => {
    const r = route(
      withPolicies(`        extAuthz:
          host: authz:8000
          includeRequestHeaders: [authorization, x-team]
          protocol:
            http:
              path: '"/check" + request.path'
              includeResponseHeaders: [x-user]
              addRequestHeaders: {x-from: '"gw"'}
              metadata: {user: 'response.headers["x-user"]'}`),
    );
    assert.deepEqual(r?.policies.extAuthz, {
      http: {
        host: 'authz:8000',
        path: '"/check" + request.path',
        allowedRequestHeaders: ['authorization', 'x-team'],
        addRequestHeaders: { 'x-from': '"gw"' },
        allowedResponseHeaders: ['x-user'],
        responseMetadata: { user: 'response.headers["x-user"]' },
      },
    });
  });

  test("gw's grpc/http form stays an alias", () => {
    const r = route(withPolicies('        extAuthz: {grpc: {host: authz:9000}, failureMode: failOpen}'));
    assert.deepEqual(r?.policies.extAuthz, { grpc: { host: 'authz:9000' }, failureMode: 'failOpen' });
  });

  test('what is missing, mixed or not built is an error at its field', () => {
    assert.deepEqual(issues(withPolicies('        extAuthz: {protocol: {grpc: {}}}')), [
      '6:9 binds[0].listeners[0].routes[0].policies.extAuthz.host: set host (host:port of the authorization service) (missing field "host")',
    ]);
    const [grpcHeaders] = issues(withPolicies('        extAuthz: {host: a:1, includeRequestHeaders: [x-a]}'));
    assert.match(
      grpcHeaders as string,
      /extAuthz\.includeRequestHeaders: includeRequestHeaders with the grpc protocol .* not supported/,
    );
    const [mixed] = issues(withPolicies('        extAuthz: {host: a:1, grpc: {host: a:1}}'));
    assert.match(mixed as string, /extAuthz: use either host and protocol or gw's grpc\/http form/);
    const [status] = issues(
      withPolicies('        extAuthz: {host: a:1, failureMode: {denyWithStatus: 503}}'),
    );
    assert.match(status as string, /extAuthz\.failureMode/);
    const [body] = issues(
      withPolicies('        extAuthz: {host: a:1, includeRequestBody: {maxRequestBytes: 10}}'),
    );
    assert.match(
      body as string,
      /^6:\d+ .*extAuthz\.includeRequestBody: includeRequestBody is not supported by this build of gw yet$/,
    );
  });
});

describe('localRateLimit', () => {
  test('maxTokens and tokensPerFill default to 0, as agentgateway', () => {
    const r = route(withPolicies('        localRateLimit: [{maxTokens: 5, fillInterval: 1s}]'));
    assert.deepEqual(r?.policies.localRateLimit, [{ maxTokens: 5, tokensPerFill: 0, fillInterval: '1s' }]);
  });

  test('more per fill than the bucket holds, and the conditional form, are errors', () => {
    const [low] = issues(
      withPolicies('        localRateLimit: [{maxTokens: 1, tokensPerFill: 2, fillInterval: 1s}]'),
    );
    assert.match(
      low as string,
      /localRateLimit\[0\]\.maxTokens: maxTokens cannot be less than tokensPerFill/,
    );
    const [cond] = issues(withPolicies('        localRateLimit: {conditional: []}'));
    assert.match(cond as string, NOT_YET);
  });
});

describe('other policies', () => {
  test('jwtAuth takes an inline JWKS document as a string', () => {
    const jwks = JSON.stringify({ keys: [{ kty: 'oct', k: 'c2VjcmV0', kid: 'a', alg: 'HS256' }] });
    const r = route(withPolicies(`        jwtAuth: {issuer: me, jwks: '${jwks}'}`));
    assert.deepEqual(r?.policies.jwtAuth?.jwks, { inline: jwks });
  });

  test('directResponse body as bytes; bytes that are not UTF-8 are an error', () => {
    const r = route(withPolicies('        directResponse: {status: 200, body: [104, 105]}'));
    assert.equal(r?.policies.directResponse?.body, 'hi');
    const [bad] = issues(withPolicies('        directResponse: {status: 200, body: [255]}'));
    assert.match(bad as string, /directResponse\.body: expected the bytes of UTF-8 text/);
  });

  test('requestRedirect takes any scheme', () => {
    const r = route(withPolicies('        requestRedirect: {scheme: FTP}'));
    assert.equal(r?.policies.requestRedirect?.scheme, 'ftp');
    const [bad] = issues(withPolicies('        requestRedirect: {scheme: "1x"}'));
    assert.match(bad as string, /requestRedirect\.scheme: expected a URL scheme/);
  });

  test("http.version in agentgateway's spelling (HTTP/1.1, HTTP/2.0) or gw's (HTTP1, HTTP2)", () => {
    for (const [v, want] of [
      ['HTTP/1.1', 'HTTP1'],
      ['HTTP/1.0', 'HTTP1'],
      ['HTTP/2.0', 'HTTP2'],
      ['HTTP2', 'HTTP2'],
    ]) {
      const r = route(withPolicies('        cors: {}', `          http: {version: "${v}"}`));
      assert.equal(r?.backends[0]?.policies.http?.version, want, v);
    }
    const [h3] = issues(withPolicies('        cors: {}', '          http: {version: HTTP/3.0}'));
    assert.match(
      h3 as string,
      /policies\.http\.version: HTTP\/3\.0 is not supported by this build of gw yet/,
    );
    const [bad] = issues(withPolicies('        cors: {}', '          http: {version: "2"}'));
    assert.match(bad as string, /expected HTTP\/1\.1 or HTTP\/2\.0/);
  });

  test('mcpGuardrails processors may leave methods out (no method goes through them)', () => {
    const ir = load(`binds:
- port: 8080
  listeners:
  - routes:
    - backends:
      - mcp: {targets: [{name: t, mcp: {host: http://127.0.0.1:9/mcp}}]}
        policies:
          mcpGuardrails: {processors: [{host: 127.0.0.1:7000}]}
`);
    const target = ir.binds[0]?.listeners[0]?.routes[0]?.backends[0]?.target as {
      guardrails?: { methods: unknown }[];
    };
    assert.deepEqual(target.guardrails?.[0]?.methods, {});
  });

  test('mcpAuthentication ignores required claims it does not know, as agentgateway', () => {
    const r = route(
      withPolicies(
        '        mcpAuthentication: {issuer: https://idp, jwks: {url: https://idp/jwks}, jwtValidationOptions: {requiredClaims: [exp, iat]}}',
      ),
    );
    assert.deepEqual(r?.policies.mcpAuthentication?.jwtValidationOptions?.requiredClaims, ['exp']);
  });
});

describe('listeners, binds and targets', () => {
  test('tls without cert or key, and TLS 1.0/1.1, are errors naming the field', () => {
    const tls = (t: string) => `binds:
- port: 8443
  listeners:
  - protocol: HTTPS
    tls: ${t}
    routes: [{backends: [{host: 127.0.0.1:9}]}]
`;
    assert.deepEqual(issues(tls('{key: k.pem}')), ['5:5 binds[0].listeners[0].tls.cert: cert is required']);
    const [old] = issues(tls('{cert: c.pem, key: k.pem, minTLSVersion: TLS_V1_0}'));
    assert.match(
      old as string,
      /^5:\d+ binds\[0\]\.listeners\[0\]\.tls\.minTLSVersion: TLS 1\.0 and 1\.1 is not supported/,
    );
  });

  test('TCP, TLS and HBONE listeners and binds without a port are refused by name', () => {
    const [tcp] = issues('binds:\n- port: 9000\n  listeners:\n  - protocol: TCP\n');
    assert.match(
      tcp as string,
      /^4:15 binds\[0\]\.listeners\[0\]\.protocol: the TCP, TLS and HBONE listener protocols is not supported/,
    );
    const [port] = issues('binds:\n- listeners:\n  - routes: [{backends: [{host: 127.0.0.1:9}]}]\n');
    assert.match(
      port as string,
      /binds\[0\]\.port: port is required \(a bind without a port is not supported/,
    );
  });

  test("policies[].target in agentgateway's object forms", () => {
    const ir = load(`gateways:
  web:
    port: 8080
    listeners: [{name: main}]
routes:
- name: r
  namespace: team
  gateways: web
  backends: [{host: 127.0.0.1:9}]
policies:
- target: {gateway: {gatewayName: web, gatewayNamespace: default}}
  policy: {timeout: {requestTimeout: 5s}}
- target: {gateway: {gatewayName: web, gatewayNamespace: default, listenerName: main}}
  policy: {requestHeaderModifier: {set: {x-listener: "1"}}}
- target: {route: {name: r, namespace: team}}
  policy: {responseHeaderModifier: {set: {x-route: "1"}}}
`);
    const r = ir.binds[0]?.listeners[0]?.routes[0];
    assert.equal(r?.policies.timeout?.requestTimeout, '5s');
    assert.deepEqual(r?.policies.requestHeaderModifier?.set, { 'x-listener': '1' });
    assert.deepEqual(r?.policies.responseHeaderModifier?.set, { 'x-route': '1' });
    const [set] = issues('policies:\n- target: {listenerSet: {name: a, namespace: b}}\n  policy: {}\n');
    assert.match(set as string, NOT_YET);
  });
});

describe('routeGroups', () => {
  test('route delegation is refused by name: the top-level list and the routeGroup backend', () => {
    assert.deepEqual(issues('routeGroups: [{name: g, routes: []}]\nbinds: []\n'), [
      '1:1 routeGroups: routeGroups is not supported by this build of gw yet',
    ]);
    const [backend] = issues(
      'binds:\n- port: 8080\n  listeners:\n  - routes:\n    - backends: [{routeGroup: g}]\n',
    );
    assert.match(
      backend as string,
      /^5:\d+ binds\[0\]\.listeners\[0\]\.routes\[0\]\.backends\[0\]\.routeGroup: /,
    );
    assert.match(backend as string, NOT_YET);
  });
});
