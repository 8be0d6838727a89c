// A2A through the gateway with real parts: @a2a-js/sdk's agent (test-support.ts) behind a route with
// agentgateway's `a2a: {}` policy, and the SDK's client discovering it through the gateway. The card
// it gets names the gateway; every later call (send, stream, get, cancel, resubscribe; A2A 1.0 and
// 0.3 method names) goes through the gateway, which reports method, task and outcome in the access
// log, CEL, the trace and gw_a2a_requests_total. Streams pass unbuffered; malformed JSON-RPC gets a
// JSON-RPC error; a card that is not JSON passes untouched.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { type Message, Role, type SendMessageRequest, type Task } from '@a2a-js/sdk';
import {
  type Client,
  ClientFactory,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from '@a2a-js/sdk/client';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { AGENT_PATH, startAgent, type TestAgent } from './test-support.ts';

let agent: TestAgent;
let proxy: TestProxy;
let plain: Server;
let plainPort: number;

function config(): string {
  return `
frontendPolicies:
  accessLog:
    add:
      cel.task: 'a2a.taskId'
      cel.state: 'has(a2a.taskState) ? a2a.taskState : ""'
  http:
    trustedProxies: [127.0.0.1]
binds:
  - port: 0
    listeners:
      - routes:
          - name: locked
            matches: [{ path: { pathPrefix: /locked } }]
            policies:
              a2a: {}
              urlRewrite: { path: { prefix: / } }
              authorization:
                rules: [{ deny: 'a2a.method == "SendMessage" || a2a.method == "message/send"' }]
            backends: [{ host: 127.0.0.1:${agent.port} }]
          - name: limited
            matches: [{ path: { pathPrefix: /limited } }]
            policies:
              a2a: {}
              urlRewrite: { path: { prefix: / } }
              localRateLimit: [{ maxTokens: 1, tokensPerFill: 1, fillInterval: 1h }]
            backends: [{ host: 127.0.0.1:${agent.port} }]
          - name: prefixed
            matches: [{ path: { pathPrefix: /agents/echo } }]
            policies:
              a2a: {}
              urlRewrite: { path: { prefix: / } }
            backends: [{ host: 127.0.0.1:${agent.port} }]
          - name: retried
            matches: [{ path: { pathPrefix: /retried } }]
            policies: { a2a: {}, retry: { codes: [503], attempts: 1 } }
            backends: [{ host: 127.0.0.1:${plainPort} }]
          - name: plain
            matches: [{ path: { pathPrefix: /plain } }]
            backends: [{ host: 127.0.0.1:${plainPort}, policies: { a2a: {} } }]
          - name: agent
            policies:
              a2a: {}
            backends: [{ host: 127.0.0.1:${agent.port} }]
`;
}

before(async () => {
  agent = await startAgent();
  // An upstream whose card is not a JSON card: HTML at agent-card.json, 404 at agent.json.
  let tries = 0;
  plain = createServer((req, res) => {
    if (req.url?.startsWith('/retried')) {
      // The first attempt: 503 with a JSON-RPC error; the retry: a result.
      const busy = tries++ % 2 === 0;
      res.writeHead(busy ? 503 : 200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify(
          busy
            ? { jsonrpc: '2.0', id: 1, error: { code: -32000, message: 'busy' } }
            : { jsonrpc: '2.0', id: 1, result: { kind: 'task', id: 'r1', status: { state: 'completed' } } },
        ),
      );
      return;
    }
    if (req.url?.endsWith('/agent-card.json')) {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>not a card, http://127.0.0.1/</html>');
    } else {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{"url":"http://127.0.0.1:1/"}');
    }
  });
  await new Promise<void>((r) => plain.listen(0, '127.0.0.1', r));
  plainPort = (plain.address() as AddressInfo).port;
  proxy = await startProxy(config());
});

after(async () => {
  await proxy?.close();
  await agent?.close();
  plain?.close();
});

const gateway = () => `http://127.0.0.1:${proxy.port()}`;

function userMessage(text: string, taskId = ''): Message {
  return {
    messageId: crypto.randomUUID(),
    contextId: '',
    taskId,
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text } } as Message['parts'][number]],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

