// The effective shutdown of a Gateway's GwParameters and the typed fields its status names as not
// applied (the goldens gwparameters-*.yaml show them end to end).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { durationMs, shutdownOf, typedNotApplied } from './parameters.ts';

test('durationMs reads the CRD’s durations', () => {
  assert.equal(durationMs('30s'), 30_000);
  assert.equal(durationMs('1m30s'), 90_000);
  assert.equal(durationMs('1h2m3s4ms'), 3_723_004);
  assert.equal(durationMs('250ms'), 250);
  assert.equal(durationMs(''), undefined);
  assert.equal(durationMs('5 seconds'), undefined);
});

test('shutdownOf: each field the gateway’s, else the class’s; a min past max raises max', () => {
  assert.deepEqual(shutdownOf({}), {});
  assert.deepEqual(shutdownOf({ class: { shutdown: { min: '5s', max: '1m' } } }), { min: '5s', max: '1m' });
  assert.deepEqual(
    shutdownOf({ class: { shutdown: { max: '1m' } }, gateway: { shutdown: { min: '10s' } } }),
    {
      min: '10s',
      max: '1m',
    },
  );
  assert.deepEqual(shutdownOf({ gateway: { shutdown: { min: '10s' } } }), { min: '10s' });
  assert.deepEqual(shutdownOf({ gateway: { shutdown: { min: '45s' } } }), { min: '45s', max: '45s' });
  assert.deepEqual(shutdownOf({ class: { shutdown: { min: '2m' } }, gateway: { shutdown: { max: '1m' } } }), {
    min: '2m',
    max: '2m',
  });
});

test('typedNotApplied names istio, spiffe and modelCatalog only when they ask for something', () => {
  assert.deepEqual(typedNotApplied({}), []);
  assert.deepEqual(
    typedNotApplied({
      gateway: { istio: { enabled: false, trustDomain: 'cluster.local' }, spiffe: { enabled: false } },
    }),
    [],
  );
  assert.deepEqual(typedNotApplied({ gateway: { modelCatalog: { enabled: false } } }), []);
  assert.deepEqual(
    typedNotApplied({ class: { istio: { enabled: true } }, gateway: { spiffe: { socketPath: '/s.sock' } } }),
    ['istio (the proxy has no Istio mTLS yet)', 'spiffe (the proxy has no SPIFFE workload identity yet)'],
  );
  // the gateway's block replaces the class's
  assert.deepEqual(
    typedNotApplied({ class: { istio: { enabled: true } }, gateway: { istio: { enabled: false } } }),
    [],
  );
  assert.deepEqual(typedNotApplied({ class: { modelCatalog: {} }, gateway: { modelCatalog: {} } }), [
    "modelCatalog on the GatewayClass's parameters (Gateway level only)",
    'modelCatalog (the proxy has no model catalog yet)',
  ]);
});
