// xDS resources → standalone document → IR: the same loader as a file, issues named after resources.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { fromJson, type JsonValue, toBinary } from '@bufbuild/protobuf';
import { ConfigError } from '@gw/api';
import { type Resource, ResourceSchema } from '@gw/xds-proto/gw/resource/v1/resource';
import { loadConfigObject } from '../config/load.ts';
import { assembleConfig } from './assemble.ts';
import { buildXdsConfig } from './build.ts';

const res = (json: unknown): Resource => fromJson(ResourceSchema, json as JsonValue);

const bind = res({
  bind: {
    port: 8080,
    listeners: [{ name: 'ns/gw/http', gateway: 'ns/gw', protocol: 'HTTP' }],
  },
});
const route = (rule: number, path: string, extra: Record<string, unknown> = {}) =>
  res({
    route: {
      port: 8080,
      listener: 'ns/gw/http',
      namespace: 'ns',
      name: 'web',
      matches: [{ path: { pathPrefix: path } }],
      backends: [{ weight: 1, host: { host: '127.0.0.1', port: 9000 + rule } }],
      ...extra,
    },
  });

function load(entries: [string, Resource][]) {
  const a = assembleConfig(new Map(entries));
  assert.deepEqual(a.problems, []);
  return loadConfigObject('xds test', a.data, process.cwd(), a.origin).ir;
}