function send(text: string, returnImmediately = false): SendMessageRequest {
  return {
    tenant: '',
    message: userMessage(text),
    configuration: {
      acceptedOutputModes: ['text/plain'],
      taskPushNotificationConfig: undefined,
      returnImmediately,
    },
    metadata: undefined,
  };
}

/** The access log line of the last request with this A2A method. */
function logOf(method: string): Record<string, unknown> {
  const line = proxy.accessLog.findLast((l) => l['a2a.method'] === method);
  assert.ok(line, `no access log line for ${method}: ${JSON.stringify(proxy.accessLog.slice(-3))}`);
  return line;
}

async function metric(method: string, outcome: string): Promise<number> {
  const m = (await proxy.metrics.registry.getMetricsAsJSON()).find((x) => x.name === 'gw_a2a_requests_total');
  const v = m?.values.filter((x) => x.labels.method === method && x.labels.outcome === outcome);
  return (v ?? []).reduce((n, x) => n + x.value, 0);
}

/** Fails instead of hanging when an awaited event never comes. */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

function isTask(r: unknown): r is Task {
  return typeof r === 'object' && r !== null && 'status' in r;
}

describe('A2A 1.0 client through the gateway', () => {
  let client: Client;
  before(async () => {
    client = await new ClientFactory().createFromUrl(gateway());
  });

  test('the card the client discovered names the gateway, not the agent', async () => {
    const card = await client.getAgentCard();
    const urls = card.supportedInterfaces.map((i) => i.url);
    assert.ok(urls.length >= 1);
    for (const u of urls) assert.equal(u, `${gateway()}${AGENT_PATH}`);
    assert.equal(logOf('agent-card')['a2a.outcome'], 'rewritten');
  });

  test('SendMessage: the gateway sees the method, the task and its state', async () => {
    const before = agent.calls.length;
    const r = await client.sendMessage(send('hello'));
    assert.ok(isTask(r));
    assert.deepEqual(agent.calls.slice(before), ['SendMessage']);
    const line = logOf('SendMessage');
    assert.equal(line['a2a.outcome'], 'ok');
    assert.equal(line['a2a.taskId'], r.id);
    assert.equal(line['a2a.taskState'], 'completed');
    assert.equal(line['cel.task'], r.id, 'a2a.* is visible to CEL');
    assert.equal(line['cel.state'], 'completed');
    assert.equal(await metric('SendMessage', 'ok'), 1);

    const got = await client.getTask({ tenant: '', id: r.id });
    assert.equal(got.id, r.id);
    assert.equal(logOf('GetTask')['a2a.taskId'], r.id, 'the task id of tasks/get comes from the request');
  });

  test('SendStreamingMessage streams unbuffered: the first events arrive while the agent is still working', async () => {
    const stream = client.sendMessageStream(send('stream'));
    const first = await within(stream.next(), 5000, 'first streamed event');
    assert.equal(first.done, false);
    await within(agent.streaming, 5000, 'agent working');
    // The agent waits for release(): everything seen so far crossed the gateway before the upstream
    // response ended.
    const seen = [first.value?.payload?.$case];
    const second = await within(stream.next(), 5000, 'second streamed event');
    seen.push(second.value?.payload?.$case);
    agent.release();
    for await (const e of stream) seen.push(e.payload?.$case);
    assert.deepEqual(seen.slice(0, 2), ['task', 'statusUpdate']);
    assert.ok(seen.includes('artifactUpdate'), seen.join(','));
    const line = logOf('SendStreamingMessage');
    assert.equal(line['a2a.outcome'], 'ok');
    assert.equal(line['a2a.taskState'], 'completed');
    assert.match(String(line['a2a.taskId']), /.+/);
  });

  test('CancelTask and SubscribeToTask on a waiting task', async () => {
    const t = await client.sendMessage(send('wait', true));
    assert.ok(isTask(t));
    const sub = client.resubscribeTask({ tenant: '', id: t.id });
    const first = await within(sub.next(), 5000, 'first event of the resubscription');
    assert.equal(first.done, false);
    const canceled = await client.cancelTask({ tenant: '', id: t.id, metadata: undefined });
    assert.equal(canceled.id, t.id);
    const rest: unknown[] = [];
    for await (const e of sub) rest.push(e);
    assert.equal(logOf('CancelTask')['a2a.taskId'], t.id);
    const resub = logOf('SubscribeToTask');
    assert.equal(resub['a2a.taskId'], t.id);
    assert.equal(resub['a2a.outcome'], 'ok');
    assert.equal(resub['a2a.taskState'], 'canceled');
  });
});

