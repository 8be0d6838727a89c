// A field left empty (YAML null: `policies:` with everything under it commented out) is read as
// absent where the field is optional, as agentgateway reads such a file; it was refused ("expected
// object, received null"). A field where null means something keeps it; a required one left empty
// is still an error that says it got nothing.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfigText } from './load.ts';

const load = (yaml: string) => loadConfigText('t.yaml', yaml, process.cwd());

test('optional fields left empty load as absent, in unions (backends) too', () => {
  const { ir } = load(`config:
frontendPolicies:
policies:
binds:
- port: 0
  listeners:
  - name:
    hostname:
    tls:
    routes:
    - name:
      matches:
      policies:
      backends:
      - host: 127.0.0.1:1
        policies:
`);
  const route = ir.binds[0]?.listeners[0]?.routes[0];
  assert.ok(route, 'the route loads');
  assert.equal(ir.binds[0]?.listeners[0]?.name, 'listener0');
});

test('null where it means something stays null; a required field left empty is an error', () => {
  const { ir } = load(`config: {backend: {poolMaxSize: null}}
binds: [{port: 0, listeners: [{routes: [{backends: [{host: "127.0.0.1:1"}]}]}]}]
`);
  assert.equal(ir.global.poolMaxSize, null, 'null: no limit');
  assert.throws(
    () =>
      load(`binds:
- port: 0
  listeners:
  - routes:
    - backends:
      - host:
`),
    /t\.yaml:6:\d+: binds\[0\]\.listeners\[0\]\.routes\[0\]\.backends\[0\]/,
  );
});
