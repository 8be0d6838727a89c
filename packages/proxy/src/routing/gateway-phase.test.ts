// agentgateway's gateway phase (`policies[].phase: gateway`): policies that run before a route is
// chosen, on every request to the gateway, listener or port they target. What they change picks the
// route (a header a transformation sets); what they refuse is refused even where no route matches;
// they run besides the route's own policies (both are enforced, and the route's rules see what the
// gateway phase found); the trace shows them as pre-routing. Against real echo upstreams.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ConfigError } from '@gw/api';
import { type FakeOpenAI, startFakeOpenAI, startUpstream, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { request } from 'undici';
import { loadConfigText } from '../config/load.ts';

let a: TestServer;
let b: TestServer;
let proxy: TestProxy;
let provider: FakeOpenAI;

const ROUTES = (a: number, b: number) => `    - name: tenant-a
      matches: [{headers: [{name: x-tenant, value: {exact: a}}]}]
      backends: [{host: "127.0.0.1:${a}"}]
    - name: tenant-b
      matches: [{headers: [{name: x-tenant, value: {exact: b}}]}]
      backends: [{host: "127.0.0.1:${b}"}]
    - name: admin
      matches: [{path: {pathPrefix: /admin}}]
      policies:
        authorization: {rules: ['apiKey.team == "ops"']}
        cors: {allowOrigins: ["https://admin.example"]}
      backends: [{host: "127.0.0.1:${a}"}]
`;
// the tenant is told by the path's first segment
const TENANT = `'request.path.startsWith("/a/") ? "a" : request.path.startsWith("/b/") ? "b" : "none"'`;

before(async () => {
  [a, b, provider] = await Promise.all([
    startUpstream('a'),
    startUpstream('b'),
    startFakeOpenAI({ name: 'openai', apiKey: 'sk-provider' }),
  ]);
  proxy = await startProxy(`config:
  adminAddr: "off"
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - gatewayName: edge
    name: main
    routes:
    - name: llm
      matches: [{path: {pathPrefix: /v1/}}]
      backends:
      - ai:
          name: openai
          provider: {openAI: {}}
          hostOverride: "127.0.0.1:${provider.port}"
          policies: {backendAuth: {key: sk-provider}}
${ROUTES(a.port, b.port)}  - gatewayName: edge
    name: legacy
    hostname: legacy.example
    # the same transformation in the route phase: it runs once a route is chosen, too late to pick one
    policies:
      transformations: {request: {set: {x-tenant: ${TENANT}}}}
    routes:
${ROUTES(a.port, b.port)}policies:
- name: browsers
  phase: gateway
  target: {gateway: edge}
  policy:
    cors: {allowOrigins: ["https://app.example"], allowMethods: [GET]}
- name: keys-and-tenants
  phase: gateway
  target: {listener: edge/main}
  policy:
    apiKey:
      keys:
        ops: {key: k-ops, metadata: {team: ops}}
        dev: {key: k-dev, metadata: {team: dev}}
    transformations: {request: {set: {x-tenant: ${TENANT}}}}
`);
});

after(async () => {
  await proxy?.close();
  await Promise.all([a?.close(), b?.close(), provider?.close()]);
});

/** The legacy listener: its own port (each listener of a port-0 bind gets one) and hostname. */
const LEGACY = { host: 'legacy.example' };
async function call(path: string, headers: Record<string, string> = {}, method = 'GET') {
  const r = await request(proxy.url(path, headers.host === LEGACY.host ? 1 : 0), { method, headers });
  const text = await r.body.text();
  return { status: r.statusCode, headers: r.headers, text };
}
const key = (k: string) => ({ authorization: `Bearer ${k}` });

describe('the gateway phase', () => {
  test('a header a gateway-phase transformation sets picks the route', async () => {
    const ra = await call('/a/orders', key('k-dev'));
    assert.equal(ra.status, 200);
    assert.equal(ra.headers['x-upstream'], 'a');
    assert.equal(JSON.parse(ra.text).headers['x-tenant'], 'a');
    const rb = await call('/b/orders', key('k-dev'));
    assert.equal(rb.status, 200);
    assert.equal(rb.headers['x-upstream'], 'b');
    // neither tenant: no route
    assert.equal((await call('/c/orders', key('k-dev'))).status, 404);
  });

  test('the same transformation in the route phase comes too late to pick a route', async () => {
    assert.equal((await call('/a/orders', LEGACY)).status, 404);
    // a client that names its tenant itself is routed, and the route phase then sets the header
    const r = await call('/a/orders', { ...LEGACY, 'x-tenant': 'b' });
    assert.equal(r.headers['x-upstream'], 'b');
    assert.equal(JSON.parse(r.text).headers['x-tenant'], 'a');
  });

  test('a request the gateway phase refuses is refused before routing, matched or not', async () => {
    const none = await call('/a/orders');
    assert.equal(none.status, 401);
    assert.equal((await call('/a/orders', key('wrong'))).status, 401);
    // no route matches /nowhere: the key is still asked for first
    assert.equal((await call('/nowhere')).status, 401);
    assert.equal((await call('/nowhere', key('k-dev'))).status, 404);
    // the listener without the gateway-phase key policy routes as before
    assert.equal((await call('/nowhere', LEGACY)).status, 404);
  });

  test("the route's own policies run as well, and see what the gateway phase found", async () => {
    assert.equal((await call('/admin', key('k-dev'))).status, 403);
    const ok = await call('/admin', key('k-ops'));
    assert.equal(ok.status, 200);
    // the key is taken off the request by the gateway phase, as in the route phase
    assert.equal(JSON.parse(ok.text).headers.authorization, undefined);
  });

  test("a refusal on an LLM route is in the client's API shape, though no route was chosen yet", async () => {
    const r = await request(proxy.url('/v1/chat/completions'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'Hello!' }] }),
    });
    assert.equal(r.statusCode, 401);
    assert.match(String(r.headers['content-type']), /application\/json/);
    const body = (await r.body.json()) as { error?: { message?: string } };
    assert.match(body.error?.message ?? '', /API key/);
    assert.equal(provider.seen.length, 0);
    // with a key, the tenant transformation leaves the request to the LLM route alone
    const ok = await request(proxy.url('/v1/chat/completions'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...key('k-dev') },
      body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'Hello!' }] }),
    });
    assert.equal(ok.statusCode, 200);
    await ok.body.dump();
  });

  test("a route's own cors wins over the gateway phase's, and Vary names Origin once", async () => {
    const r = await call('/admin', { ...key('k-ops'), origin: 'https://admin.example' });
    assert.equal(r.status, 200);
    assert.equal(r.headers['access-control-allow-origin'], 'https://admin.example');
    assert.equal(r.headers.vary, 'Origin');
  });

  test("a gateway's policies apply to its listeners, merged with each listener's own", async () => {
    // cors (on the gateway) answers a preflight before the key (on the listener) is asked for, on
    // any path, and on the listener that has no gateway-phase policy of its own
    for (const host of [undefined, LEGACY.host]) {
      const r = await call(
        '/nowhere',
        {
          origin: 'https://app.example',
          'access-control-request-method': 'GET',
          ...(host ? { host } : {}),
        },
        'OPTIONS',
      );
      assert.equal(r.status, 200, host);
      assert.equal(r.headers['access-control-allow-origin'], 'https://app.example', host);
    }
    const r = await call('/a/orders', { ...key('k-dev'), origin: 'https://app.example' });
    assert.equal(r.status, 200);
    assert.equal(r.headers['access-control-allow-origin'], 'https://app.example');
  });

  test('a trace shows the gateway-phase policies as pre-routing, before the route is chosen', async () => {
    const events = proxy.trace();
    await call('/b/orders', key('k-dev'));
    const all = (await events).map((e) => e.message);
    const names = all.map((m) => `${m.type}${m.phase ? `:${String(m.phase)}` : ''}`);
    const pre = names.indexOf('policy:pre-routing');
    const route = names.indexOf('routeSelection');
    assert.ok(pre !== -1 && route > pre, names.join(' '));
    assert.deepEqual(
      all.filter((m) => m.type === 'policy' && m.phase === 'pre-routing').map((m) => m.policy),
      ['cors', 'apiKey', 'transformations'],
    );
    // the request as the gateway phase left it, before the route was chosen
    const snap = all.find((m) => m.type === 'requestSnapshot' && m.stage === 'pre-routing policies');
    assert.ok(snap, names.join(' '));
    // what the phase runs, merged, before the first of it; the keys redacted
    const sel = names.indexOf('policySelection:pre-routing');
    assert.ok(sel !== -1 && sel < pre, names.join(' '));
    const effective = all[sel]?.effectivePolicy as Record<string, unknown>;
    assert.deepEqual(Object.keys(effective).sort(), ['apiKey', 'cors', 'transformations']);
    assert.ok(!JSON.stringify(effective).includes('k-dev'), JSON.stringify(effective.apiKey));
  });
});