describe('assembleConfig', () => {
  test('TCP and TLS listeners take tcpRoute resources: by SNI on TLS, passthrough without a certificate', () => {
    const tcpRoute = (listener: string, port: number, name: string, extra: Record<string, unknown>) =>
      res({
        tcpRoute: {
          port,
          listener,
          namespace: 'ns',
          name,
          backends: [{ weight: 1, host: { host: '127.0.0.1', port: 9100 } }],
          ...extra,
        },
      });
    const ir = load([
      [
        'bind/9000',
        res({ bind: { port: 9000, listeners: [{ name: 'ns/gw/db', gateway: 'ns/gw', protocol: 'TCP' }] } }),
      ],
      [
        'bind/9443',
        res({ bind: { port: 9443, listeners: [{ name: 'ns/gw/tls', gateway: 'ns/gw', protocol: 'TLS' }] } }),
      ],
      ['tcproute/9000/ns/gw/db/ns/db/0', tcpRoute('ns/gw/db', 9000, 'db', {})],
      [
        'tcproute/9443/ns/gw/tls/ns/newer/0',
        tcpRoute('ns/gw/tls', 9443, 'newer', { hostnames: ['a.example.com'], precedence: 2 }),
      ],
      [
        'tcproute/9443/ns/gw/tls/ns/older/0',
        tcpRoute('ns/gw/tls', 9443, 'older', {
          hostnames: ['*.example.com'],
          precedence: 1,
          backends: [{ weight: 3, backend: 'ns/db' }],
        }),
      ],
      ['backend/ns/db', res({ backend: { name: 'ns/db', host: { host: '127.0.0.1', port: 9200 } } })],
    ]);
    const [tcp, tls] = ir.binds.map((b) => b.listeners[0]);
    assert.equal(tcp?.protocol, 'TCP');
    assert.deepEqual(tcp?.routes, []);
    assert.deepEqual(
      tcp?.tcpRoutes?.map((r) => [r.name, r.hostnames]),
      [['db', []]],
    );
    assert.equal(tls?.protocol, 'TLS');
    assert.equal(tls?.tls, undefined, 'passthrough: no certificate of its own');
    assert.deepEqual(
      tls?.tcpRoutes?.map((r) => [r.name, r.hostnames, r.backends.map((b) => b.weight)]),
      [
        ['older', ['*.example.com'], [3]],
        ['newer', ['a.example.com'], [1]],
      ],
    );
  });

  test('a tcpRoute for an HTTP listener, or an HTTP route for a TCP one, is a problem named after it', () => {
    const a = assembleConfig(
      new Map([
        ['bind/8080', bind],
        [
          'bind/9000',
          res({ bind: { port: 9000, listeners: [{ name: 'ns/gw/db', gateway: 'ns/gw', protocol: 'TCP' }] } }),
        ],
        [
          'tcproute/8080/ns/gw/http/ns/x/0',
          res({ tcpRoute: { port: 8080, listener: 'ns/gw/http', namespace: 'ns', name: 'x' } }),
        ],
        [
          'route/9000/ns/gw/db/ns/y/0',
          res({ route: { port: 9000, listener: 'ns/gw/db', namespace: 'ns', name: 'y' } }),
        ],
      ]),
    );
    assert.deepEqual(
      a.problems.map((p) => `${p.resource}: ${p.message}`),
      [
        'route/9000/ns/gw/db/ns/y/0: listener "ns/gw/db" on port 9000 takes TCP routes, not HTTP routes',
        'tcproute/8080/ns/gw/http/ns/x/0: listener "ns/gw/http" on port 8080 is not a TCP or TLS listener',
      ],
    );
  });

  test("an unresolved backendRef's invalid backend keeps its weight in the route", () => {
    const ir = load([
      ['bind/8080', bind],
      [
        'route/8080/http/ns/web/0',
        route(0, '/', {
          backends: [
            { weight: 1, invalid: {} },
            { weight: 3, host: { host: '127.0.0.1', port: 9000 } },
          ],
        }),
      ],
    ]);
    assert.deepEqual(
      ir.binds[0]?.listeners[0]?.routes[0]?.backends.map((b) => [b.name, b.weight, b.target]),
      [
        ['invalid', 1, { kind: 'invalid' }],
        ['127.0.0.1:9000', 3, { kind: 'host', host: '127.0.0.1', port: 9000 }],
      ],
    );
  });

  test('routes on one listener go oldest first (precedence), so the oldest wins a tie; unset goes last', () => {
    const named = (name: string, precedence?: number) =>
      res({
        route: {
          port: 8080,
          listener: 'ns/gw/http',
          namespace: 'ns',
          name,
          matches: [{ path: { pathPrefix: '/' } }],
          backends: [{ weight: 1, host: { host: '127.0.0.1', port: 9000 } }],
          ...(precedence ? { precedence } : {}),
        },
      });
    const ir = load([
      ['bind/8080', bind],
      ['route/8080/ns/gw/http/ns/a-newer/0', named('a-newer', 2)],
      ['route/8080/ns/gw/http/ns/b-older/0', named('b-older', 1)],
      ['route/8080/ns/gw/http/ns/0-unset/0', named('0-unset')],
    ]);
    assert.deepEqual(
      ir.binds[0]?.listeners[0]?.routes.map((r) => r.name),
      ['b-older', 'a-newer', '0-unset'],
    );
  });

  test('binds, listeners, per-rule routes and targeted policies build the IR a file would', () => {
    const ir = load([
      ['route/8080/ns/gw/http/ns/web/1', route(1, '/b')],
      ['bind/8080', bind],
      ['route/8080/ns/gw/http/ns/web/0', route(0, '/a')],
      [
        'policy/ns/p/0',
        res({
          policy: {
            name: 'ns/p',
            target: { route: 'ns/web' },
            traffic: { requestHeaderModifier: { set: { 'x-p': 'route' } } },
          },
        }),
      ],
      [
        'policy/ns/g/0',
        res({
          policy: {
            name: 'ns/g',
            target: { gateway: 'ns/gw' },
            traffic: { responseHeaderModifier: { set: { 'x-g': 'gw' } } },
          },
        }),
      ],
    ]);
    assert.equal(ir.binds.length, 1);
    const b = ir.binds[0]!;
    assert.equal(b.port, 8080);
    const l = b.listeners[0]!;
    assert.equal(l.gateway, 'ns/gw');
    assert.equal(l.name, 'http');
    assert.deepEqual(
      l.routes.map((r) => r.key),
      ['ns/gw/http/ns/web/0', 'ns/gw/http/ns/web/1'],
    );
    const r0 = l.routes[0]!;
    assert.deepEqual(r0.matches, [{ path: { pathPrefix: '/a' } }]);
    assert.deepEqual(r0.backends[0]?.target, { kind: 'host', host: '127.0.0.1', port: 9000 });
    assert.deepEqual(r0.policies.requestHeaderModifier, { set: { 'x-p': 'route' } });
    assert.deepEqual(r0.policies.responseHeaderModifier, { set: { 'x-g': 'gw' } });
  });

  test('a policy resource marked override keeps its fields over the route’s (strategy.inheritance)', () => {
    const policies = (override: boolean) =>
      load([
        ['bind/8080', bind],
        ['route/8080/ns/gw/http/ns/web/0', route(0, '/a')],
        [
          'policy/0000/ns/team/0',
          res({
            policy: {
              name: 'ns/team',
              target: { route: 'ns/web' },
              traffic: { requestHeaderModifier: { set: { 'x-who': 'route' } } },
            },
          }),
        ],
        [
          'policy/0001/ns/platform/0',
          res({
            policy: {
              name: 'ns/platform',
              target: { gateway: 'ns/gw' },
              traffic: { requestHeaderModifier: { set: { 'x-who': 'platform' } } },
              ...(override ? { override: true } : {}),
            },
          }),
        ],
      ]).binds[0]?.listeners[0]?.routes[0]?.policies;
    assert.deepEqual(policies(true)?.requestHeaderModifier, { set: { 'x-who': 'platform' } });
    assert.deepEqual(policies(false)?.requestHeaderModifier, { set: { 'x-who': 'route' } });
  });

  test("the controller's frontend tracing and conditional policies (Struct JSON) build the IR a file would", () => {
    // what the controller sends for GwPolicy frontend.tracing and a conditional directResponse
    const ir = load([
      ['bind/8080', bind],
      ['route/8080/ns/gw/http/ns/web/0', route(0, '/')],
      [
        'frontend',
        res({
          frontend: {
            policies: {
              tracing: {
                host: 'otel.ns.svc.cluster.local:4318',
                protocol: 'http',
                path: '/v1/traces',
                resources: { 'service.name': '"edge"' },
                attributes: { tenant: "request.headers['x-tenant']" },
                remove: ['http.route'],
                randomSampling: '0.1',
                filter: 'response.code >= 500',
              },
            },
          },
        }),
      ],
      [
        'policy/ns/p/0',
        res({
          policy: {
            name: 'ns/p',
            target: { route: 'ns/web' },
            traffic: {
              directResponse: {
                conditional: [
                  { status: 200, body: 'ok', condition: "request.path == '/health'" },
                  { status: 404, body: 'none' },
                ],
              },
              localRateLimit: {
                conditional: [
                  {
                    maxTokens: 10,
                    tokensPerFill: 5,
                    fillInterval: '1s',
                    type: 'requests',
                    condition: 'true',
                  },
                ],
              },
            },
          },
        }),
      ],
    ]);
    assert.deepEqual(ir.frontend.tracing, {
      endpoint: 'http://otel.ns.svc.cluster.local:4318/v1/traces',
      protocol: 'http',
      headers: {},
      resources: { 'service.name': '"edge"' },
      attributes: { tenant: "request.headers['x-tenant']" },
      remove: ['http.route'],
      randomSampling: 0.1,
      clientSampling: true,
      parentNotSampled: false,
      filter: 'response.code >= 500',
    });
    const policies = ir.binds[0]?.listeners[0]?.routes[0]?.policies;
    assert.deepEqual(policies?.directResponse, {
      conditional: [
        { status: 200, body: 'ok', condition: "request.path == '/health'" },
        { status: 404, body: 'none' },
      ],
    });
    assert.deepEqual(policies?.localRateLimit, {
      conditional: [
        { maxTokens: 10, tokensPerFill: 5, fillInterval: '1s', type: 'requests', condition: 'true' },
      ],
    });
  });

  test('equal resource sets give equal versions whatever the arrival order', () => {
    const a = load([
      ['bind/8080', bind],
      ['route/8080/ns/gw/http/ns/web/0', route(0, '/a')],
    ]);
    const b = load([
      ['route/8080/ns/gw/http/ns/web/0', route(0, '/a')],
      ['bind/8080', bind],
    ]);
    assert.equal(a.version, b.version);
  });

  test('a schema problem names the resource and the field inside it', () => {
    const a = assembleConfig(
      new Map([
        ['bind/8080', bind],
        ['route/8080/ns/gw/http/ns/web/0', route(0, '/a')],
        [
          'policy/ns/bad/0',
          res({ policy: { name: 'ns/bad', target: { route: 'ns/web' }, traffic: { cors: { nope: 1 } } } }),
        ],
      ]),
    );
    assert.throws(
      () => loadConfigObject('xds test', a.data, process.cwd(), a.origin),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        assert.equal(err.message, 'policy/ns/bad/0: traffic.cors.nope: unknown field "nope"');
        return true;
      },
    );
  });

  test('a named backend on a Unix socket; a Gateway without listeners is an empty config, not an error', () => {
    const ir = load([
      ['bind/8080', bind],
      ['route/8080/ns/gw/http/ns/web/0', route(0, '/', { backends: [{ weight: 1, backend: 'ns/local' }] })],
      [
        'backend/ns/local',
        res({ backend: { name: 'ns/local', host: { host: 'unix:/run/app.sock', port: 0 } } }),
      ],
    ]);
    assert.deepEqual(ir.binds[0]?.listeners[0]?.routes[0]?.backends[0]?.target, {
      kind: 'unix',
      path: '/run/app.sock',
    });
    const empty = assembleConfig(new Map());
    assert.deepEqual(
      loadConfigObject('xds test', empty.data, process.cwd(), empty.origin, { allowNoListeners: true }).ir
        .binds,
      [],
    );
    assert.throws(
      () => loadConfigObject('xds test', empty.data, process.cwd(), empty.origin),
      /no listeners/,
    );
  });

  test('an mcp backend builds the IR the standalone mcp backend of a file builds', () => {
    const rules = { rules: [{ deny: 'mcp.tool.name == "rm"' }] };
    const guards = {
      processors: [{ host: 'https://checker.ns.svc.cluster.local:9443', methods: { 'tools/call': 'Full' } }],
    };
    const viaXds = load([
      ['bind/8080', bind],
      ['route/8080/ns/gw/http/ns/web/0', route(0, '/', { backends: [{ weight: 1, backend: 'ns/tools' }] })],
      [
        'backend/ns/tools',
        res({
          backend: {
            name: 'ns/tools',
            mcp: {
              targets: [
                { name: 'everything', host: '127.0.0.1', port: 3001, protocol: 'StreamableHTTP' },
                {
                  name: 'legacy',
                  host: '10.0.0.7',
                  port: 8000,
                  path: '/events',
                  protocol: 'SSE',
                  policies: { http: { requestTimeout: '5s' }, mcpAuthorization: rules },
                },
              ],
              sessionRouting: 'Stateless',
              failureMode: 'FailOpen',
              prefixMode: 'Always',
            },
            policies: { mcpAuthorization: { rules: ['true'] }, mcpGuardrails: guards },
          },
        }),
      ],
    ]);
    const file = fileWithRoute('ns/tools', {}, [
      {
        name: 'ns/tools',
        mcp: {
          targets: [
            { name: 'everything', mcp: { host: '127.0.0.1', port: 3001 } },
            {
              name: 'legacy',
              sse: { host: '10.0.0.7', port: 8000, path: '/events' },
              policies: { http: { requestTimeout: '5s' }, mcpAuthorization: rules },
            },
          ],
          sessionRouting: 'Stateless',
          failureMode: 'FailOpen',
          prefixMode: 'Always',
        },
        policies: { mcpAuthorization: { rules: ['true'] }, mcpGuardrails: guards },
      },
    ]);
    const target = (ir: typeof file) => ir.binds[0]?.listeners[0]?.routes[0]?.backends[0]?.target;
    const t = target(viaXds);
    assert.deepEqual(t, target(file));
    assert.equal(t?.kind, 'mcp');
    if (t?.kind !== 'mcp') return;
    assert.deepEqual(
      t.targets.map((x) => [x.name, x.transport, x.policies, x.authorization]),
      [
        [
          'everything',
          { kind: 'streamable-http', origin: 'http://127.0.0.1:3001', path: '/mcp', tls: false },
          {},
          [],
        ],
        [
          'legacy',
          { kind: 'sse', origin: 'http://10.0.0.7:8000', path: '/events', tls: false },
          { http: { requestTimeout: '5s' } },
          [rules],
        ],
      ],
    );
    assert.deepEqual([t.sessionRouting, t.failureMode, t.prefixMode], ['Stateless', 'FailOpen', 'Always']);
    assert.deepEqual(t.authorization, [{ rules: ['true'] }]);
    assert.deepEqual(
      t.guardrails.map((g) => [g.kind === 'cel' ? 'cel' : g.origin, g.methods, g.failOpen]),
      [['https://checker.ns.svc.cluster.local:9443', { 'tools/call': 'full' }, false]],
    );
  });

  test('an a2a backend builds the IR of a host backend of a file under the a2a policy', () => {
    const viaXds = load([
      ['bind/8080', bind],
      ['route/8080/ns/gw/http/ns/web/0', route(0, '/', { backends: [{ weight: 1, backend: 'ns/agent' }] })],
      [
        'backend/ns/agent',
        res({
          backend: {
            name: 'ns/agent',
            a2a: { host: 'agent.agents.svc', port: 9999 },
            policies: { http: { requestTimeout: '5s' } },
          },
        }),
      ],
    ]);
    const file = fileWithRoute('ns/agent', { a2a: {} }, [
      { name: 'ns/agent', host: 'agent.agents.svc:9999', policies: { http: { requestTimeout: '5s' } } },
    ]);
    const backend = (ir: typeof file) => ir.binds[0]?.listeners[0]?.routes[0]?.backends[0];
    assert.deepEqual(backend(viaXds), backend(file));
    assert.deepEqual(backend(viaXds)?.target, { kind: 'a2a', host: 'agent.agents.svc', port: 9999 });
    assert.deepEqual(backend(viaXds)?.policies, { http: { requestTimeout: '5s' } });
  });

  test('an aws backend (AgentCore) builds the IR of the same backend in a file', () => {
    const arn = 'arn:aws:bedrock-agentcore:us-west-2:123456789012:runtime/agent-Ab12Cd34Ef';
    const viaXds = load([
      ['bind/8080', bind],
      ['route/8080/ns/gw/http/ns/web/0', route(0, '/', { backends: [{ weight: 1, backend: 'ns/agent' }] })],
      [
        'backend/ns/agent',
        res({
          backend: { name: 'ns/agent', aws: { agentCore: { agentRuntimeArn: arn, qualifier: 'prod' } } },
        }),
      ],
    ]);
    const file = fileWithRoute('ns/agent', {}, [
      { name: 'ns/agent', aws: { agentCore: { agentRuntimeArn: arn, qualifier: 'prod' } } },
    ]);
    const backend = (ir: typeof file) => ir.binds[0]?.listeners[0]?.routes[0]?.backends[0];
    assert.deepEqual(backend(viaXds), backend(file));
    assert.deepEqual(backend(viaXds)?.target, {
      kind: 'aws',
      agentCore: {
        agentRuntimeArn: arn,
        region: 'us-west-2',
        host: 'bedrock-agentcore.us-west-2.amazonaws.com',
        qualifier: 'prod',
      },
      auth: { kind: 'sigv4' },
    });
  });

  test('an MCP target of an unknown protocol is a problem of its backend resource', () => {
    const a = assembleConfig(
      new Map([
        [
          'backend/ns/tools',
          res({
            backend: {
              name: 'ns/tools',
              mcp: { targets: [{ name: 'a', host: 'h', port: 1, protocol: 'WebSocket' }] },
            },
          }),
        ],
      ]),
    );
    assert.deepEqual(a.problems, [
      {
        resource: 'backend/ns/tools',
        path: ['mcp', 'targets', 0, 'protocol'],
        message: 'unknown MCP protocol "WebSocket" (StreamableHTTP or SSE)',
      },
    ]);
  });

  test('an InferencePool is a service backend of its endpoints at every target port, with its picker', () => {
    const pool = (extra: Record<string, unknown> = {}) =>
      res({
        inferencePool: {
          name: 'ns/vllm',
          targetPorts: [8000, 8001],
          endpoints: [
            { name: 'vllm-a', ip: '10.0.0.1' },
            { name: 'vllm-b', ip: '10.0.0.2' },
          ],
          endpointPicker: 'epp:ns/vllm',
          ...extra,
        },
      });
    const picker = res({
      backend: {
        name: 'epp:ns/vllm',
        host: { host: 'vllm-epp.ns.svc.cluster.local', port: 9002 },
        policies: { backendTLS: { insecure: true } },
      },
    });
    const toPool = route(0, '/v1', {
      backends: [
        { weight: 1, inferencePool: 'ns/vllm', policies: { requestHeaderModifier: { add: { a: 'b' } } } },
      ],
    });
    const ir = load([
      ['bind/8080', bind],
      ['route/8080/ns/gw/http/ns/web/0', toPool],
      ['inferencepool/ns/vllm', pool({ failOpen: true })],
      ['backend/epp:ns/vllm', picker],
    ]);
    const b = ir.binds[0]?.listeners[0]?.routes[0]?.backends[0];
    assert.equal(b?.target.kind, 'service');
    if (b?.target.kind !== 'service') return;
    assert.equal(b.target.service, 'ns/vllm.ns.inferencepool');
    assert.deepEqual(
      b.target.endpoints.map((e) => `${e.host}:${e.port}`),
      ['10.0.0.1:8000', '10.0.0.1:8001', '10.0.0.2:8000', '10.0.0.2:8001'],
    );
    assert.equal(b.target.inference?.passthrough, false);
    assert.equal(b.target.inference?.picker.host, 'vllm-epp.ns.svc.cluster.local:9002');
    assert.equal(b.target.inference?.picker.failureMode, 'failOpen');
    assert.equal(b.target.inference?.picker.policies?.backendTLS?.insecure, true);
    // the ref's own policies stay beside the picker
    assert.ok(b.policies.requestHeaderModifier, 'the backendRef filter is kept');
    // fail closed unless the pool says FailOpen; a pool with no ready Pod loads (its requests get 503)
    const closed = load([
      ['bind/8080', bind],
      ['route/8080/ns/gw/http/ns/web/0', toPool],
      ['inferencepool/ns/vllm', pool({ endpoints: [] })],
      ['backend/epp:ns/vllm', picker],
    ]).binds[0]?.listeners[0]?.routes[0]?.backends[0]?.target;
    assert.equal(closed?.kind === 'service' && closed.inference?.picker.failureMode, 'failClosed');
    assert.deepEqual(closed?.kind === 'service' && closed.endpoints, []);
  });

  test('a route backend naming an InferencePool that was not sent, or a pool without ports, is a problem', () => {
    const a = assembleConfig(
      new Map([
        ['bind/8080', bind],
        [
          'route/8080/ns/gw/http/ns/web/0',
          route(0, '/v1', { backends: [{ weight: 1, inferencePool: 'ns/nope' }] }),
        ],
        ['inferencepool/ns/empty', res({ inferencePool: { name: 'ns/empty', endpointPicker: 'ns/epp' } })],
      ]),
    );
    assert.deepEqual(a.problems, [
      {
        resource: 'inferencepool/ns/empty',
        path: ['targetPorts'],
        message: 'an InferencePool needs a target port',
      },
      {
        resource: 'route/8080/ns/gw/http/ns/web/0',
        path: ['backends', 0, 'inferencePool'],
        message: 'no InferencePool "ns/nope" (an inferencepool/ resource)',
      },
    ]);
  });

  test('a route for a listener that is not there is a problem of that route', () => {
    const a = assembleConfig(
      new Map([
        ['bind/8080', bind],
        ['route/8080/ns/gw/other/ns/web/0', route(0, '/a', { listener: 'ns/gw/other' })],
      ]),
    );
    assert.deepEqual(a.problems, [
      {
        resource: 'route/8080/ns/gw/other/ns/web/0',
        path: ['listener'],
        message: 'no listener "ns/gw/other" on port 8080',
      },
    ]);
  });
});

