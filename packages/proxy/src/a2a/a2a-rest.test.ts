// A2A's HTTP+JSON (REST) binding through the gateway: @a2a-js/sdk's agent serving its REST handler
// beside JSON-RPC, and the SDK's client choosing HTTP+JSON from the card it got through the gateway.
// Each call is read by its method and path — the operation as a2a.method, the task from the path or
// the message, the task's state from the answer (JSON or a stream) — for the access log, CEL rules
// and metrics; an authorization rule on the operation holds for REST as for JSON-RPC, and the
// gateway's own errors come in the binding's error shape.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Task } from '@a2a-js/sdk';
import { type Client, ClientFactory, ClientFactoryOptions } from '@a2a-js/sdk/client';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { request } from 'undici';
import { REST_PATH, startAgent, type TestAgent, userText } from './test-support.ts';

let agent: TestAgent;
let proxy: TestProxy;
let client: Client;

const gateway = () => `http://127.0.0.1:${proxy.port()}`;

before(async () => {
  agent = await startAgent({ rest: true });
  proxy = await startProxy(`
frontendPolicies:
  accessLog:
    add:
      cel.task: 'a2a.taskId'
      cel.state: 'has(a2a.taskState) ? a2a.taskState : ""'
binds:
  - port: 0
    listeners:
      - routes:
          - name: agent
            policies:
              a2a: {}
              authorization:
                rules: [{ deny: 'a2a.method in ["CancelTask", "tasks/cancel"]' }]
            backends: [{ host: 127.0.0.1:${agent.port} }]
`);
  const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    preferredTransports: ['HTTP+JSON'],
  });
  client = await new ClientFactory(options).createFromUrl(gateway());
});

after(async () => {
  await proxy?.close();
  await agent?.close();
});

/** The access log line of the last request with this A2A method. */
async function logOf(method: string): Promise<Record<string, unknown>> {
  await new Promise((r) => setTimeout(r, 30));
  const line = proxy.accessLog.findLast((l) => l['a2a.method'] === method);
  assert.ok(line, `no access log line for ${method}: ${JSON.stringify(proxy.accessLog.slice(-3))}`);
  return line;
}

const isTask = (r: unknown): r is Task => typeof r === 'object' && r !== null && 'status' in r;

describe('the SDK client over HTTP+JSON', () => {
  test('the card names the gateway for the REST interface, and the client uses it', async () => {
    const card = await client.getAgentCard();
    const rest = card.supportedInterfaces.find((i) => i.protocolBinding === 'HTTP+JSON');
    assert.equal(rest?.url, `${gateway()}${REST_PATH}`);
    const before = agent.calls.length;
    const r = await client.sendMessage(userText('hello'));
    assert.ok(isTask(r), 'a task');
    assert.deepEqual(agent.calls.slice(before), [`POST ${REST_PATH}/message:send`]);
    const log = await logOf('SendMessage');
    assert.equal(log['a2a.outcome'], 'ok');
    assert.equal(log['cel.task'], r.id);
    assert.equal(log['cel.state'], 'completed');
    assert.equal(log['http.path'], `${REST_PATH}/message:send`);
  });

  test('a stream: SendStreamingMessage, its task and last state read from the events', async () => {
    const events: unknown[] = [];
    for await (const e of client.sendMessageStream(userText('quick'))) events.push(e);
    assert.ok(events.length >= 2);
    const log = await logOf('SendStreamingMessage');
    assert.equal(log['a2a.outcome'], 'ok');
    assert.equal(log['cel.state'], 'completed');
    assert.ok(typeof log['cel.task'] === 'string' && log['cel.task'] !== '');
  });

  test('GetTask: the task from the path', async () => {
    const sent = await client.sendMessage(userText('remember me'));
    assert.ok(isTask(sent));
    const got = await client.getTask({ tenant: '', id: sent.id, historyLength: undefined });
    assert.equal(got.id, sent.id);
    const log = await logOf('GetTask');
    assert.equal(log['cel.task'], sent.id);
    assert.equal(log['cel.state'], 'completed');
    assert.equal(log['a2a.outcome'], 'ok');
  });

  test('an authorization rule on the operation holds: CancelTask is denied in the binding’s error shape', async () => {
    const before = agent.calls.length;
    const err = await client.cancelTask({ tenant: '', id: 'some-task', metadata: undefined }).catch((e) => e);
    assert.ok(err instanceof Error, String(err));
    assert.equal(agent.calls.length, before, 'the agent was not called');
    const log = await logOf('CancelTask');
    assert.equal(log['http.status'], 403);
    assert.equal(log['cel.task'], 'some-task');
    const raw = await request(`${gateway()}${REST_PATH}/tasks/some-task:cancel`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    assert.equal(raw.statusCode, 403);
    assert.deepEqual(await raw.body.json(), {
      error: { code: 403, status: 'PERMISSION_DENIED', message: 'authorization denied' },
    });
    // the agent's router takes any letter case, a trailing slash and an encoded colon: so does the rule
    for (const path of ['/TASKS/some-task:CANCEL/', '/tasks/some-task%3Acancel']) {
      const r = await request(`${gateway()}${REST_PATH}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      await r.body.text();
      assert.equal(r.statusCode, 403, path);
    }
    assert.equal(agent.calls.length, before, 'the agent was never called');
  });
});

describe('paths of the binding', () => {
  test('A2A 0.3’s /v1 paths read as its method names; an error status is the outcome error', async () => {
    const r = await request(`${gateway()}/v1/tasks/t-03`, { method: 'GET' });
    await r.body.text();
    assert.equal(r.statusCode, 404, 'the agent serves no 0.3 REST');
    const log = await logOf('tasks/get');
    assert.equal(log['cel.task'], 't-03');
    assert.equal(log['a2a.outcome'], 'error');
  });

  test('ListTasks, and a push config path names its task; a path of no operation is not read', async () => {
    const list = await request(`${gateway()}${REST_PATH}/tasks`, { method: 'GET' });
    await list.body.text();
    // the outcome follows the agent's status (the SDK's in-memory store may not list)
    assert.equal((await logOf('ListTasks'))['a2a.outcome'], list.statusCode < 400 ? 'ok' : 'error');
    await (
      await request(`${gateway()}${REST_PATH}/tasks/t%2F1/pushNotificationConfigs/c1`, { method: 'DELETE' })
    ).body.text();
    assert.equal((await logOf('DeleteTaskPushNotificationConfig'))['cel.task'], 't/1');
    const n = proxy.accessLog.length;
    await (await request(`${gateway()}/healthz`, { method: 'GET' })).body.text();
    await new Promise((r) => setTimeout(r, 30));
    assert.equal(proxy.accessLog[n]?.['a2a.method'], undefined);
  });
});
