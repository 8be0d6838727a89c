// examples/a2a.yaml as a user runs it, in front of the tests' @a2a-js/sdk agent: the SDK client
// discovers the agent through the gateway and talks to it there (a message, a stream), the access log
// names each call, and registering a push-notification webhook is refused.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type Message, Role, type SendMessageRequest } from '@a2a-js/sdk';
import { ClientFactory } from '@a2a-js/sdk/client';
import { startAgent, type TestAgent } from '@gw/proxy/a2a/test-support';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';

const dir = dirname(fileURLToPath(import.meta.url));
let agent: TestAgent;
let proxy: TestProxy;

before(async () => {
  agent = await startAgent({ streamDelayMs: 50 });
  const text = readFileSync(join(dir, 'a2a.yaml'), 'utf8')
    .replaceAll('${PORT:-3000}', '0')
    .replaceAll('${AGENT:-127.0.0.1:9999}', `127.0.0.1:${agent.port}`)
    .replace(/adminAddr: .*/, 'adminAddr: "off"');
  proxy = await startProxy(text, dir);
});
after(async () => {
  await proxy?.close();
  await agent?.close();
});

function send(text: string): SendMessageRequest {
  const message: Message = {
    messageId: crypto.randomUUID(),
    contextId: '',
    taskId: '',
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text } } as Message['parts'][number]],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
  return { tenant: '', message, configuration: undefined, metadata: undefined };
}

test('a2a.yaml: discovery, a message and a stream through the gateway', async () => {
  const client = await new ClientFactory().createFromUrl(proxy.url('/'));
  const card = await client.getAgentCard();
  assert.ok(card.supportedInterfaces.every((i) => i.url === proxy.url('/a2a/jsonrpc')));
  const r = await client.sendMessage(send('hi'));
  assert.ok('status' in r);
  const kinds: (string | undefined)[] = [];
  for await (const e of client.sendMessageStream(send('stream'))) kinds.push(e.payload?.$case);
  assert.ok(kinds.includes('artifactUpdate'), kinds.join(','));
  assert.deepEqual(agent.calls, ['SendMessage', 'SendStreamingMessage']);
  const methods = proxy.accessLog.map((l) => [l['a2a.method'], l['a2a.outcome']]);
  assert.deepEqual(methods, [
    ['agent-card', 'rewritten'],
    ['SendMessage', 'ok'],
    ['SendStreamingMessage', 'ok'],
  ]);
});

test('a2a.yaml: push-notification webhooks cannot be registered', async () => {
  const res = await fetch(proxy.url('/a2a/jsonrpc'), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 7,
      method: 'tasks/pushNotificationConfig/set',
      params: { taskId: 't1', pushNotificationConfig: { url: 'http://attacker.example/hook' } },
    }),
  });
  assert.equal(res.status, 403);
  const body = (await res.json()) as { jsonrpc: string; error: { message: string } };
  assert.equal(body.jsonrpc, '2.0');
  assert.equal(body.error.message, 'authorization denied');
  assert.ok(!agent.calls.includes('tasks/pushNotificationConfig/set'));
  assert.equal(proxy.accessLog.at(-1)?.['a2a.taskId'], 't1');
});