/** The standalone file a route resource to one backend stands for: the IR the xDS path must match. */
function fileWithRoute(backend: string, policies: Record<string, unknown>, backends: unknown[]) {
  return loadConfigObject(
    'gw.yaml',
    {
      binds: [
        {
          port: 8080,
          listeners: [
            {
              name: 'http',
              gatewayName: 'ns/gw',
              protocol: 'HTTP',
              routes: [
                {
                  name: 'web',
                  namespace: 'ns',
                  ruleName: '0',
                  matches: [{ path: { pathPrefix: '/' } }],
                  ...(Object.keys(policies).length > 0 ? { policies } : {}),
                  backends: [{ weight: 1, backend }],
                },
              ],
            },
          ],
        },
      ],
      backends,
    },
    process.cwd(),
  ).ir;
}

/** A route of one backend to a Service (its cluster name), as the controller sends it. */
function serviceRoute(port: number, policies?: Record<string, unknown>): Resource {
  return res({
    route: {
      port: 8080,
      listener: 'ns/gw/http',
      namespace: 'ns',
      name: 'web',
      matches: [{ path: { pathPrefix: '/' } }],
      backends: [
        { weight: 1, host: { host: 'api.ns.svc.cluster.local', port }, ...(policies ? { policies } : {}) },
      ],
    },
  });
}

