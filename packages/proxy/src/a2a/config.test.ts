// The a2a policy in a config file: agentgateway's shape (`a2a: {}` on a route or a backend), what
// it makes of host backends, and the mistakes it refuses.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError } from '@gw/api';
import { loadConfigText } from '../config/load.ts';

const load = (routes: string, extra = '') =>
  loadConfigText(
    'a2a.yaml',
    `${extra}
binds:
  - port: 3000
    listeners:
      - routes:
${routes}`,
    process.cwd(),
  ).ir;

const targets = (ir: ReturnType<typeof load>) =>
  ir.binds[0]?.listeners[0]?.routes.map((r) => r.backends.map((b) => b.target));

test('a2a on a route makes its host backends A2A agents; on a backend, that backend only', () => {
  const ir = load(
    `
          - name: agent
            matches: [{ path: { pathPrefix: /a } }]
            policies: { a2a: {} }
            backends: [{ host: agent.local:9999 }, { backend: named }]
          - name: one
            backends:
              - { host: 10.0.0.1:80, policies: { a2a: {} } }
              - { host: 10.0.0.2:80 }
`,
    'backends: [{ name: named, host: "[::1]:7000" }]',
  );
  assert.deepEqual(targets(ir), [
    [
      { kind: 'a2a', host: 'agent.local', port: 9999 },
      { kind: 'a2a', host: '::1', port: 7000 },
    ],
    [
      { kind: 'a2a', host: '10.0.0.1', port: 80 },
      { kind: 'host', host: '10.0.0.2', port: 80 },
    ],
  ]);
  // Not a layer of the route, and not among the backend's connection settings.
  assert.deepEqual(ir.binds[0]?.listeners[0]?.routes[1]?.backends[0]?.policies, {});
});

test('a2a takes no fields, and applies only to host backends', () => {
  assert.throws(
    () => load(`          - { policies: { a2a: { streaming: true } }, backends: [{ host: a:1 }] }\n`),
    (e) => e instanceof ConfigError && /a2a/.test(e.message),
  );
  assert.throws(
    () => load(`          - { policies: { a2a: {} }, backends: [{ dynamic: {} }] }\n`),
    (e) =>
      e instanceof ConfigError &&
      /a2a applies only to host backends, not to a dynamic forward proxy/.test(e.message),
  );
  assert.throws(
    () => load(`          - backends: [{ host: unix:/tmp/agent.sock, policies: { a2a: {} } }]\n`),
    (e) =>
      e instanceof ConfigError &&
      /routes\[0\]\.backends\[0\]\.policies\.a2a: a2a applies only to host backends, not to a unix socket/.test(
        e.message,
      ),
  );
});
