// Targeted policies with inheritance: override (GwPolicy strategy.inheritance): the fields such a
// policy sets keep its value for everything below its target, an accumulating field (authorization)
// the rules gathered down to it; other fields merge by specificity as before.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { startUpstream } from '@gw/testkit';
import { startProxy } from '@gw/testkit/proxy';
import { loadConfigText } from './load.ts';

const load = (text: string) => loadConfigText('t.yaml', text, process.cwd()).ir;

/** A gateway with one listener and a route (one rule of ns/r1) with a policy of each level. */
const config = (opts: { gateway?: string; listener?: string; route?: string; backend?: string }) => `gateways:
  main:
    port: ${opts.backend ? 0 : 8080}
    address: 127.0.0.1
    listeners: [{name: web}]
routes:
- name: r1
  namespace: ns
  ruleName: a
  gateways: [main]
  policies:
    requestHeaderModifier: {set: {x-who: inline}}
    authorization: {rules: ['request.path.startsWith("/c")']}
  backends: [{host: "${opts.backend ?? '127.0.0.1:9'}"}]
policies:
- target: {gateway: main}
  ${opts.gateway ?? ''}
  policy:
    authorization: {rules: ['request.path.startsWith("/a")']}
    requestHeaderModifier: {set: {x-who: gateway}}
- target: {listener: main/web}
  ${opts.listener ?? ''}
  policy:
    requestHeaderModifier: {set: {x-who: listener}}
    authorization: {rules: ['request.path.startsWith("/b")']}
- target: {route: ns/r1}
  ${opts.route ?? ''}
  policy:
    requestHeaderModifier: {set: {x-who: route}}
    timeout: {requestTimeout: 5s}
- target: {route: ns/r1/a}
  policy:
    requestHeaderModifier: {set: {x-who: rule}}
`;

const routeOf = (text: string) => {
  const r = load(text).binds[0]?.listeners[0]?.routes[0];
  assert.ok(r);
  return r;
};
const who = (r: ReturnType<typeof routeOf>) => r.policies.requestHeaderModifier?.set?.['x-who'];
const rules = (r: ReturnType<typeof routeOf>) =>
  [r.policies.authorization ?? []].flat().flatMap((a) => (a as { rules: string[] }).rules);

describe('inheritance: override', () => {
  test('without it, the most specific level wins a field and authorization rules add up', () => {
    const r = routeOf(config({}));
    assert.equal(who(r), 'inline');
    assert.equal(rules(r).length, 3);
    assert.equal(r.policySources.requestHeaderModifier, 'route');
  });

  test('on the listener: its fields are fixed below it; authorization keeps what gathered down to it', () => {
    const r = routeOf(config({ listener: 'inheritance: override' }));
    assert.equal(who(r), 'listener');
    assert.deepEqual(rules(r), ['request.path.startsWith("/a")', 'request.path.startsWith("/b")']);
    // a field the override policy does not set still comes from the route
    assert.deepEqual(r.policies.timeout, { requestTimeout: '5s' });
    assert.equal(r.policySources.requestHeaderModifier, 'gateway');
    assert.equal(r.policySources.timeout, 'route');
  });

  test('the least specific override wins; a route override holds over its rule and its own filters', () => {
    const both = routeOf(config({ gateway: 'inheritance: override', listener: 'inheritance: override' }));
    assert.equal(who(both), 'gateway');
    assert.deepEqual(rules(both), ['request.path.startsWith("/a")']);
    const route = routeOf(config({ route: 'inheritance: override' }));
    assert.equal(who(route), 'route');
    assert.equal(rules(route).length, 3, 'authorization is not among the route policy’s fields');
    const explicit = routeOf(config({ gateway: 'inheritance: default' }));
    assert.equal(who(explicit), 'inline');
  });

  test('beside a default policy on the same target, or under a default on a more specific one, the override’s value is fixed', () => {
    const same = (order: 'override first' | 'default first') => {
      const entries = [
        `- target: {gateway: main}\n  inheritance: override\n  policy: {requestHeaderModifier: {set: {x-who: platform}}}`,
        `- target: {gateway: main}\n  policy: {requestHeaderModifier: {set: {x-who: team}}}`,
      ];
      if (order === 'default first') entries.reverse();
      return routeOf(`gateways:
  main: {port: 8080, listeners: [{name: web}]}
routes:
- {name: r1, gateways: [main], backends: [{host: "127.0.0.1:9"}]}
policies:
${entries.join('\n')}
`);
    };
    assert.equal(who(same('override first')), 'platform');
    assert.equal(who(same('default first')), 'platform');
    // an override on the gateway's port, a default on its listener
    const port = routeOf(`gateways:
  main: {port: 8080, listeners: [{name: web}]}
routes:
- {name: r1, gateways: [main], backends: [{host: "127.0.0.1:9"}]}
policies:
- target: {gateway: {gatewayName: main, gatewayNamespace: default, port: 8080}}
  inheritance: override
  policy: {requestHeaderModifier: {set: {x-who: port}}}
- target: {listener: main/web}
  policy: {requestHeaderModifier: {set: {x-who: listener}}}
`);
    assert.equal(who(port), 'port');
  });

  test('a policy on a backend takes no inheritance', () => {
    assert.throws(
      () =>
        load(`${config({})}- target: {backend: b}
  inheritance: override
  policy: {backendTLS: {}}
backends:
- name: b
  host: 127.0.0.1:9
`),
      /policies\[4\]\.inheritance: inheritance applies to policies on a gateway, listener or route/,
    );
  });

  test('through the proxy: the header the backend sees is the override’s, a path only the route allowed is refused', async (t) => {
    const up = await startUpstream();
    t.after(() => up.close());
    const p = await startProxy(
      config({ listener: 'inheritance: override', backend: `127.0.0.1:${up.port}` }),
    );
    t.after(() => p.close());
    const ok = await fetch(`http://127.0.0.1:${p.port()}/b/x`);
    assert.equal(ok.status, 200);
    const seen = (await ok.json()) as { headers: Record<string, string> };
    assert.equal(seen.headers['x-who'], 'listener');
    const refused = await fetch(`http://127.0.0.1:${p.port()}/c/x`);
    assert.equal(refused.status, 403, 'the route’s own authorization rule was dropped');
    await refused.arrayBuffer();
  });
});
