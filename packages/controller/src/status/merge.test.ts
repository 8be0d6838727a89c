import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mergeConditions, mergeStatus, statusChanged } from './merge.ts';

const T0 = '2026-01-01T00:00:00Z';
const T1 = '2026-01-02T00:00:00Z';
const accepted = { type: 'Accepted', status: 'True' as const, reason: 'Accepted', message: 'ok' };

test('a condition keeps its transition time while its status holds, and gets a new one when it flips', () => {
  const first = mergeConditions(undefined, [accepted], T0);
  assert.equal(first[0]?.lastTransitionTime, T0);
  const same = mergeConditions(first, [{ ...accepted, message: 'still ok' }], T1);
  assert.equal(same[0]?.lastTransitionTime, T0);
  const flipped = mergeConditions(first, [{ ...accepted, status: 'False' }], T1);
  assert.equal(flipped[0]?.lastTransitionTime, T1);
});

test('GwModel parents are written like route parents (not dropped as an unknown kind’s fields)', () => {
  const desired = {
    parents: [
      {
        parentRef: {
          group: 'gateway.networking.k8s.io',
          kind: 'Gateway',
          namespace: 'default',
          name: 'edge',
        },
        controllerName: 'gw.dev/gw',
        conditions: [accepted],
      },
    ],
  };
  const merged = mergeStatus('GwModel', undefined, desired, 'gw.dev/gw', T1);
  const parents = merged['parents'] as { conditions: { reason: string; lastTransitionTime: string }[] }[];
  assert.equal(parents.length, 1);
  assert.deepEqual(parents[0]?.conditions[0], { ...accepted, lastTransitionTime: T1 });
});

test('route parents of other controllers are kept; ours are replaced', () => {
  const theirs = {
    parentRef: { name: 'other-gw' },
    controllerName: 'example.com/other',
    conditions: [{ ...accepted, lastTransitionTime: T0 }],
  };
  const oursBefore = {
    parentRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'default', name: 'edge' },
    controllerName: 'gw.dev/gw',
    conditions: [{ ...accepted, lastTransitionTime: T0 }],
  };
  const desired = {
    parents: [
      { ...oursBefore, conditions: [{ ...accepted, status: 'False', reason: 'NotAllowedByListeners' }] },
    ],
  };
  const merged = mergeStatus('HTTPRoute', { parents: [theirs, oursBefore] }, desired, 'gw.dev/gw', T1);
  const parents = merged['parents'] as {
    controllerName: string;
    conditions: { status: string; lastTransitionTime: string }[];
  }[];
  assert.equal(parents.length, 2);
  assert.deepEqual(parents[0], theirs);
  assert.equal(parents[1]?.conditions[0]?.status, 'False');
  assert.equal(parents[1]?.conditions[0]?.lastTransitionTime, T1);
});

test('policy ancestors of other controllers are kept', () => {
  const theirs = { ancestorRef: { name: 'x' }, controllerName: 'example.com/other', conditions: [] };
  const merged = mergeStatus(
    'GwPolicy',
    { ancestors: [theirs] },
    { ancestors: [{ ancestorRef: { name: 'edge' }, controllerName: 'gw.dev/gw', conditions: [accepted] }] },
    'gw.dev/gw',
    T0,
  );
  assert.equal((merged['ancestors'] as unknown[]).length, 2);
});

test('Gateway status keeps fields it does not own (addresses) and merges listener conditions by name', () => {
  const current = {
    addresses: [{ type: 'IPAddress', value: '10.0.0.1' }],
    conditions: [{ ...accepted, lastTransitionTime: T0 }],
    listeners: [{ name: 'http', attachedRoutes: 1, conditions: [{ ...accepted, lastTransitionTime: T0 }] }],
  };
  const desired = {
    conditions: [accepted],
    listeners: [{ name: 'http', attachedRoutes: 2, conditions: [accepted] }],
  };
  const merged = mergeStatus('Gateway', current, desired, 'gw.dev/gw', T1);
  assert.deepEqual(merged['addresses'], current.addresses);
  const listeners = merged['listeners'] as {
    attachedRoutes: number;
    conditions: { lastTransitionTime: string }[];
  }[];
  assert.equal(listeners[0]?.attachedRoutes, 2);
  assert.equal(listeners[0]?.conditions[0]?.lastTransitionTime, T0);
  assert.ok(statusChanged(current, merged), 'attachedRoutes changed');
});

test('a status that differs only in condition times is not written again', () => {
  const a = { conditions: [{ ...accepted, lastTransitionTime: T0 }] };
  const b = { conditions: [{ ...accepted, lastTransitionTime: T1 }] };
  assert.equal(statusChanged(a, b), false);
  assert.equal(
    statusChanged(a, { conditions: [{ ...accepted, message: 'other', lastTransitionTime: T0 }] }),
    true,
  );
});
