// xDS resources → standalone document → IR: the same loader as a file, issues named after resources.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { fromJson, type JsonValue } from '@bufbuild/protobuf';
import { ConfigError } from '@gw/api';
import { type Resource, ResourceSchema } from '@gw/xds-proto/gw/resource/v1/resource';
import { loadConfigObject } from '../config/load.ts';
import { assembleConfig } from './assemble.ts';

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