/** The IR the xDS client builds from these resources, as they arrive (binary). */
function viaXdsClient(entries: [string, Resource][]) {
  const held = new Map<string, { bytes: Uint8Array }>();
  for (const [name, r] of entries) held.set(name, { bytes: toBinary(ResourceSchema, r) });
  return buildXdsConfig(held, { address: 'http://c:9978', gateway: 'ns/gw', baseDir: process.cwd() }).ir;
}

test('a Service backend keeps the client’s Host: only a file’s backend named by DNS name sends its name', () => {
  const svc = serviceRoute(8080);
  const ir = viaXdsClient([
    ['bind/8080', bind],
    ['route/8080/http/ns/web/0', svc],
  ]);
  const target = ir.binds[0]?.listeners[0]?.routes[0]?.backends[0]?.target;
  assert.deepEqual(target, { kind: 'host', host: 'api.ns.svc.cluster.local', port: 8080 });
  // the same name in a file sends it as Host
  const file = assembleConfig(
    new Map([
      ['bind/8080', bind],
      ['route/8080/http/ns/web/0', svc],
    ]),
  );
  const fromFile = loadConfigObject('a file', file.data, process.cwd(), file.origin).ir;
  assert.deepEqual(fromFile.binds[0]?.listeners[0]?.routes[0]?.backends[0]?.target, {
    kind: 'host',
    host: 'api.ns.svc.cluster.local',
    port: 8080,
    rewriteHost: true,
  });
});

test('a Service backend with the policies of GwPolicies on that Service (backendTLS, http, tcp) reaches the IR with them', () => {
  const policies = {
    backendTLS: { insecureHost: true },
    http: { requestTimeout: '5s' },
    tcp: { connectTimeout: '2s' },
  };
  const ir = viaXdsClient([
    ['bind/8080', bind],
    ['route/8080/http/ns/web/0', serviceRoute(8443, policies)],
  ]);
  const backend = ir.binds[0]?.listeners[0]?.routes[0]?.backends[0];
  assert.deepEqual(backend?.target, { kind: 'host', host: 'api.ns.svc.cluster.local', port: 8443 });
  assert.equal(backend?.policies.backendTLS?.insecureHost, true);
  assert.equal(backend?.policies.http?.requestTimeout, '5s');
  assert.equal(backend?.policies.tcp?.connectTimeout, '2s');
});
