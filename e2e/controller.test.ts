// The control plane end to end, on the real API server (startKube): `bin/gw-controller` watches it,
// `bin/gw --xds-address … --gateway default/edge` takes its config from the controller (authenticated
// by a service-account token the API server issued and TokenReview checks), `kubectl apply` creates
// Gateway, HTTPRoute, GwBackend and GwPolicy as a user would, real HTTP goes through the proxy, status
// is read back with kubectl, and a policy change reaches traffic (the apply-to-effect time is printed).
// The API server rejects loopback endpoints, so the upstream is a static GwBackend on 127.0.0.1 (and
// the fake OpenAI provider behind an `ai` GwBackend is its host/port override).
// e2e/controller.kind.test.ts runs the same steps on a kind cluster (shared parts: support/controller-e2e.ts).
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { GoogleGenAI } from '@google/genai';
import {
  FAKE_REPLY,
  type FakeOpenAI,
  type KubeHarness,
  startFakeOpenAI,
  startKube,
  startUpstream,
  type TestServer,
} from '@gw/testkit';
import { rawUntil } from '@gw/testkit/http-client';
import { type FakeGemini, startFakeGemini } from '@gw/testkit/llm/gemini';
import OpenAI from 'openai';
import {
  expectConfigRejected,
  expectGatewayAndRouteStatus,
  expectGatewayClassAccepted,
  expectInvalidPolicyStatus,
  expectPolicyAcceptedAttached,
  gatewayYaml,
  httpGet,
  measurePolicyApplyToEffect,
  routeYaml,
  type Steps,
  untilPolicyAttached,
} from './support/controller-e2e.ts';
import {
  type ControllerProcess,
  kubectlOk,
  startController,
  startXdsProxy,
  untilWithLogs,
} from './support/controller-process.ts';
import { cleanupGw, freePort, type GwProcess } from './support/gw-process.ts';

let kube: KubeHarness;
let upstream: TestServer;
let provider: FakeOpenAI;
let gemini: FakeGemini;
let controller: ControllerProcess;
let proxyPort: number;
let gw: GwProcess;

const kubectl = kubectlOk(() => kube);
const until = untilWithLogs(() => [['controller log', controller?.log ?? []]]);
const get = (path = '/') => httpGet(proxyPort, path);
const steps: Steps = { ns: 'default', kubectl, until, get };

/** `bin/gw` in xDS mode for Gateway default/edge, presenting the token in `tokenFile`. */
const startProxy = (tokenFile: string, opts: { waitReady?: boolean } = {}) =>
  startXdsProxy(controller, tokenFile, opts);

const manifests = () => `${gatewayYaml('default', proxyPort)}
---
apiVersion: gw.dev/v1alpha1
kind: GwBackend
metadata: { name: echo, namespace: default }
spec:
  static: { host: 127.0.0.1, port: ${upstream.port} }
---${routeYaml('default', '{ group: gw.dev, kind: GwBackend, name: echo }')}`;

before(async () => {
  [kube, upstream, provider, gemini, proxyPort] = await Promise.all([
    startKube(),
    startUpstream('echo'),
    startFakeOpenAI({ name: 'openai', apiKey: 'sk-from-secret' }),
    startFakeGemini({ apiKey: 'AIza-gateway' }),
    freePort(),
  ]);
  controller = await startController(kube.kubeconfig, ['--enable-models']);
});

after(async () => {
  await cleanupGw();
  await controller?.stop();
  await upstream?.close();
  await provider?.close();
  await gemini?.close();
  await kube?.stop();
});

