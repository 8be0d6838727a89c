import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { GwctlError } from './errors.ts';
import { choosePod, GATEWAY_NAME_LABEL, gatewaySelector } from './gateway-pods.ts';

const gw = { namespace: 'prod', name: 'web' };

function pod(
  name: string,
  o: { phase?: string; ready?: boolean; created?: string; deleting?: boolean } = {},
): V1Pod {
  return {
    metadata: {
      name,
      namespace: 'prod',
      labels: { [GATEWAY_NAME_LABEL]: 'web' },
      creationTimestamp: new Date(o.created ?? '2026-01-01T00:00:00Z'),
      ...(o.deleting ? { deletionTimestamp: new Date('2026-05-01T00:00:00Z') } : {}),
    },
    status: {
      phase: o.phase ?? 'Running',
      conditions: [
        { type: 'PodScheduled', status: 'True' },
        { type: 'Ready', status: o.ready === false ? 'False' : 'True' },
      ],
    },
  };
}

const fails = (pods: V1Pod[], message: string) =>
  assert.throws(
    () => choosePod(pods, gw),
    (e: unknown) =>
      e instanceof GwctlError && e.code === 'GWCTL_ERR_NO_PROXY_POD' && e.exit === 1 && e.message === message,
  );

test('the selector is the Gateway name label', () => {
  assert.equal(gatewaySelector('web'), 'gateway.networking.k8s.io/gateway-name=web');
});

test('only a running, ready pod that is not being deleted is chosen', () => {
  assert.equal(
    choosePod(
      [
        pod('pending', { phase: 'Pending', ready: false }),
        pod('unready', { ready: false }),
        pod('deleting', { deleting: true }),
        pod('succeeded-but-ready', { phase: 'Succeeded' }),
        pod('good', { created: '2025-01-01T00:00:00Z' }),
      ],
      gw,
    ),
    'good',
  );
});

test('the newest ready pod wins; the name breaks a tie', () => {
  const pods = [
    pod('web-a', { created: '2026-01-01T00:00:00Z' }),
    pod('web-c', { created: '2026-03-01T00:00:00Z' }),
    pod('web-b', { created: '2026-02-01T00:00:00Z' }),
    pod('web-d', { created: '2026-04-01T00:00:00Z', ready: false }),
  ];
  assert.equal(choosePod(pods, gw), 'web-c');
  assert.equal(choosePod(pods.reverse(), gw), 'web-c', 'the order of the list does not matter');
  assert.equal(choosePod([pod('web-y'), pod('web-x')], gw), 'web-x');
});

test('a pod without a Ready condition or a status is not ready', () => {
  const bare: V1Pod = { metadata: { name: 'bare' } };
  const noConditions: V1Pod = { metadata: { name: 'nc' }, status: { phase: 'Running' } };
  fails(
    [bare, noConditions],
    'no ready proxy pod for Gateway prod/web: bare (no phase), nc (Running, not ready)',
  );
});

test('no pods at all names the Gateway and the label', () => {
  fails([], `no proxy pods for Gateway prod/web (label ${GATEWAY_NAME_LABEL}=web)`);
});

test('none ready lists every pod with its phase', () => {
  fails(
    [
      pod('web-1', { phase: 'Pending', ready: false }),
      pod('web-2', { ready: false }),
      pod('web-3', { deleting: true }),
    ],
    'no ready proxy pod for Gateway prod/web: web-1 (Pending), web-2 (Running, not ready), web-3 (Running, terminating)',
  );
});
