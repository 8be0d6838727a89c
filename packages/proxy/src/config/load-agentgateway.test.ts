// agentgateway's spellings of the standalone config (issue 16): each loads into the same IR as gw's own
// form, and the variants this build does not implement are refused by name, at their line and field.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { ConfigError, keyExchangeGroupAvailable } from '@gw/api';
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
      '6:9 binds[0].listeners[0].routes[0].policies.extAuthz.host: set host (host:port of the authorization service), backend or service (missing field "host")',
    ]);
    const [grpcHeaders] = issues(withPolicies('        extAuthz: {host: a:1, includeRequestHeaders: [x-a]}'));
    assert.match(
      grpcHeaders as string,
      /extAuthz\.includeRequestHeaders: includeRequestHeaders with the grpc protocol .* not supported/,
    );
    const [mixed] = issues(withPolicies('        extAuthz: {host: a:1, grpc: {host: a:1}}'));
    assert.match(mixed as string, /extAuthz: use either host and protocol or gw's grpc\/http form/);
    const [status] = issues(
      withPolicies('        extAuthz: {host: a:1, failureMode: {denyWithStatus: 1000}}'),
    );
    assert.match(status as string, /extAuthz\.failureMode/);
    // the cache loads (ext-authz-http.test.ts); a ttl is a duration or CEL
    assert.ok(load(withPolicies('        extAuthz: {host: a:1, cache: {key: [request.path], ttl: 1m}}')));
    const [cache] = issues(
      withPolicies('        extAuthz: {host: a:1, cache: {key: [request.path], ttl: "1 +"}}'),
    );
    assert.match(cache as string, /^6:\d+ .*extAuthz\.cache\.ttl: invalid CEL expression/);
  });
});

