// What the gateway reads of A2A's JSON-RPC, in the 0.3 and the 1.0 shapes, and what it refuses.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GwError } from '../errors.ts';
import type { A2aRequestInfo } from './info.ts';
import { methodLabel, taskStateName } from './info.ts';
import { type AnswerState, readAnswer, readRequest } from './jsonrpc.ts';

const req = (body: unknown): A2aRequestInfo => {
  const info: A2aRequestInfo = { method: 'unknown' };
  readRequest(Buffer.from(typeof body === 'string' ? body : JSON.stringify(body)), info);
  return info;
};

test('the task a request names: tasks/* by id, a message by its taskId, push configs by taskId', () => {
  assert.deepEqual(req({ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 't1' } }), {
    method: 'tasks/get',
    id: 1,
    taskId: 't1',
  });
  const send = req({
    jsonrpc: '2.0',
    id: 'a',
    method: 'SendMessage',
    params: { message: { messageId: 'm', taskId: 't2', contextId: 'c2' } },
  });
  assert.deepEqual([send.taskId, send.contextId], ['t2', 'c2']);
  const push = req({
    jsonrpc: '2.0',
    id: 2,
    method: 'GetTaskPushNotificationConfig',
    params: { taskId: 't3', id: 'cfg' },
  });
  assert.equal(push.taskId, 't3');
});

test('malformed requests: -32700 for non-JSON, -32600 for JSON that is not one JSON-RPC 2.0 request', () => {
  const code = (body: string) => {
    const info: A2aRequestInfo = { method: 'unknown' };
    try {
      readRequest(Buffer.from(body), info);
    } catch (e) {
      assert.ok(e instanceof GwError);
      assert.equal(info.outcome, 'invalid');
      return e.code;
    }
    return 'accepted';
  };
  assert.equal(code(''), 'GW_ERR_JSONRPC_PARSE');
  assert.equal(code('{"jsonrpc":'), 'GW_ERR_JSONRPC_PARSE');
  for (const b of [
    '[{"jsonrpc":"2.0","method":"tasks/get","id":1}]',
    '"x"',
    '{"jsonrpc":"2.0","method":"","id":1}',
    '{"jsonrpc":"2.0","method":"tasks/get","id":{}}',
    '{"jsonrpc":"2.0","method":"tasks/get","params":"x"}',
    '{"method":"tasks/get"}',
  ])
    assert.equal(code(b), 'GW_ERR_JSONRPC_INVALID', b);
  // A notification (no id) is a request too; an object not trying to be JSON-RPC is not refused.
  assert.equal(code('{"jsonrpc":"2.0","method":"tasks/cancel","params":{"id":"t"}}'), 'accepted');
  const rest: A2aRequestInfo = { method: 'unknown' };
  assert.equal(readRequest(Buffer.from('{"message":{}}'), rest), false);
});

test('answers: 0.3 kinds and 1.0 wrappers give the task, its state and the outcome', () => {
  const cases: [unknown, Partial<A2aRequestInfo>][] = [
    [
      { kind: 'task', id: 't', contextId: 'c', status: { state: 'input-required' } },
      { taskId: 't', taskState: 'input-required' },
    ],
    [
      { kind: 'status-update', taskId: 't', status: { state: 'working' }, final: false },
      { taskId: 't', taskState: 'working' },
    ],
    [{ kind: 'message', taskId: 't', contextId: 'c' }, { taskId: 't' }],
    [
      { task: { id: 't', contextId: 'c', status: { state: 'TASK_STATE_COMPLETED' } } },
      { taskId: 't', taskState: 'completed' },
    ],
    [
      { statusUpdate: { taskId: 't', status: { state: 'TASK_STATE_AUTH_REQUIRED' } } },
      { taskId: 't', taskState: 'auth-required' },
    ],
    [{ artifactUpdate: { taskId: 't', artifact: {} } }, { taskId: 't' }],
    // 1.0's GetTask answers the Task itself
    [
      { id: 't', contextId: 'c', status: { state: 'TASK_STATE_CANCELED' } },
      { taskId: 't', taskState: 'canceled' },
    ],
  ];
  for (const [result, want] of cases) {
    const info: A2aRequestInfo = { method: 'm' };
    const seen: AnswerState = { result: false, error: false };
    assert.equal(readAnswer(JSON.stringify({ jsonrpc: '2.0', id: 1, result }), info, seen), true);
    assert.equal(seen.result, true);
    for (const [k, v] of Object.entries(want))
      assert.equal(info[k as keyof A2aRequestInfo], v, JSON.stringify(result));
  }
  const info: A2aRequestInfo = { method: 'm', taskId: 'mine' };
  const seen: AnswerState = { result: false, error: false };
  readAnswer('{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"Task not found"}}', info, seen);
  assert.deepEqual([seen.error, info.errorCode, info.taskId], [true, -32001, 'mine']);
  assert.equal(readAnswer('<html>', info, seen), false);
  assert.equal(readAnswer('{"jsonrpc":"2.0","id":1}', info, seen), false);
});

test('metric labels: A2A method names kept, others grouped; states in one spelling', () => {
  assert.equal(methodLabel('message/send'), 'message/send');
  assert.equal(methodLabel('SubscribeToTask'), 'SubscribeToTask');
  assert.equal(methodLabel('x'.repeat(100)), 'other');
  assert.equal(taskStateName('TASK_STATE_INPUT_REQUIRED'), 'input-required');
  assert.equal(taskStateName(3), undefined);
});