describe('A2A 0.3 client (message/send, tasks/*) through the gateway', () => {
  let client: Client;
  before(async () => {
    // The agent's 0.3 card, at the older well-known path, makes the SDK use its 0.3 transport.
    const factory = new ClientFactory({
      transports: [new JsonRpcTransportFactory({ legacyCompat: { enabled: true } })],
      cardResolver: new DefaultAgentCardResolver({ legacyCompat: { enabled: true } }),
    });
    client = await factory.createFromUrl(`${gateway()}/.well-known/agent.json`, '');
  });

  test('0.3 cards are rewritten too (url, additionalInterfaces[].url)', async () => {
    const old = (await (await fetch(`${gateway()}/.well-known/agent.json`)).json()) as {
      url: string;
      additionalInterfaces: { url: string }[];
    };
    assert.deepEqual(
      [old.url, old.additionalInterfaces.map((i) => i.url)],
      [`${gateway()}${AGENT_PATH}`, [`${gateway()}${AGENT_PATH}`]],
    );
    // The SDK's compat card (0.3 fields beside supportedInterfaces) at the current path.
    const res = await fetch(`${gateway()}/.well-known/agent-card.json`, {
      headers: { 'A2A-Version': '0.3' },
    });
    const card = (await res.json()) as { url: string; supportedInterfaces: { url: string }[] };
    assert.equal(card.url, `${gateway()}${AGENT_PATH}`);
    for (const i of card.supportedInterfaces) assert.equal(i.url, `${gateway()}${AGENT_PATH}`);
  });

  test('message/send, message/stream, tasks/get, tasks/cancel and tasks/resubscribe pass through', async () => {
    const before = agent.calls.length;
    const r = await client.sendMessage(send('hello'));
    assert.ok(isTask(r));
    await client.getTask({ tenant: '', id: r.id });
    const events: unknown[] = [];
    for await (const e of client.sendMessageStream(send('echo me'))) events.push(e);
    assert.ok(events.length >= 2);
    const w = await client.sendMessage(send('wait', true));
    assert.ok(isTask(w));
    const sub = client.resubscribeTask({ tenant: '', id: w.id });
    await within(sub.next(), 5000, 'resubscription');
    await client.cancelTask({ tenant: '', id: w.id, metadata: undefined });
    for await (const _ of sub);
    const methods = [
      'message/send',
      'tasks/get',
      'message/stream',
      'message/send',
      'tasks/resubscribe',
      'tasks/cancel',
    ];
    assert.deepEqual(agent.calls.slice(before), methods);
    for (const m of methods) assert.equal(logOf(m)['a2a.outcome'], 'ok', m);
    assert.equal(logOf('tasks/get')['a2a.taskId'], r.id);
    assert.equal(logOf('tasks/resubscribe')['a2a.taskState'], 'canceled');
    assert.equal(await metric('message/stream', 'ok'), 1);
    assert.equal(await metric('tasks/cancel', 'ok'), 1);
  });
});