describe('gateway-phase config', () => {
  const load = (policy: string) =>
    loadConfigText(
      'gw.yaml',
      `binds:\n- port: 0\n  listeners:\n  - gatewayName: edge\n    routes: [{name: r, backends: [{host: "127.0.0.1:1"}]}]\npolicies:\n- ${policy}\n`,
      process.cwd(),
    );
  const refused = (policy: string, field: string, reason: RegExp) =>
    assert.throws(
      () => load(policy),
      (e: unknown) => e instanceof ConfigError && e.message.includes(field) && reason.test(e.message),
      policy,
    );

  test('loads onto the listeners it targets', () => {
    const cfg = load('{phase: gateway, target: {gateway: edge}, policy: {cors: {allowOrigins: ["*"]}}}');
    const l = cfg.ir.binds[0]?.listeners[0];
    assert.deepEqual(Object.keys(l?.gatewayPhase ?? {}), ['cors']);
    // not merged into the route's
    assert.equal(l?.routes[0]?.policies.cors, undefined);
  });

  test('refuses a route target, a policy that does not run before routing, and inheritance', () => {
    refused(
      '{phase: gateway, target: {route: r}, policy: {cors: {allowOrigins: ["*"]}}}',
      'policies[0].phase',
      /not a route/,
    );
    refused(
      '{phase: gateway, target: {gateway: edge}, policy: {localRateLimit: [{maxTokens: 1, tokensPerFill: 1, fillInterval: 1s}]}}',
      'policies[0].policy.localRateLimit',
      /does not run in the gateway phase/,
    );
    refused(
      '{phase: gateway, inheritance: override, target: {gateway: edge}, policy: {cors: {allowOrigins: ["*"]}}}',
      'policies[0].inheritance',
      /route-phase/,
    );
  });

  test('refuses an expression that reads what only a route gives, but not in a response transformation', () => {
    refused(
      `{phase: gateway, target: {gateway: edge}, policy: {authorization: {rules: [{deny: 'route.name == "r"'}]}}}`,
      'policies[0].policy.authorization.rules[0]',
      /route has no value here: the gateway phase runs before a route is chosen/,
    );
    refused(
      `{phase: gateway, target: {gateway: edge}, policy: {transformations: {request: {set: {x-model: 'string(llmRequest.model)'}}}}}`,
      'policies[0].policy.transformations.request.set.x-model',
      /llmRequest has no value here/,
    );
    const cfg = load(
      `{phase: gateway, target: {gateway: edge}, policy: {transformations: {response: {set: {x-route: 'route.name'}}}}}`,
    );
    assert.ok(cfg.ir.binds[0]?.listeners[0]?.gatewayPhase?.transformations);
    // the same rule in the route phase is fine
    load(`{target: {gateway: edge}, policy: {authorization: {rules: [{deny: 'route.name == "r"'}]}}}`);
  });

  test('warns that a CONNECT tunnel is not routed through it', () => {
    const cfg = loadConfigText(
      'gw.yaml',
      `frontendPolicies: {connect: {mode: tunnel}}\nbinds:\n- port: 0\n  listeners:\n  - gatewayName: edge\n    routes: [{backends: [{host: "127.0.0.1:1"}]}]\npolicies:\n- {phase: gateway, target: {gateway: edge}, policy: {cors: {allowOrigins: ["*"]}}}\n`,
      process.cwd(),
    );
    assert.ok(
      cfg.warnings.some(
        (w) => /CONNECT tunnel .* is not routed/.test(w.message) && w.path === 'policies[0].phase',
      ),
      JSON.stringify(cfg.warnings),
    );
  });

  test('warns when its target names no listener', () => {
    const cfg = load('{phase: gateway, target: {gateway: nope}, policy: {cors: {allowOrigins: ["*"]}}}');
    assert.ok(
      cfg.warnings.some(
        (w) => /applies to nothing/.test(w.message) && w.path.startsWith('policies[0].target'),
      ),
      JSON.stringify(cfg.warnings),
    );
  });
});