describe('controller + proxy on the real API server', () => {
  test('the controller creates its GatewayClass and accepts it', () => expectGatewayClassAccepted(steps));

  test('kubectl apply of Gateway, GwBackend and HTTPRoute: status is written and traffic flows', async () => {
    await kubectl(['apply', '--server-side', '-f', '-'], manifests());
    // the proxy's identity: a service account named after its Gateway, and a token the API server issues
    await kubectl(['create', 'serviceaccount', 'edge', '-n', 'default']);
    const token = (await kubectl(['create', 'token', 'edge', '-n', 'default'])).trim();
    const tokenFile = join(kube.dir, 'edge.token');
    writeFileSync(tokenFile, token);
    gw = await startProxy(tokenFile);
    const r = await until('traffic through the proxy', async () => {
      const x = await get('/hello').catch(() => undefined);
      return x?.status === 200 ? x : undefined;
    });
    assert.equal(r.headers['x-upstream'], 'echo');

    await expectGatewayAndRouteStatus(steps);
    assert.equal(
      await kubectl(['get', 'gwbackend', 'echo', '-o', 'jsonpath={.status.conditions[0].status}']),
      'True',
    );
  });

  test('a GwPolicy change reaches traffic; Accepted/Attached are written', async () => {
    console.log(await measurePolicyApplyToEffect(steps));
  });

  test('the policy status says Accepted and Attached', () => expectPolicyAcceptedAttached(steps));

  test('a GwPolicy with a CEL error is Invalid on its status and never reaches the proxy', () =>
    expectInvalidPolicyStatus(steps));

  test('a configuration the proxy refuses: a Warning Event, Programmed False with its words, traffic keeps flowing', async () => {
    const rejected = await expectConfigRejected(steps, proxyPort, await freePort());
    // the proxy says why in its config dump, and the last good configuration still serves
    const dump = await gw.configDump();
    assert.match(dump.lastReloadError ?? '', /certificate and key do not load/);
    const r = await get('/');
    assert.equal(r.status, 200);
    await rejected.restore();
  });

  test('a conditional directResponse GwPolicy: the first entry whose condition holds answers, other requests reach the backend', async () => {
    await kubectl(
      ['apply', '--server-side', '-f', '-'],
      `apiVersion: gw.dev/v1alpha1
kind: GwPolicy
metadata: { name: conditional, namespace: default }
spec:
  targetRefs: [{ group: gateway.networking.k8s.io, kind: HTTPRoute, name: web }]
  traffic:
    directResponse:
      conditional:
        - condition: request.path == '/health'
          policy: { status: 200, body: healthy }
        - condition: request.path.startsWith('/down')
          policy: { status: 503, bodyExpression: '"down: " + request.path' }
`,
    );
    const health = await until('the /health entry through the proxy', async () => {
      const r = await get('/health');
      return r.body === 'healthy' ? r : undefined;
    });
    assert.equal(health.status, 200);
    assert.equal(health.headers['x-upstream'], undefined, 'answered by the proxy, not the backend');
    const down = await get('/down/now');
    assert.equal(down.status, 503);
    assert.equal(down.body, 'down: /down/now');
    const other = await get('/other');
    assert.equal(other.status, 200);
    assert.equal(other.headers['x-upstream'], 'echo', 'no entry holds: the backend answers');
    await untilPolicyAttached(until, kubectl, 'conditional');
    await kubectl(['-n', 'default', 'delete', 'gwpolicy', 'conditional']);
    await until('the policy removed', async () =>
      (await get('/health')).headers['x-upstream'] === 'echo' ? true : undefined,
    );
  });

  test('strategy.inheritance Override on the Gateway’s policy: its header wins over the route’s policy, until it is Default', async () => {
    // request headers, which no other policy here sets, as the backend (an echo) saw them
    const policies = (inheritance: 'Override' | 'Default') => `apiVersion: gw.dev/v1alpha1
kind: GwPolicy
metadata: { name: platform, namespace: default }
spec:
  targetRefs: [{ group: gateway.networking.k8s.io, kind: Gateway, name: edge }]
  strategy: { inheritance: ${inheritance} }
  traffic:
    headerModifiers:
      request: { set: [{ name: x-owner, value: platform }] }
---
apiVersion: gw.dev/v1alpha1
kind: GwPolicy
metadata: { name: team, namespace: default }
spec:
  targetRefs: [{ group: gateway.networking.k8s.io, kind: HTTPRoute, name: web }]
  traffic:
    headerModifiers:
      request: { set: [{ name: x-owner, value: team }] }
`;
    const owner = async () =>
      (JSON.parse((await get('/owned')).body) as { headers: Record<string, string> }).headers['x-owner'];
    await kubectl(['apply', '--server-side', '-f', '-'], policies('Override'));
    await until('the platform header through the proxy', async () =>
      (await owner()) === 'platform' ? true : undefined,
    );
    await untilPolicyAttached(until, kubectl, 'platform');
    await kubectl(['apply', '--server-side', '-f', '-'], policies('Default'));
    await until('the route’s header once the Gateway’s is a default', async () =>
      (await owner()) === 'team' ? true : undefined,
    );
    await kubectl(['-n', 'default', 'delete', 'gwpolicy', 'platform', 'team']);
    await until('the policies removed', async () => ((await owner()) === undefined ? true : undefined));
  });

  test('traffic.phase PreRouting on the Gateway: a header its transformation sets picks the route; the API server refuses it on a route', async () => {
    // route `tenant` takes the requests whose x-tenant is gold, and marks them for the echo to show
    await kubectl(
      ['apply', '--server-side', '-f', '-'],
      `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: tenant, namespace: default }
spec:
  parentRefs: [{ name: edge }]
  rules:
    - matches: [{ headers: [{ name: x-tenant, value: gold }] }]
      filters:
        - type: RequestHeaderModifier
          requestHeaderModifier: { set: [{ name: x-routed, value: tenant }] }
      backendRefs: [{ group: gw.dev, kind: GwBackend, name: echo }]
`,
    );
    const routed = async () =>
      (JSON.parse((await get('/gold/orders')).body) as { headers: Record<string, string> }).headers[
        'x-routed'
      ];
    await until('route tenant in the proxy', async () =>
      (await httpGet(proxyPort, '/x', { 'x-tenant': 'gold' })).body.includes('"x-routed":"tenant"')
        ? true
        : undefined,
    );
    assert.equal(await routed(), undefined, 'without the policy /gold/ goes to route web');
    await kubectl(
      ['apply', '--server-side', '-f', '-'],
      `apiVersion: gw.dev/v1alpha1
kind: GwPolicy
metadata: { name: tenants, namespace: default }
spec:
  targetRefs: [{ group: gateway.networking.k8s.io, kind: Gateway, name: edge }]
  traffic:
    phase: PreRouting
    transformation:
      request:
        set: [{ name: x-tenant, value: 'request.path.startsWith("/gold/") ? "gold" : "none"' }]
`,
    );
    await until('the gateway-phase header picking route tenant', async () =>
      (await routed()) === 'tenant' ? true : undefined,
    );
    await untilPolicyAttached(until, kubectl, 'tenants');
    // the CRD's rules: PreRouting targets a Gateway (or ListenerSet) and takes no timeouts
    const refused = await kube.kubectl(['apply', '--server-side', '-f', '-'], {
      input: `apiVersion: gw.dev/v1alpha1
kind: GwPolicy
metadata: { name: early, namespace: default }
spec:
  targetRefs: [{ group: gateway.networking.k8s.io, kind: HTTPRoute, name: web }]
  traffic:
    phase: PreRouting
    timeouts: { request: 5s }
`,
    });
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /phase PreRouting takes cors/);
    assert.match(refused.stderr, /every target must be a Gateway or a ListenerSet/);
    await kubectl(['-n', 'default', 'delete', 'gwpolicy', 'tenants']);
    await kubectl(['-n', 'default', 'delete', 'httproute', 'tenant']);
    await until('/gold/ on route web again', async () => ((await routed()) === undefined ? true : undefined));
  });

  test('frontend.connect Tunnel on the Gateway: a CONNECT to its listener port is answered 200 and the request inside is routed there', async () => {
    const inside = `CONNECT 127.0.0.1:${proxyPort} HTTP/1.1\r\nHost: 127.0.0.1:${proxyPort}\r\n\r\nGET /tunnelled HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`;
    const before = await rawUntil(proxyPort, inside, /\r\n\r\n[\s\S]*\n/);
    assert.match(before, /^HTTP\/1\.1 405 /, 'without the policy a CONNECT is refused');
    await kubectl(
      ['apply', '--server-side', '-f', '-'],
      `apiVersion: gw.dev/v1alpha1
kind: GwPolicy
metadata: { name: egress, namespace: default }
spec:
  targetRefs: [{ group: gateway.networking.k8s.io, kind: Gateway, name: edge }]
  frontend:
    connect: { mode: Tunnel }
`,
    );
    const got = await until('a tunnel through the xDS-fed proxy', async () => {
      const r = await rawUntil(proxyPort, inside, /"url":"\/tunnelled"|\r\n\r\n[^{]*\n/);
      return /^HTTP\/1\.1 200 /.test(r) && r.includes('"url":"/tunnelled"') ? r : undefined;
    });
    assert.match(got, /^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\nHTTP\/1\.1 200 OK\r\n/);
    await untilPolicyAttached(until, kubectl, 'egress');
    await kubectl(['-n', 'default', 'delete', 'gwpolicy', 'egress']);
    await until('CONNECT refused again', async () =>
      /^HTTP\/1\.1 405 /.test(await rawUntil(proxyPort, inside, /\r\n\r\n[\s\S]*\n/)) ? true : undefined,
    );
  });

  test("a backendRef that does not resolve: ResolvedRefs False, and only its weight's share of requests is answered 500", async () => {
    await kubectl(
      ['apply', '--server-side', '-f', '-'],
      `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: split, namespace: default }
spec:
  parentRefs: [{ name: edge }]
  rules:
    - matches: [{ path: { type: PathPrefix, value: /split } }]
      backendRefs:
        - { group: gw.dev, kind: GwBackend, name: echo, weight: 3 }
        - { name: no-such-service, port: 80, weight: 1 }
`,
    );
    const resolved = await until('the split route status', async () => {
      const out = await kubectl(['-n', 'default', 'get', 'httproute', 'split', '-o', 'json']);
      type Condition = { type: string; status: string; reason: string; message: string };
      const parents = (JSON.parse(out) as { status?: { parents?: { conditions: Condition[] }[] } }).status
        ?.parents;
      return parents?.[0]?.conditions.find((c) => c.type === 'ResolvedRefs');
    });
    assert.deepEqual(
      [resolved.status, resolved.reason, resolved.message],
      ['False', 'BackendNotFound', 'service default/no-such-service not found'],
    );
    await until('the split route on the proxy', async () =>
      (await get('/split')).status !== 404 ? true : undefined,
    );
    const counts = new Map<string, number>();
    const n = 200;
    for (let i = 0; i < n; i++) {
      const r = await get('/split');
      const key = r.status === 500 ? `500 ${r.body.trim()}` : `${r.status} ${r.headers['x-upstream']}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    assert.deepEqual([...counts.keys()].sort(), ['200 echo', '500 backend does not exist']);
    // weight 1 of 4: about 50 of 200
    const failed = counts.get('500 backend does not exist') ?? 0;
    assert.ok(failed > 25 && failed < 80, `${failed} of ${n} answered 500`);
    await kubectl(['-n', 'default', 'delete', 'httproute', 'split']);
  });

  test('GwPolicy ipAccessControl and concurrencyLimit reach the proxy; an address that is not one fails closed', async () => {
    const policy = (traffic: string) =>
      kubectl(
        ['apply', '--server-side', '-f', '-'],
        `apiVersion: gw.dev/v1alpha1
kind: GwPolicy
metadata: { name: addresses, namespace: default }
spec:
  targetRefs: [{ group: gateway.networking.k8s.io, kind: HTTPRoute, name: web }]
  traffic:
${traffic}`,
      );
    // the test client is on loopback, behind one proxy that says it is 203.0.113.7
    const from = (xff: string) => httpGet(proxyPort, '/', { 'x-forwarded-for': xff });
    await policy(`    ipAccessControl: { deny: ["203.0.113.0/24"], xffNumTrustedHops: 1 }
    concurrencyLimit: [{ maxConcurrent: 100, key: 'request.headers["x-user"]' }]
`);
    const refused = await until('the deny list through the proxy', async () => {
      const r = await from('203.0.113.7');
      return r.status === 403 ? r : undefined;
    });
    assert.match(refused.body, /ip address 203\.0\.113\.7 is not allowed/);
    assert.equal((await from('192.0.2.1')).status, 200, 'other clients pass');
    await untilPolicyAttached(until, kubectl, 'addresses');
    const effective = (await gw.configDump()).policies.map((p) => p.policy as Record<string, unknown>);
    assert.ok(
      effective.some(
        (p) =>
          JSON.stringify(p.concurrencyLimit) ===
          '[{"maxConcurrent":100,"key":"request.headers[\\"x-user\\"]"}]',
      ),
      `the concurrency limit reached the proxy: ${JSON.stringify(effective)}`,
    );

    // not an address: Invalid on its status, and the route refuses everyone until it is fixed
    await policy(`    ipAccessControl: { allow: ["10.0.0.0/33"] }
`);
    await until('the invalid policy to deny', async () =>
      (await from('192.0.2.1')).status === 403 ? true : undefined,
    );
    const attached = JSON.parse(
      await kubectl([
        '-n',
        'default',
        'get',
        'gwpolicy',
        'addresses',
        '-o',
        'jsonpath={.status.ancestors[0].conditions}',
      ]),
    ) as { type: string; reason: string; message: string }[];
    const a = attached.find((c) => c.type === 'Attached');
    assert.equal(a?.reason, 'Invalid');
    assert.match(
      a?.message ?? '',
      /spec\.traffic\.ipAccessControl\.allow\[0\]: expected an IP address or CIDR/,
    );
    assert.match(a?.message ?? '', /its targets deny every request/);

    await kubectl(['-n', 'default', 'delete', 'gwpolicy', 'addresses']);
    await until('the policy removed', async () =>
      (await from('203.0.113.7')).status === 200 ? true : undefined,
    );
  });

  test('an ai GwBackend with its key in a Secret: a chat completion with the openai client, status Accepted', async () => {
    await kubectl(
      ['apply', '--server-side', '-f', '-'],
      `apiVersion: v1
kind: Secret
metadata: { name: openai-key, namespace: default }
stringData: { Authorization: sk-from-secret }
---
apiVersion: gw.dev/v1alpha1
kind: GwBackend
metadata: { name: llm, namespace: default }
spec:
  ai:
    provider:
      openai: { model: gpt-4o-mini }
      host: 127.0.0.1
      port: ${provider.port}
      policies:
        auth: { secretRef: { name: openai-key } }
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: llm, namespace: default }
spec:
  parentRefs: [{ name: edge }]
  rules:
    - matches: [{ path: { type: PathPrefix, value: /llm } }]
      backendRefs: [{ group: gw.dev, kind: GwBackend, name: llm }]
`,
    );
    const client = new OpenAI({
      apiKey: 'sk-client',
      baseURL: `http://127.0.0.1:${proxyPort}/llm/v1`,
      maxRetries: 0,
    });
    const messages = [{ role: 'user' as const, content: 'Hello!' }];
    // until the route reaches the proxy, /llm is served by route web (the echo upstream)
    const answer = await until('a chat completion through the proxy', async () => {
      const r = await client.chat.completions.create({ model: 'any-model', messages });
      return r.choices?.length ? r : undefined;
    });
    assert.equal(answer.choices[0]?.message.content, FAKE_REPLY);
    const seen = provider.seen[provider.seen.length - 1];
    assert.equal(seen?.headers.authorization, 'Bearer sk-from-secret');
    assert.equal(seen?.json?.model, 'gpt-4o-mini');
    const accepted = await until('the GwBackend to be Accepted', async () => {
      const out = await kubectl(['get', 'gwbackend', 'llm', '-o', 'jsonpath={.status.conditions[0]}']);
      const c = out ? (JSON.parse(out) as { type: string; status: string; reason: string }) : undefined;
      return c?.status === 'True' ? c : undefined;
    });
    assert.deepEqual([accepted.type, accepted.reason], ['Accepted', 'Accepted']);
  });

  test('a GwPolicy with agentgateway’s ai.routes and ai.prompt on the ai GwBackend: the model list passes through, the prompt is enriched', async () => {
    await kubectl(
      ['apply', '--server-side', '-f', '-'],
      `apiVersion: gw.dev/v1alpha1
kind: GwPolicy
metadata: { name: llm-routes, namespace: default }
spec:
  targetRefs: [{ group: gw.dev, kind: GwBackend, name: llm }]
  backend:
    ai:
      routes:
        /v1/models: Passthrough
        "*": Completions
      prompt:
        prepend: [{ role: SYSTEM, content: Answer briefly. }]
`,
    );
    const client = new OpenAI({
      apiKey: 'sk-client',
      baseURL: `http://127.0.0.1:${proxyPort}/llm/v1`,
      maxRetries: 0,
    });
    // passthrough: the provider's own list, asked with the GwBackend's key (the gateway's own list
    // would name gpt-4o-mini only)
    const ids = await until('the provider’s own model list', async () => {
      const list = await client.models.list().catch(() => undefined);
      const seen = provider.seen[provider.seen.length - 1];
      return list && seen?.url === '/llm/v1/models' ? list.data.map((m) => m.id) : undefined;
    });
    assert.ok(ids.length > 1, JSON.stringify(ids));
    assert.equal(provider.seen[provider.seen.length - 1]?.headers.authorization, 'Bearer sk-from-secret');
    const answer = await client.chat.completions.create({
      model: 'any-model',
      messages: [{ role: 'user', content: 'Hello!' }],
    });
    assert.equal(answer.choices[0]?.message.content, FAKE_REPLY);
    const sent = provider.seen[provider.seen.length - 1]?.json as {
      messages: { role: string; content: string }[];
    };
    assert.deepEqual(sent.messages[0], { role: 'system', content: 'Answer briefly.' });
    assert.deepEqual(sent.messages[1], { role: 'user', content: 'Hello!' });
    await untilPolicyAttached(until, kubectl, 'llm-routes');
    await kubectl(['-n', 'default', 'delete', 'gwpolicy', 'llm-routes']);
  });

  test('GwModels on the Gateway: a virtual model fails over to a provider model; models.list(); status Accepted', async () => {
    await kubectl(
      ['apply', '--server-side', '-f', '-'],
      `apiVersion: gw.dev/v1alpha1
kind: GwModel
metadata: { name: gpt-4o, namespace: default }
spec:
  parentRefs: [{ name: edge }]
  match: { model: gpt-4o }
  provider: OpenAI
  baseURL: http://127.0.0.1:${provider.port}/v1
  policies:
    auth: { secretRef: { name: openai-key } }
---
apiVersion: gw.dev/v1alpha1
kind: GwModel
metadata: { name: unreachable, namespace: default }
spec:
  parentRefs: [{ name: edge }]
  match: { model: unreachable }
  visibility: Internal
  provider: OpenAI
  baseURL: http://127.0.0.1:1/v1
---
apiVersion: gw.dev/v1alpha1
kind: GwModel
metadata: { name: steady, namespace: default }
spec:
  parentRefs: [{ name: edge }]
  match: { model: steady }
  virtualModel:
    failover:
      targets:
        - modelRef: { name: unreachable }
        - modelRef: { name: gpt-4o }
`,
    );
    const client = new OpenAI({
      apiKey: 'sk-client',
      baseURL: `http://127.0.0.1:${proxyPort}/v1`,
      maxRetries: 0,
    });
    const messages = [{ role: 'user' as const, content: 'Hello!' }];
    const answer = await until('a chat completion of the virtual model', async () => {
      const r = await client.chat.completions.create({ model: 'steady', messages }).catch(() => undefined);
      return r?.choices?.length ? r : undefined;
    });
    assert.equal(answer.choices[0]?.message.content, FAKE_REPLY);
    const seen = provider.seen[provider.seen.length - 1];
    assert.equal(seen?.headers.authorization, 'Bearer sk-from-secret');
    assert.equal(seen?.json?.model, 'gpt-4o');
    const ids: string[] = [];
    for await (const m of client.models.list()) ids.push(m.id);
    assert.deepEqual(ids.sort(), ['gpt-4o', 'steady']);
    for (const name of ['gpt-4o', 'unreachable', 'steady']) {
      const c = await until(`GwModel ${name} to be Accepted`, async () => {
        const out = await kubectl([
          'get',
          'gwmodel',
          name,
          '-o',
          'jsonpath={.status.parents[0].conditions[0]}',
        ]);
        const c = out ? (JSON.parse(out) as { status: string; reason: string; message: string }) : undefined;
        return c?.status === 'True' ? c : undefined;
      });
      assert.equal(c.reason, 'Accepted');
      assert.match(c.message, /served on listener \S+ of default\/edge/);
    }
  });

  test('a Gemini GwModel answers Google’s own client at Gemini’s native path, through the xDS-fed proxy', async () => {
    await kubectl(
      ['apply', '--server-side', '-f', '-'],
      `apiVersion: gw.dev/v1alpha1
kind: GwModel
metadata: { name: flash, namespace: default }
spec:
  parentRefs: [{ name: edge }]
  match: { model: gemini-2.5-flash }
  provider: Gemini
  baseURL: http://127.0.0.1:${gemini.port}/v1beta
  policies:
    auth: { key: AIza-gateway }
`,
    );
    const genai = new GoogleGenAI({
      apiKey: 'client-key',
      httpOptions: { baseUrl: `http://127.0.0.1:${proxyPort}` },
    });
    const answer = await until('a generateContent answer through the proxy', async () => {
      const r = await genai.models
        .generateContent({ model: 'gemini-2.5-flash', contents: 'Hello!' })
        .catch(() => undefined);
      return r?.text ? r : undefined;
    });
    assert.equal(answer.text, 'Hello! How can I help you today?');
    // the SDK calls /v1/models/…; the provider is asked at its own /v1beta path
    const seen = gemini.seen.at(-1);
    assert.equal(seen?.url, '/v1beta/models/gemini-2.5-flash:generateContent');
    assert.equal(seen?.headers['x-goog-api-key'], 'AIza-gateway');
    await kubectl(['-n', 'default', 'delete', 'gwmodel', 'flash']);
  });

  test('a GwModel with a regex prompt guard: a prompt with an SSN is refused in OpenAI’s shape, a clean one answered', async () => {
    await kubectl(
      ['apply', '--server-side', '-f', '-'],
      `apiVersion: gw.dev/v1alpha1
kind: GwModel
metadata: { name: guarded, namespace: default }
spec:
  parentRefs: [{ name: edge }]
  match: { model: guarded-model }
  provider: OpenAI
  baseURL: http://127.0.0.1:${provider.port}/v1
  policies:
    auth: { secretRef: { name: openai-key } }
    ai:
      promptGuard:
        request:
          - regex: { action: Reject, builtins: [Ssn] }
            response: { message: no identity numbers, statusCode: 422 }
`,
    );
    const client = new OpenAI({
      apiKey: 'sk-client',
      baseURL: `http://127.0.0.1:${proxyPort}/v1`,
      maxRetries: 0,
    });
    const ask = (content: string) =>
      client.chat.completions.create({ model: 'guarded-model', messages: [{ role: 'user', content }] });
    const answer = await until(
      'the guarded model to answer',
      async () => (await ask('Hello!').catch(() => undefined)) ?? undefined,
    );
    assert.equal(answer.choices[0]?.message.content, FAKE_REPLY);
    const seen = provider.seen.length;
    const err = await ask('My SSN is 123-45-6789').catch((e: unknown) => e);
    assert.ok(err instanceof OpenAI.APIError, String(err));
    assert.equal(err.status, 422);
    assert.match(err.message, /no identity numbers/);
    assert.equal(provider.seen.length, seen, 'the refused prompt never reached the provider');
  });

  test('a proxy without a valid token is refused', async () => {
    const tokenFile = join(kube.dir, 'bad.token');
    writeFileSync(tokenFile, 'not-a-token');
    const refused = await startProxy(tokenFile, { waitReady: false });
    await until('the refusal in the controller log', async () =>
      controller.log.join('').includes('proxy stream refused') ? true : undefined,
    );
    const ready = await fetch(`${refused.readiness}/healthz/ready`).catch(() => undefined);
    assert.notEqual(ready?.status, 200, 'a refused proxy must not report ready');
  });
});