describe('the gateway itself', () => {
  test('malformed JSON-RPC gets a JSON-RPC error and never reaches the agent', async () => {
    const before = agent.calls.length;
    const post = (body: string) =>
      fetch(`${gateway()}${AGENT_PATH}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
    const notJson = await post('{"jsonrpc": "2.0", "method": ');
    assert.equal(notJson.status, 400);
    const e1 = (await notJson.json()) as { jsonrpc: string; id: null; error: { code: number } };
    assert.equal(e1.jsonrpc, '2.0');
    assert.equal(e1.id, null);
    assert.equal(e1.error.code, -32700);
    for (const body of [
      '[]',
      '{"jsonrpc":"1.0","method":"message/send","id":1}',
      '{"jsonrpc":"2.0","id":2}',
      '42',
    ]) {
      const r = await post(body);
      assert.equal(r.status, 400, body);
      assert.equal(((await r.json()) as { error: { code: number } }).error.code, -32600, body);
    }
    assert.equal(agent.calls.length, before);
    assert.equal(logOf('message/send')['a2a.outcome'], 'invalid');
    assert.ok((await metric('other', 'invalid')) >= 1);
    // Still serving.
    const ok = await post(
      JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'GetTask', params: { id: 'nope' } }),
    );
    assert.equal(ok.status, 200);
    assert.equal(logOf('GetTask')['a2a.outcome'], 'error', 'an unknown task is the agent’s JSON-RPC error');
  });

  test('a call of the HTTP+JSON binding is read by its path and passed on as it is (a2a-rest.test.ts)', async () => {
    const r = await fetch(`${gateway()}/v1/message:send`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'hi' }], taskId: 'rest-t' },
      }),
    });
    // This agent serves only JSON-RPC: its own 404 comes back, not an error of the gateway.
    assert.equal(r.status, 404);
    assert.match(await r.text(), /Cannot POST/);
    const line = proxy.accessLog.at(-1);
    assert.equal(line?.['http.path'], '/v1/message:send');
    assert.deepEqual(
      [line?.['a2a.method'], line?.['a2a.taskId'], line?.['a2a.outcome']],
      ['message/send', 'rest-t', 'error'],
    );
  });

  test('a retried call reports the answer of the attempt that counted', async () => {
    const r = await fetch(`${gateway()}/retried`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 'r1' } }),
    });
    assert.equal(r.status, 200);
    await r.arrayBuffer();
    const line = proxy.accessLog.at(-1);
    assert.deepEqual(
      [line?.['a2a.method'], line?.['a2a.outcome'], line?.['a2a.taskState'], line?.['a2a.errorCode']],
      ['tasks/get', 'ok', 'completed', undefined],
    );
  });

  test('a request body over the buffer limit is refused as JSON-RPC (413)', async () => {
    const big = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'message/send',
      params: { pad: 'x'.repeat(3 * 1024 * 1024) },
    });
    const r = await fetch(`${gateway()}${AGENT_PATH}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: big,
    });
    assert.equal(r.status, 413);
    const e = (await r.json()) as { jsonrpc: string; error: { message: string } };
    assert.equal(e.jsonrpc, '2.0');
    assert.match(e.error.message, /larger than the buffer limit \(\d+ bytes; config\.maxBufferSize\)/);
  });

  test('a card that is not JSON, or a 404, passes untouched', async () => {
    const html = await fetch(`${gateway()}/plain/.well-known/agent-card.json`);
    assert.equal(html.status, 200);
    assert.equal(await html.text(), '<html>not a card, http://127.0.0.1/</html>');
    const missing = await fetch(`${gateway()}/plain/.well-known/agent.json`);
    assert.equal(missing.status, 404);
    assert.equal(await missing.text(), '{"url":"http://127.0.0.1:1/"}');
    assert.equal(logOf('agent-card')['a2a.outcome'], 'untouched');
  });

  test('behind a path prefix and a trusted proxy the card names the external URL and the route path', async () => {
    const r = await fetch(`${gateway()}/agents/echo/.well-known/agent-card.json`, {
      headers: {
        'A2A-Version': '1.0',
        'x-forwarded-proto': 'https',
        'x-forwarded-host': 'agents.example.com',
      },
    });
    const card = (await r.json()) as { supportedInterfaces: { url: string }[] };
    for (const i of card.supportedInterfaces)
      assert.equal(i.url, `https://agents.example.com/agents/echo${AGENT_PATH}`);
    assert.equal(r.headers.get('etag'), null, 'the agent’s ETag does not describe the rewritten card');
    // The SDK client follows it: calls go to /agents/echo/a2a/jsonrpc on the gateway.
    const client = await new ClientFactory().createFromUrl(
      `${gateway()}/agents/echo/.well-known/agent-card.json`,
      '',
    );
    const url = (await client.getAgentCard()).supportedInterfaces[0]?.url;
    assert.equal(url, `${gateway()}/agents/echo${AGENT_PATH}`);
    const t = await client.sendMessage(send('via prefix'));
    assert.ok(isTask(t));
    assert.equal(proxy.accessLog.at(-1)?.['http.path'], `/agents/echo${AGENT_PATH}`);
  });

  test('route policies see a2a.* before the agent is called (authorization on the method)', async () => {
    const client = await new ClientFactory().createFromUrl(
      `${gateway()}/locked/.well-known/agent-card.json`,
      '',
    );
    const before = agent.calls.length;
    await assert.rejects(client.sendMessage(send('no')), /403|authorization denied/);
    assert.equal(agent.calls.length, before);
    assert.equal(logOf('SendMessage')['a2a.outcome'], 'rejected');
  });

  test('an error the gateway answers after reading the call carries its id; unreadable JSON gets null', async () => {
    type Answer = { jsonrpc: string; id: unknown; error: { code: number; message: string } };
    const post = async (path: string, body: string) => {
      const r = await fetch(`${gateway()}${path}${AGENT_PATH}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      return { status: r.status, body: (await r.json()) as Answer };
    };
    const call = (id: unknown) =>
      JSON.stringify({
        jsonrpc: '2.0',
        id,
        method: 'message/send',
        params: {
          message: { kind: 'message', messageId: 'm', role: 'user', parts: [{ kind: 'text', text: 'x' }] },
        },
      });
    const before = agent.calls.length;
    for (const id of [2, 'req-7']) {
      const denied = await post('/locked', call(id));
      assert.equal(denied.status, 403);
      assert.deepEqual(
        { id: denied.body.id, code: denied.body.error.code, message: denied.body.error.message },
        { id, code: -32000, message: 'authorization denied' },
      );
    }
    const notJson = await post('/locked', '{"jsonrpc": "2.0", "id": 3, "method": ');
    assert.equal(notJson.status, 400);
    assert.equal(notJson.body.id, null);
    assert.equal(notJson.body.error.code, -32700);
    // The limit's one token goes to the first call; the second is refused in the same words.
    assert.equal((await post('/limited', call(4))).status, 200);
    const limited = await post('/limited', call(5));
    assert.equal(limited.status, 429);
    assert.equal(limited.body.id, 5);
    assert.equal(agent.calls.length, before + 1);
  });

  test('the trace shows the call: method, task and outcome', async () => {
    const traced = proxy.trace();
    const res = await fetch(`${gateway()}${AGENT_PATH}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'A2A-Version': '1.0' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 'x',
        method: 'SendMessage',
        params: { message: { messageId: 'm1', role: 'ROLE_USER', parts: [{ text: 'traced' }] } },
      }),
    });
    assert.equal(res.status, 200);
    await res.arrayBuffer();
    const events = (await within(traced, 5000, 'trace')).map((e) => e.message as Record<string, unknown>);
    const a2a = events.filter((m) => m.type === 'a2a');
    assert.deepEqual(
      a2a.map((m) => [m.phase, m.method]),
      [
        ['request', 'SendMessage'],
        ['response', 'SendMessage'],
      ],
    );
    assert.equal(a2a[1]?.outcome, 'ok');
    assert.equal(a2a[1]?.taskState, 'completed');
  });
});