describe('localRateLimit', () => {
  test('maxTokens and tokensPerFill default to 0, as agentgateway', () => {
    const r = route(withPolicies('        localRateLimit: [{maxTokens: 5, fillInterval: 1s}]'));
    assert.deepEqual(r?.policies.localRateLimit, [{ maxTokens: 5, tokensPerFill: 0, fillInterval: '1s' }]);
  });

  test('more per fill than the bucket holds is an error; the conditional form loads', () => {
    const [low] = issues(
      withPolicies('        localRateLimit: [{maxTokens: 1, tokensPerFill: 2, fillInterval: 1s}]'),
    );
    assert.match(
      low as string,
      /localRateLimit\[0\]\.maxTokens: maxTokens cannot be less than tokensPerFill/,
    );
    const r = route(
      withPolicies(
        '        localRateLimit: {conditional: [{condition: "true", maxTokens: 1, fillInterval: 1s}]}',
      ),
    );
    assert.deepEqual(r?.policies.localRateLimit, {
      conditional: [{ condition: 'true', maxTokens: 1, tokensPerFill: 0, fillInterval: '1s' }],
    });
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
    assert.equal((r?.policies.directResponse as { body?: string } | undefined)?.body, 'hi');
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

  test('HBONE listeners are refused by name; a bind without a port must be internal', () => {
    const [hbone] = issues('binds:\n- port: 9000\n  listeners:\n  - protocol: HBONE\n');
    assert.match(
      hbone as string,
      /^4:15 binds\[0\]\.listeners\[0\]\.protocol: the HBONE listener protocol is not supported/,
    );
    const [port] = issues('binds:\n- listeners:\n  - routes: [{backends: [{host: 127.0.0.1:9}]}]\n');
    assert.match(
      port as string,
      /binds\[0\]\.port: port is required \(only an internal bind goes without one\)/,
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

  test('a route without a namespace is in "default" for a target; a target naming nothing is a warning at its line', () => {
    const yaml = `binds:
- port: 8080
  listeners:
  - name: l
    routes:
    - {name: r1, backends: [{host: 127.0.0.1:9}]}
    - {name: r2, ruleName: only, backends: [{host: 127.0.0.1:9}]}
policies:
- target: {route: {name: r1, namespace: default}}
  policy: {authorization: {rules: ['false']}}
- target: {route: {name: r2, namespace: default, ruleName: only}}
  policy: {responseHeaderModifier: {set: {x-rule: "1"}}}
- target: {route: {name: r1, namespace: team}}
  policy: {timeout: {requestTimeout: 1s}}
- target: {route: nope}
  policy: {timeout: {requestTimeout: 1s}}
- target: {listener: bind/8080/nol}
  policy: {timeout: {requestTimeout: 1s}}
- target: {gateway: {gatewayName: web, gatewayNamespace: default}}
  policy: {timeout: {requestTimeout: 1s}}
- target: {backend: nob}
  policy: {backendTLS: {}}
`;
    const { ir, warnings } = loadConfigText('gw.yaml', yaml, process.cwd(), () => undefined);
    const routes = new Map(
      ir.binds.flatMap((b) => b.listeners.flatMap((l) => l.routes.map((r) => [r.name, r.policies]))),
    );
    // agentgateway's form of a target on a route of the file: the authorization is enforced
    assert.deepEqual(routes.get('r1')?.authorization, { rules: ['false'] });
    assert.equal(routes.get('r1')?.timeout, undefined, 'another namespace is another route');
    assert.deepEqual(routes.get('r2')?.responseHeaderModifier?.set, { 'x-rule': '1' });
    assert.deepEqual(
      warnings.map((w) => `${w.line}: ${w.path}: ${w.message.split(';')[0]}`),
      [
        '13: policies[2].target.route: no route "team/r1" in this config: the policy applies to nothing',
        '15: policies[3].target.route: no route "nope" in this config: the policy applies to nothing',
        '17: policies[4].target.listener: no listener "bind/8080/nol" in this config: the policy applies to nothing',
        '19: policies[5].target.gateway: no gateway "web" in this config: the policy applies to nothing',
        '21: policies[6].target.backend: no backend "nob" in this config: the policy applies to nothing',
      ],
    );
  });

  test('a backend target with section: one provider of a named ai backend (mcp targets: mcp/target-auth.test.ts)', () => {
    const { ir } = loadConfigText(
      'agw.yaml',
      `backends:
- name: llm
  ai:
    groups:
    - providers:
      - {name: primary, provider: {openAI: {}}, policies: {responseHeaderModifier: {set: {x-own: "1"}}}}
      - {name: spare, provider: {openAI: {}}}
policies:
- target: {backend: {backend: {name: llm, namespace: default, section: primary}}}
  policy: {requestHeaderModifier: {set: {x-section: "1"}}, responseHeaderModifier: {set: {x-own: "0"}}}
binds:
- port: 8080
  listeners:
  - routes: [{backends: [{backend: llm}]}]
`,
      process.cwd(),
    );
    const target = ir.binds[0]?.listeners[0]?.routes[0]?.backends[0]?.target;
    assert.equal(target?.kind, 'ai');
    const models = target?.kind === 'ai' ? target.models : [];
    const model = (entry: string) => models.find((m) => m.entry === entry);
    // the section's policies under the provider's own (a policy the provider sets is its own); the
    // other provider untouched
    assert.deepEqual(model('primary')?.requestHeaders?.set, { 'x-section': '1' });
    assert.deepEqual(model('primary')?.responseHeaders?.set, { 'x-own': '1' });
    assert.equal(model('spare')?.requestHeaders, undefined);
  });

  test("a gateway target by port: the gateway's listeners on that port, less specific than a listener's", () => {
    const yaml = `binds:
- port: 8080
  listeners:
  - {name: a, gatewayName: web, routes: [{name: ra, backends: [{host: 127.0.0.1:9}]}]}
  - {name: b, gatewayName: web, hostname: b.test, routes: [{name: rb, backends: [{host: 127.0.0.1:9}]}]}
  - {name: c, hostname: c.test, routes: [{name: rc, backends: [{host: 127.0.0.1:9}]}]}
- port: 9090
  listeners:
  - {name: d, gatewayName: web, routes: [{name: rd, backends: [{host: 127.0.0.1:9}]}]}
gateways:
  side:
    port: 7070
    listeners: [{name: main}]
routes:
- {name: rs, gateways: side, backends: [{host: 127.0.0.1:9}]}
policies:
- target: {gateway: {gatewayName: web, gatewayNamespace: default, port: 8080}}
  policy: {requestHeaderModifier: {set: {x-on: port}}, timeout: {requestTimeout: 7s}}
- target: {gateway: {gatewayName: web, gatewayNamespace: default, listenerName: b}}
  policy: {requestHeaderModifier: {set: {x-on: listener}}}
- target: {gateway: {gatewayName: side, gatewayNamespace: default, port: 7070}}
  policy: {timeout: {requestTimeout: 3s}}
`;
    const { ir, warnings } = loadConfigText('gw.yaml', yaml, process.cwd(), () => undefined);
    assert.deepEqual(warnings, []);
    const routes = new Map(
      ir.binds.flatMap((b) => b.listeners.flatMap((l) => l.routes.map((r) => [r.name, r.policies]))),
    );
    assert.deepEqual(routes.get('ra')?.requestHeaderModifier?.set, { 'x-on': 'port' });
    assert.equal(routes.get('ra')?.timeout?.requestTimeout, '7s');
    // the listener's own policy wins the field both set; the port's others still apply
    assert.deepEqual(routes.get('rb')?.requestHeaderModifier?.set, { 'x-on': 'listener' });
    assert.equal(routes.get('rb')?.timeout?.requestTimeout, '7s');
    // another gateway on the port, and the gateway's listener on another port, take nothing
    assert.equal(routes.get('rc')?.requestHeaderModifier, undefined);
    assert.equal(routes.get('rd')?.requestHeaderModifier, undefined);
    assert.equal(routes.get('rs')?.timeout?.requestTimeout, '3s');
  });

  test('a gateway target by port: on a port the gateway has no listener, a warning; with listenerName, an error', () => {
    const base = `binds:
- port: 8080
  listeners: [{name: a, routes: [{backends: [{host: 127.0.0.1:9}]}]}]
policies:
`;
    const { warnings } = loadConfigText(
      'gw.yaml',
      `${base}- target: {gateway: {gatewayName: bind/8080, gatewayNamespace: default, port: 9999}}\n  policy: {timeout: {requestTimeout: 1s}}\n`,
      process.cwd(),
      () => undefined,
    );
    assert.deepEqual(
      warnings.map((w) => `${w.line}: ${w.path}: ${w.message}`),
      [
        '5: policies[0].target.gateway.port: gateway "bind/8080" has no listener on port 9999: the policy applies to nothing',
      ],
    );
    const [both] = issues(
      `${base}- target: {gateway: {gatewayName: bind/8080, gatewayNamespace: default, listenerName: a, port: 8080}}\n  policy: {}\n`,
    );
    assert.match(both as string, /policies\[0\]\.target\.gateway\.port: set one of listenerName and port/);
  });
});

describe('routeGroups', () => {
  test('the routeGroup backend names a group of the top-level list (routing: routing/route-groups.test.ts)', () => {
    const [backend] = issues(
      'binds:\n- port: 8080\n  listeners:\n  - routes:\n    - backends: [{routeGroup: g}]\n',
    );
    assert.match(
      backend as string,
      /^5:\d+ binds\[0\]\.listeners\[0\]\.routes\[0\]\.backends\[0\]\.routeGroup: /,
    );
    assert.match(backend as string, /no routeGroup named "g"/);
  });
});

describe('every agentgateway field is accepted or refused by name (issue 16)', () => {
  const bind = (listener: string) => `binds:
- port: 8080
  listeners:
  - ${listener}
    routes: [{backends: [{host: 127.0.0.1:9}]}]
`;
  /** The one issue of `yaml`: at `path`, saying `what` is not supported by this build. */
  const refused = (yaml: string, path: string, what: string) => {
    const all = issues(yaml);
    const hit = all.find((i) => i.includes(` ${path}: `));
    assert.ok(hit, `no issue at ${path}: ${all.join('\n')}`);
    assert.match(hit, NOT_YET);
    assert.ok(hit.includes(what), `${hit} does not name ${what}`);
  };
  const routePolicy = (p: string) => withPolicies(`        ${p}`);
  const backendPolicy = (p: string) =>
    withPolicies('        timeout: {requestTimeout: 1s}', `          ${p}`);
  const R = 'binds[0].listeners[0].routes[0]';

  test('route policies', () => {
    // oidc loads (policies/oidc/oidc.test.ts); later agentgateway's allowWithoutSession does not
    refused(
      routePolicy(
        'oidc: {issuer: https://x, clientId: c, clientSecret: s, redirectURI: "https://gw.test/cb", allowWithoutSession: true}',
      ),
      `${R}.policies.oidc.allowWithoutSession`,
      'oidc.allowWithoutSession',
    );
    // ai on a route is its ai backends' policy (llm/llm-ai-routes.test.ts); to host backends, an error
    assert.match(
      issues(routePolicy('ai: {}')).join('\n'),
      /routes\[0\]\.policies\.ai: ai applies to routes whose backends are ai backends/,
    );
    // agentgateway answers 500 to every request of such a route; here it is the file's error
    assert.match(
      issues(routePolicy('directResponse: {status: 200, body: a, bodyExpression: \'"b"\'}')).join('\n'),
      /policies\.directResponse\.bodyExpression: set one of body and bodyExpression/,
    );
    // the conditional forms of directResponse, extAuthz, extProc and the rate limits load
    // (policies/conditional.test.ts)
    // retry's condition and precondition load (policies/retry/retry.test.ts runs them), codes may be
    // empty beside a condition, as agentgateway takes it
    const retry = route(routePolicy('retry: {codes: [], condition: "true", precondition: "true"}'))?.policies
      ?.retry;
    assert.deepEqual(retry, { attempts: 1, codes: [], condition: 'true', precondition: 'true' });
    const rrl = (extra: string, d = '') =>
      routePolicy(
        `remoteRateLimit: {host: rl:1, domain: d, descriptors: [{entries: [{key: k, value: '"v"'}]${d}}]${extra}}`,
      );
    // by backend reference or by Service: loads against a top-level host backend or a Service of
    // services (remote-rate-limit.test.ts, policies/service-ref.test.ts); one of them, with host
    assert.match(
      issues(rrl(', service: {name: a/b, port: 1}')).join('\n'),
      /remoteRateLimit\.service: set one of host, backend and service, not host and service/,
    );
    assert.match(
      issues(rrl(', backend: b')).join('\n'),
      /remoteRateLimit\.backend: set one of host, backend and service, not host and backend/,
    );
    // the service's backendTLS is taken (remote-rate-limit-tls.test.ts); its other policies are not
    refused(
      rrl(', policies: {tcp: {}}'),
      `${R}.policies.remoteRateLimit.policies.tcp`,
      'tcp on the remoteRateLimit service',
    );
    // cost and limitOverride are CEL text (remote-rate-limit.test.ts runs them); a bare number is not,
    // as agentgateway says too.
    const d = route(rrl('', `, cost: '2', limitOverride: '{"unit": "minute", "requestsPerUnit": 5}'`))
      ?.policies?.remoteRateLimit as { descriptors: { cost?: string; limitOverride?: string }[] };
    assert.equal(d.descriptors[0]?.cost, '2');
    assert.equal(d.descriptors[0]?.limitOverride, '{"unit": "minute", "requestsPerUnit": 5}');
    assert.match(
      issues(rrl('', ', cost: 2')).join('\n'),
      /remoteRateLimit\.descriptors\[0\]\.cost: Invalid input: expected string, received number/,
    );
    refused(routePolicy('backendTLS: {spiffe: {}}'), `${R}.policies.backendTLS.spiffe`, 'backendTLS spiffe');
  });

  test('backendAuth: credentials beside a form or alone; an ai provider takes every form', () => {
    const extra = '[{location: {header: {name: x-extra}}, key: e}]';
    const auth = (a: string) => route(routePolicy(`backendAuth: ${a}`))?.backends[0]?.policies.backendAuth;
    const withKey = auth(`{key: k, credentials: ${extra}}`);
    assert.ok(withKey && 'key' in withKey);
    assert.equal(withKey.key.value.reveal(), 'k');
    assert.deepEqual(
      withKey.credentials?.map((c) => [c.location, c.value.reveal()]),
      [[{ header: { name: 'x-extra' } }, 'e']],
    );
    const alone = auth(`{credentials: ${extra}}`);
    assert.deepEqual(Object.keys(alone ?? {}), ['credentials']);
    // a tunnel's proxy does not take them (a cloud guard's service does: guardrails-openai-moderation.test.ts)
    refused(
      withPolicies(
        `        backendTunnel: {proxy: {host: "p:3128"}, policies: {backendAuth: {key: k, credentials: ${extra}}}}`,
      ),
      `${R}.policies.backendTunnel.policies.backendAuth.credentials`,
      'backendAuth credentials',
    );
    const ai = (auth: string) =>
      `binds:\n- port: 8080\n  listeners:\n  - routes:\n    - backends:\n      - ai: {name: a, provider: {openAI: {}}, policies: {backendAuth: ${auth}}}\n`;
    const provider = (auth: string) => {
      const t = route(ai(auth))?.backends[0]?.target;
      assert.ok(t?.kind === 'ai');
      return t.models[0]?.provider;
    };
    // the key alone, in either form, is the provider's key; the other forms are the gateway's auth
    assert.equal(provider('{key: {value: sk-1}}')?.apiKey?.reveal(), 'sk-1');
    assert.equal(provider('{key: sk-2}')?.auth, undefined);
    // beside the provider's key, the extra credentials are the gateway's to write
    const both = provider(`{key: sk-3, credentials: ${extra}}`);
    assert.equal(both?.apiKey?.reveal(), 'sk-3');
    assert.deepEqual(Object.keys(both?.auth ?? {}), ['credentials']);
    assert.deepEqual(provider('{passthrough: {}}')?.auth, { passthrough: {} });
    assert.ok(provider('{gcp: {}}')?.auth && 'gcp' in (provider('{gcp: {}}')?.auth ?? {}));
    const located = provider('{key: {value: k, location: {header: {name: x}}}}')?.auth;
    assert.ok(located && 'key' in located && located.key.location !== undefined);
  });

  test('backend policies and backend kinds', () => {
    // inferenceRouting loads on service backends (upstream/inference-routing.test.ts)
    assert.throws(
      () => load(backendPolicy('inferenceRouting: {endpointPicker: {host: "127.0.0.1:9002"}}')),
      /policies\.inferenceRouting: inferenceRouting picks one of the endpoints of a service backend; a host backend has none/,
    );
    // sessionAffinity loads on ai backends (upstream/backends/ai/session-affinity.test.ts)
    assert.throws(
      () => load(backendPolicy('sessionAffinity: {source: request.path}')),
      /policies\.sessionAffinity: sessionAffinity chooses among an ai backend's providers; a host backend has one endpoint/,
    );
    const backend = (b: string) =>
      `binds:\n- port: 8080\n  listeners:\n  - routes:\n    - backends: [${b}]\n`;
    // internal and invalid load (e2e/internal-backend.test.ts, upstream/backends/invalid/)
    assert.deepEqual(
      load(
        backend('{internal: forward}, {internal: config_dump}, {invalid: null}'),
      ).binds[0]?.listeners[0]?.routes[0]?.backends.map((b) => b.target),
      [
        { kind: 'internal', anyHost: true },
        { kind: 'internal', path: '/config_dump', anyHost: true },
        { kind: 'invalid' },
      ],
    );
    assert.throws(
      () => load(backend('{internal: "/logging?level=debug"}')),
      /backends\[0\]\.internal: expected forward or an admin path without a query/,
    );
    // a service backend loads against the top-level services (upstream/service-backend.test.ts)
    assert.throws(
      () => load(backend('{service: {name: a/b, port: 80}}')),
      /backends\[0\]\.service\.name: no service "a\/b" in services \(there are none\)/,
    );
    // dynamic.target loads (upstream/dynamic-target.test.ts)
    assert.ok(load(backend('{dynamic: {target: \'"a:1"\'}}')));
    // the copilot provider loads (llm/llm-copilot.test.ts)
    assert.ok(load(backend('{ai: {name: a, provider: {copilot: {}}, policies: {backendAuth: copilot}}}')));
    // OpenAI's inline moderation loads into the provider's settings (llm/llm-openai-moderation.test.ts)
    assert.throws(
      () =>
        load(backend('{ai: {name: a, provider: {openAI: {moderation: {policy: {input: {mode: Block}}}}}}}')),
      /backends\[0\]\.ai\.provider\.openAI\.moderation\.policy\.input\.mode/,
    );
  });

  test('binds, listeners and their tls', () => {
    // internal binds and tunnelProtocol connect (server/connect-tunnel.test.ts runs them)
    const tunnels = load(
      'binds:\n- port: 3128\n  tunnelProtocol: connect\n  listeners: [{}]\n- port: 443\n  mode: internal\n  listeners: [{}]\n- mode: internal\n  listeners: [{}]\n',
    );
    assert.deepEqual(
      tunnels.binds.map((b) => [b.key, b.port, b.tunnel, b.internal, b.listeners[0]?.gateway]),
      [
        [':::3128', 3128, true, undefined, 'bind/3128'],
        ['internal:443', 443, undefined, true, 'bind/443'],
        ['internal:*', 0, undefined, true, 'bind/internal'],
      ],
    );
    assert.match(
      issues('binds:\n- port: 443\n  mode: internal\n  address: 127.0.0.1\n  listeners: [{}]\n').join('\n'),
      /binds\[0\]\.address: an internal bind listens on no address/,
    );
    assert.match(
      issues(
        'binds:\n- port: 3128\n  tunnelProtocol: connect\n  listeners: [{protocol: TCP, tcpRoutes: []}]\n',
      ).join('\n'),
      /binds\[0\]\.listeners\[0\]\.protocol: tunnelProtocol connect takes HTTP or HTTPS listeners/,
    );
    refused(
      `binds:\n- port: 8080\n  tunnelProtocol: proxy\n  listeners: []\n`,
      'binds[0].tunnelProtocol',
      'tunnelProtocol',
    );
    const ok = load(
      `binds:\n- port: 8080\n  mode: standard\n  tunnelProtocol: direct\n  listeners:\n  - routes: [{backends: [{host: 127.0.0.1:9}]}]\n`,
    );
    assert.equal(ok.binds[0]?.port, 8080);
    // a tcp route's dynamic backend loads (server/tcp-dynamic.test.ts runs it)
    assert.deepEqual(
      load(
        'binds:\n- port: 8080\n  listeners:\n  - protocol: TLS\n    tcpRoutes: [{backends: [{dynamic: {}}]}]\n',
      ).binds[0]?.listeners[0]?.tcpRoutes?.[0]?.backends[0]?.target,
      { kind: 'dynamic' },
    );
    refused(
      bind('tls: {cert: c, key: k, mode: dynamicCa}\n    protocol: HTTPS\n   '),
      'binds[0].listeners[0].tls.mode',
      'tls mode dynamicCa',
    );
    refused(
      bind('tls: {cert: c, key: k, spiffe: {}}\n    protocol: HTTPS\n   '),
      'binds[0].listeners[0].tls.spiffe',
      'spiffe',
    );
  });

  test('config, frontendPolicies, targeted policies and ui', () => {
    const rest = 'binds: []\n';
    refused(`config: {hbone: {}}\n${rest}`, 'config.hbone', 'config.hbone');
    refused(`config: {histograms: native}\n${rest}`, 'config.histograms', 'config.histograms native');
    // enableIpv6 and dns.lookupFamily load (upstream/dns.test.ts)
    refused(`config: {dns: {edns0: true}}\n${rest}`, 'config.dns.edns0', 'config.dns.edns0');
    refused(
      `config: {logging: {database: {url: "sqlite:x"}}}\n${rest}`,
      'config.logging.database',
      'config.logging.database',
    );
    // tls.alpn loads (server/downstream-limits.test.ts); an id that is not printable ASCII is named
    assert.throws(
      () => load(`frontendPolicies: {tls: {alpn: [h2, "http 1"]}}\n${rest}`),
      /frontendPolicies\.tls\.alpn\[1\]: .*printable ASCII/,
    );
    // tls.handshakeTimeout loads (server/downstream-limits.test.ts)
    assert.equal(
      load(`frontendPolicies: {tls: {handshakeTimeout: 1s}}\n${withPolicies('        {}')}`).global.downstream
        .tlsHandshakeTimeoutMs,
      1000,
    );
    // tracing.backend, service and policies load (observability/otlp-collector.test.ts)
    assert.throws(
      () => load(`frontendPolicies: {tracing: {service: {name: ns/otel, port: 4317}}}\n${rest}`),
      // the file's only problem is that it has no listener
      (e: unknown) => e instanceof Error && /no listeners/.test(e.message) && !/tracing/.test(e.message),
    );
    // proxyProtocol and its other name load with agentgateway's defaults (server/proxy-protocol.test.ts
    // runs it); both at once is an error
    for (const k of ['proxyProtocol', 'proxy'])
      assert.deepEqual(
        load(`frontendPolicies: {${k}: {}}\n${withPolicies('        {}')}`).frontend.proxyProtocol,
        {
          version: 'v2',
          mode: 'strict',
        },
      );
    assert.match(
      issues(`frontendPolicies: {proxy: {}, proxyProtocol: {mode: optional}}\n${rest}`).join('\n'),
      /frontendPolicies\.proxy: set proxyProtocol or proxy \(another name of it\), not both/,
    );
    // tcp.keepalives loads with the backend keepalive's defaults (server/keepalive.test.ts runs it)
    assert.deepEqual(
      load(`frontendPolicies: {tcp: {keepalives: {interval: 30s}}}\n${withPolicies('        {}')}`).global
        .downstream.keepalive,
      { timeMs: 180_000, intervalMs: 30_000, retries: 9 },
    );
    // accessLog.otlp loads, by host, service or backend (observability/access-log-otlp.test.ts,
    // otlp-collector.test.ts)
    assert.throws(
      () => load(`frontendPolicies: {accessLog: {otlp: {service: {name: ns/otel, port: 4317}}}}\n${rest}`),
      (e: unknown) => e instanceof Error && /no listeners/.test(e.message) && !/otlp/.test(e.message),
    );
    // http1HeaderCase loads (server/header-case.test.ts runs it)
    assert.equal(
      load(`frontendPolicies: {http: {http1HeaderCase: preserve}}\n${withPolicies('        {}')}`).global
        .downstream.preserveHeaderCase,
      true,
    );
    // the HTTP/2 keepalive and the header count load (server/http2-keepalive.test.ts and
    // downstream-limits.test.ts run them)
    const downstream = load(
      `frontendPolicies: {http: {http2KeepaliveInterval: 30s, http2KeepaliveTimeout: 5s, http1MaxHeaders: 64}}\n${withPolicies('        {}')}`,
    ).global.downstream;
    assert.deepEqual(downstream.http2Keepalive, { intervalMs: 30_000, timeoutMs: 5_000 });
    assert.equal(downstream.http1MaxHeaders, 64);
    // the gateway phase targets gateways and listeners (routing/gateway-phase.test.ts runs it)
    assert.throws(
      () => load(`policies:\n- target: {route: r}\n  phase: gateway\n  policy: {}\n${rest}`),
      /policies\[0\]\.phase: the gateway phase runs before a route is chosen/,
    );
    load(
      `policies:\n- target: {route: r}\n  phase: route\n  policy: {}\nbinds:\n- port: 8080\n  listeners:\n  - routes: [{name: r, backends: [{host: 127.0.0.1:9}]}]\n`,
    );
    refused(`ui: {policies: {}}\n${rest}`, 'ui.policies', 'ui policies');
    // a policy that targets a backend takes backend policies: a route's would never run there
    const toBackend = (policy: string) =>
      issues(
        `backends:\n- name: b\n  host: 127.0.0.1:9\npolicies:\n- target: {backend: b}\n  policy: ${policy}\nbinds:\n- port: 8080\n  listeners:\n  - routes: [{backends: [{backend: b}]}]\n`,
      ).map((i) => i.replace(/^\d+:\d+ /, ''));
    assert.deepEqual(toBackend('{cors: {allowOrigins: ["*"]}, retry: {attempts: 2, codes: [503]}}'), [
      'policies[0].policy.cors: cors is a route policy: a policy that targets a backend takes backend policies (target the route, gateway or listener)',
      'policies[0].policy.retry: retry is a route policy: a policy that targets a backend takes backend policies (target the route, gateway or listener)',
    ]);
    // backend policies load, authorization and extAuthz among them (policies/backend-authorization.test.ts)
    load(
      `backends:\n- name: b\n  host: 127.0.0.1:9\npolicies:\n- target: {backend: b}\n  policy: {requestHeaderModifier: {set: {x-a: b}}, backendAuth: {key: k}, authorization: {rules: ["true"]}}\nbinds:\n- port: 8080\n  listeners:\n  - routes: [{backends: [{backend: b}]}]\n`,
    );
  });
});

describe("agentgateway's newer value spellings", () => {
  const llm = (guard: string, extra = '') => `llm:
  models:
  - name: m
    provider: openAI
    params: {apiKey: k}
${extra}    guardrails: {request: [${guard}]}
`;
  const guards = (ir: ReturnType<typeof load>) =>
    JSON.parse(JSON.stringify(ir.binds[0]?.listeners[0]?.routes[0]?.backends[0]?.target)) as {
      models: { guards?: { request: { kind: string; audit?: boolean; settings: { audit?: boolean } }[] } }[];
    };
  test('backendTunnel mode auto and connect, as Auto and Connect', () => {
    for (const [mode, want] of [
      ['connect', 'Connect'],
      ['auto', 'Auto'],
      ['Connect', 'Connect'],
    ]) {
      const ir = load(
        llm(
          '{regex: {rules: [{pattern: x}]}}',
          `    backendTunnel: {proxy: {host: "127.0.0.1:3128"}, mode: ${mode}}\n`,
        ),
      );
      assert.match(JSON.stringify(ir), new RegExp(`"mode":"${want}"`), mode);
    }
  });

  test('webhook action reject (enforce), bedrockGuardrails action in lower case', () => {
    const hook = (action: string) =>
      guards(load(llm(`{webhook: {target: {host: "127.0.0.1:9000"}, action: ${action}}}`))).models[0]?.guards
        ?.request[0]?.settings.audit;
    assert.deepEqual([hook('reject'), hook('enforce'), hook('audit')], [false, false, true]);
    const bedrock = (action: string) =>
      guards(
        load(
          llm(
            `{bedrockGuardrails: {guardrailIdentifier: g1, guardrailVersion: "1", region: us-east-1, action: ${action}}}`,
          ),
        ),
      ).models[0]?.guards?.request[0]?.settings.audit;
    assert.deepEqual([bedrock('reject'), bedrock('audit'), bedrock('Audit')], [false, true, true]);
  });

  test('action on azureContentSafety, googleModelArmor and openAIModeration', () => {
    for (const guard of [
      '{azureContentSafety: {endpoint: a.cognitiveservices.azure.com, policies: {backendAuth: {key: k}}, action: audit}}',
      '{googleModelArmor: {templateId: t, projectId: p, policies: {backendAuth: {key: k}}, action: audit}}',
      '{openAIModeration: {action: audit}}',
    ]) {
      const g = guards(load(llm(guard))).models[0]?.guards?.request[0];
      assert.equal(g?.audit, true, guard);
    }
    assert.throws(() => load(llm('{openAIModeration: {action: Audit}}')), /openAIModeration\.action/);
  });
});

describe('listener tls (issue 16)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-tls-'));
  const cert = join(dir, 'c.pem');
  const key = join(dir, 'k.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '2',
      '-subj',
      '/CN=gw.test',
    ],
    { stdio: 'ignore' },
  );
  after(() => rmSync(dir, { recursive: true, force: true }));
  const tlsBind = (fields: string, port = 8443, more = '') => `- port: ${port}
  listeners:
  - protocol: HTTPS
    tls: {cert: ${cert}, key: ${key}, ${fields}}
    routes: [{backends: [{host: 127.0.0.1:9}]}]${more}
`;
  const T = 'binds[0].listeners[0].tls';

  test('both version spellings load the same; one of each', () => {
    const a = load(`binds:\n${tlsBind('minTlsVersion: TLS_V1_3, maxTlsVersion: TLS_V1_3')}`);
    const b = load(`binds:\n${tlsBind('minTLSVersion: TLS_V1_3, maxTLSVersion: TLS_V1_3')}`);
    assert.equal(a.binds[0]?.listeners[0]?.tls?.minVersion, 'TLSv1.3');
    assert.equal(a.binds[0]?.listeners[0]?.tls?.maxVersion, 'TLSv1.3');
    assert.equal(b.binds[0]?.listeners[0]?.tls?.minVersion, 'TLSv1.3');
    assert.match(
      issues(`binds:\n${tlsBind('minTLSVersion: TLS_V1_2, minTlsVersion: TLS_V1_3')}`).join('\n'),
      new RegExp(
        `${T.replace(/[[\]]/g, '\\$&')}\\.minTlsVersion: set one of minTLSVersion and minTlsVersion`,
      ),
    );
  });

  test('cipher suites and key exchange groups: known names, a handshake that can happen', () => {
    const ok = load(
      `binds:\n${tlsBind('cipherSuites: [TLS13_AES_128_GCM_SHA256, ECDHE-RSA-AES128-GCM-SHA256], keyExchangeGroups: [P-256, X25519]')}`,
    );
    assert.deepEqual(
      ok.binds[0]?.listeners[0]?.tls?.ciphers,
      'TLS_AES_128_GCM_SHA256:ECDHE-RSA-AES128-GCM-SHA256',
    );
    assert.deepEqual(ok.binds[0]?.listeners[0]?.tls?.ecdhCurve, 'P-256:X25519');
    assert.match(
      issues(`binds:\n${tlsBind('cipherSuites: [RC4-MD5]')}`).join('\n'),
      /cipherSuites\[0\]: unknown cipher suite \(expected one of TLS13_AES_256_GCM_SHA384, /,
    );
    assert.match(
      issues(`binds:\n${tlsBind('keyExchangeGroups: [secp256r1]')}`).join('\n'),
      /keyExchangeGroups\[0\]: unknown key exchange group \(expected one of X25519, P-256, P-384, X25519_MLKEM768\)/,
    );
    assert.match(
      issues(
        `binds:\n${tlsBind('cipherSuites: [ECDHE-RSA-AES128-GCM-SHA256], minTlsVersion: TLS_V1_3')}`,
      ).join('\n'),
      /tls\.cipherSuites: no cipher suite of TLS 1\.3 is listed, and the minimum version is TLS 1\.3/,
    );
    if (!keyExchangeGroupAvailable('X25519_MLKEM768'))
      assert.match(
        issues(`binds:\n${tlsBind('keyExchangeGroups: [X25519_MLKEM768]')}`).join('\n'),
        /tls\.keyExchangeGroups: key exchange group X25519_MLKEM768 is not available in this build's TLS library/,
      );
  });

  test('listeners sharing a port agree on the handshake', () => {
    const two = `binds:\n- port: 8443\n  listeners:\n  - protocol: HTTPS\n    hostname: a.test\n    tls: {cert: ${cert}, key: ${key}, minTlsVersion: TLS_V1_3}\n    routes: [{backends: [{host: 127.0.0.1:9}]}]\n  - protocol: HTTPS\n    hostname: b.test\n    tls: {cert: ${cert}, key: ${key}}\n    routes: [{backends: [{host: 127.0.0.1:9}]}]\n`;
    assert.match(
      issues(two).join('\n'),
      /binds\[0\]\.listeners\[1\]\.tls: listener .* sets other TLS versions, cipherSuites, keyExchangeGroups or ALPN protocols than .* on port 8443/,
    );
  });
});

describe("gateways: bindAddress (agentgateway's name of address)", () => {
  test('the listener binds where it says; an address that is not an IP, or both names, are refused', () => {
    const ir = load(`gateways:
  default:
    port: 8080
    bindAddress: 127.0.0.1
routes:
- backends: [{host: 127.0.0.1:9}]
`);
    assert.equal(ir.binds[0]?.address, '127.0.0.1');
    assert.match(
      issues('gateways:\n  default:\n    port: 8080\n    bindAddress: localhost\n').join('\n'),
      /gateways\.default\.bindAddress/,
    );
    assert.match(
      issues('gateways:\n  default:\n    port: 8080\n    address: 0.0.0.0\n    bindAddress: ::1\n').join(
        '\n',
      ),
      /gateways\.default\.bindAddress: set address or bindAddress \(its agentgateway name\), not both/,
    );
  });
});

describe('gateways: the policies agentgateway writes on a gateway or its listener', () => {
  test('apply to every route attached, as policies there do; with listeners they belong on each', () => {
    const ir = load(`gateways:
  default:
    port: 8080
    cors: {allowOrigins: ["https://a.test"]}
    basicAuth: {users: ["u:$apr1$x$y"], authorizationLocation: {header: {name: x-auth, prefix: "Basic "}}}
routes:
- backends: [{host: 127.0.0.1:9}]
`);
    const r = ir.binds[0]?.listeners[0]?.routes[0];
    assert.deepEqual(r?.policies.cors?.allowOrigins, ['https://a.test']);
    assert.deepEqual(r?.policies.basicAuth?.location, { header: { name: 'x-auth', prefix: 'Basic ' } });
    const l = load(`gateways:
  default:
    port: 8080
    listeners:
    - name: main
      cors: {allowOrigins: ["https://b.test"]}
routes:
- backends: [{host: 127.0.0.1:9}]
`);
    assert.deepEqual(l.binds[0]?.listeners[0]?.routes[0]?.policies.cors?.allowOrigins, ['https://b.test']);
    assert.match(
      issues(
        `gateways:\n  default:\n    port: 8080\n    cors: {allowOrigins: ["*"]}\n    listeners: [{name: main}]\n`,
      ).join('\n'),
      /gateways\.default\.cors: cors belongs on each listener when listeners are set/,
    );
    // oidc on a gateway is the route policy's shape: its required fields are named
    assert.match(
      issues(`gateways:\n  default:\n    port: 8080\n    oidc: {}\n`).join('\n'),
      /gateways\.default\.oidc\.issuer: .*missing field "issuer"/,
    );
  });
});
