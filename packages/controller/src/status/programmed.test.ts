import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Condition, StatusUpdate } from '../translator/types.ts';
import type { ProxyAckState } from '../xds/server.ts';
import { programmedCondition, withProxyStates } from './programmed.ts';

const sent: Condition = {
  type: 'Programmed',
  status: 'True',
  reason: 'Programmed',
  message: 'sent to the proxies',
  observedGeneration: 3,
};
const proxy = (node: string, state: ProxyAckState['state'], message?: string): ProxyAckState => ({
  node,
  stream: node.length,
  state,
  ...(message ? { message } : {}),
});
const brief = (c: Condition) => [c.status, c.reason, c.message];

describe('Programmed follows the proxies', () => {
  test('a provisioned Deployment without an available replica: False, Pending, whatever the proxies say', () => {
    const none = { desired: 2, available: 0 };
    assert.deepEqual(brief(programmedCondition(sent, [proxy('a', 'acked')], undefined, none)), [
      'False',
      'Pending',
      'the proxy workload has 0 of 2 replicas available',
    ]);
    const one = { desired: 2, available: 1 };
    assert.deepEqual(brief(programmedCondition(sent, [proxy('a', 'acked')], undefined, one)).slice(0, 2), [
      'True',
      'Programmed',
    ]);
  });

  test('no proxy connected: True, Pending, and it says so', () => {
    assert.deepEqual(brief(programmedCondition(sent, [])), [
      'True',
      'Pending',
      'no proxy of this Gateway is connected; the configuration is ready for it',
    ]);
  });

  test('every connected proxy acknowledged the current version: True, Programmed', () => {
    assert.deepEqual(brief(programmedCondition(sent, [proxy('a', 'acked')])), [
      'True',
      'Programmed',
      'acknowledged by the connected proxy',
    ]);
    const c = programmedCondition({ ...sent, message: 'sent to the proxies without listeners b' }, [
      proxy('a', 'acked'),
      proxy('bb', 'acked'),
    ]);
    assert.deepEqual(brief(c), [
      'True',
      'Programmed',
      'acknowledged by all 2 connected proxies without listeners b',
    ]);
    assert.equal(c.observedGeneration, 3);
  });

  test('a NACK: False, ConfigRejected, with the proxy error', () => {
    const c = programmedCondition(sent, [
      proxy('a', 'acked'),
      proxy('bb', 'nacked', 'policy/x: traffic.cors.nope: unknown field "nope"'),
    ]);
    assert.deepEqual(brief(c), [
      'False',
      'ConfigRejected',
      'proxy bb rejected the configuration: policy/x: traffic.cors.nope: unknown field "nope"',
    ]);
  });

  test('an answer still awaited keeps the verdict written before, else says what it waits for', () => {
    const before = { ...sent, message: 'acknowledged by the connected proxy', lastTransitionTime: 'T' };
    assert.deepEqual(programmedCondition(sent, [proxy('a', 'pending')], before), {
      ...sent,
      message: 'acknowledged by the connected proxy',
    });
    assert.deepEqual(brief(programmedCondition(sent, [proxy('a', 'pending'), proxy('bb', 'acked')])), [
      'True',
      'Pending',
      'waiting for 1 of 2 connected proxies to acknowledge the configuration',
    ]);
    const noProxyBefore = { ...sent, reason: 'Pending', message: 'no proxy of this Gateway is connected' };
    assert.equal(programmedCondition(sent, [proxy('a', 'pending')], noProxyBefore).reason, 'Pending');
    assert.match(
      programmedCondition(sent, [proxy('a', 'pending')], noProxyBefore).message,
      /waiting for 1 of 1/,
    );
  });

  test('a Gateway the translator found nothing to send for keeps its condition', () => {
    const invalid: Condition = {
      type: 'Programmed',
      status: 'False',
      reason: 'Invalid',
      message: 'no valid listener',
    };
    assert.equal(programmedCondition(invalid, [proxy('a', 'nacked', 'x')]), invalid);
  });

  test('withProxyStates rewrites only Gateways, by namespace/name', () => {
    const statuses: StatusUpdate[] = [
      { kind: 'Gateway', namespace: 'ns', name: 'edge', status: { conditions: [sent], listeners: [] } },
      { kind: 'ListenerSet', namespace: 'ns', name: 'more', status: { conditions: [sent] } },
    ];
    const asked: string[] = [];
    const out = withProxyStates(
      statuses,
      (gw) => {
        asked.push(gw);
        return [proxy('a', 'acked')];
      },
      () => undefined,
    );
    assert.deepEqual(asked, ['ns/edge']);
    assert.equal(
      (out[0]?.status['conditions'] as Condition[] | undefined)?.[0]?.message,
      'acknowledged by the connected proxy',
    );
    assert.deepEqual(out[0]?.status['listeners'], []);
    assert.equal(out[1], statuses[1]);
  });
});
