// The webhook guard's messageFormat raw, path and minSizeBytes, as users meet them: the official
// `openai` and `@anthropic-ai/sdk` clients through the gateway to the fake providers, and a context
// compression service that answers raw calls. The service sees the request's own messages in the
// client's format (tool calls included) and its list replaces them for the provider; an answer
// without messages changes nothing; a bad list fails closed or open; audit records and never applies;
// small requests skip the call; a path moves the call; raw on a response guard is refused.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import type Anthropic from '@anthropic-ai/sdk';
import { createGuardrailHandler, pass, reject } from '@gw/guardrail-sdk';
import { FAKE_REPLY, type FakeAnthropic, type FakeOpenAI } from '@gw/testkit';
import type { TestProxy } from '@gw/testkit/proxy';
import OpenAI from 'openai';
import {
  askGpt,
  claudeModel,
  closeServers,
  gptModel,
  guardFailsClosed,
  guardrailsIssues,
  lastAccessLog,
  lastOf,
  listen,
  startFakeProviders,
  startGuardProxy,
} from './guardrails/test-support.ts';

interface RawCall {
  path: string;
  body: { messages: Record<string, unknown>[]; model?: unknown };
}

let openai: FakeOpenAI;
let anthropic: FakeAnthropic;
let proxy: TestProxy;
let gpt: OpenAI;
let claude: Anthropic;
let service: Server;
const calls: RawCall[] = [];

/** What the compression service puts in place of the messages before the last two (of more than 5). */
const SUMMARY = { role: 'user', content: '[summary of earlier turns]' };

/** Each path answers raw calls its own way; /verdict/* is the guardrail contract's handler. */
function answer(path: string, messages: Record<string, unknown>[]): unknown {
  switch (path) {
    case '/compress':
      return messages.length > 5 ? { messages: [SUMMARY, ...messages.slice(-2)] } : {};
    case '/null':
      return { messages: null };
    case '/empty':
      return { messages: [] };
    case '/numbers':
      return { messages: [1, 2] };
    default:
      return { messages };
  }
}

before(async () => {
  const verdicts = createGuardrailHandler(
    {
      onRequest: ({ body }) =>
        body.messages.some((m) => m.content.includes('forbidden'))
          ? reject(403, 'moved and rejected')
          : pass(),
      onResponse: () => pass(),
    },
    { requestPath: '/verdict/request' },
  );
  service = createServer((req, res) => {
    if (req.url?.startsWith('/verdict/')) return void verdicts(req, res);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString()) as RawCall['body'];
      calls.push({ path: req.url ?? '', body });
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify(answer(req.url ?? '', body.messages)));
    });
  });
  const host = await listen(service);
  ({ openai, anthropic } = await startFakeProviders());
  const raw = (path: string, extra = '') =>
    `{request: [{webhook: {target: {host: "${host}"}, messageFormat: raw, path: ${path}${extra}}}]}`;
  ({ proxy, gpt, claude } = await startGuardProxy(`${gptModel(openai, 'compress', raw('/compress'))}
${gptModel(openai, 'unchanged', raw('/null'))}
${gptModel(openai, 'empty', raw('/empty'))}
${gptModel(openai, 'numbers-open', raw('/numbers', ', failureMode: failOpen'))}
${gptModel(openai, 'audit', raw('/compress', ', action: audit'))}
${gptModel(openai, 'big-only', raw('/compress', ', minSizeBytes: 400'))}
${gptModel(openai, 'moved', `{request: [{webhook: {target: {host: "${host}"}, path: /verdict/request}}]}`)}
${claudeModel(anthropic, 'claude-compress', raw('/compress'))}
`));
});

after(async () => {
  await proxy.close();
  await closeServers(service);
  await Promise.all([openai.close(), anthropic.close()]);
});

/** A conversation of `turns` user/assistant pairs, then a tool call and its result, then a question. */
function conversation(turns: number): OpenAI.Chat.Completions.ChatCompletionMessageParam[] {
  const out: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [];
  for (let i = 0; i < turns; i++)
    out.push({ role: 'user', content: `question ${i}` }, { role: 'assistant', content: `answer ${i}` });
  out.push(
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"q":"x"}' } }],
    },
    { role: 'tool', tool_call_id: 'call_1', content: 'the result' },
  );
  return out;
}

const sentMessages = () => lastOf(openai.seen).json?.messages as Record<string, unknown>[];
const lastCall = () => lastOf(calls);

describe('messageFormat raw', () => {
  test('the service gets the client’s messages and model; its list is what the provider gets', async () => {
    const messages = conversation(3);
    const r = await gpt.chat.completions.create({ model: 'compress', messages });
    assert.equal(r.choices[0]?.message.content, FAKE_REPLY);
    assert.equal(lastCall().path, '/compress');
    // the model the provider is sent
    assert.deepEqual(lastCall().body, { messages, model: 'gpt-4o-mini' });
    // the tool call and its result pass through the service untouched
    assert.deepEqual(sentMessages(), [SUMMARY, ...messages.slice(-2)]);
    assert.deepEqual((await lastAccessLog(proxy))['llm.guardrails'], [
      'request:webhook:mask:replaced 8 messages with 3',
    ]);
  });

  test('an answer without messages, or with null, leaves the request as it was', async () => {
    const messages = conversation(1);
    await gpt.chat.completions.create({ model: 'compress', messages });
    assert.deepEqual(sentMessages(), messages);
    await gpt.chat.completions.create({ model: 'unchanged', messages });
    assert.deepEqual(sentMessages(), messages);
    assert.equal((await lastAccessLog(proxy))['llm.guardrails'], undefined);
  });

  test('an empty list fails closed; a list of non-objects fails open where set so', async () => {
    await guardFailsClosed(() => ({ openai, gpt }), /\[summary/)('empty', /an empty list of messages/)();
    const r = await askGpt(gpt, 'numbers-open', 'hello');
    assert.equal(r.choices[0]?.message.content, FAKE_REPLY);
    assert.deepEqual(sentMessages(), [{ role: 'user', content: 'hello' }]);
    assert.deepEqual((await lastAccessLog(proxy))['llm.guardrails'], [
      'request:webhook:error(not applied):invalid answer: a message that is not an object',
    ]);
  });

  test('audit: the service is called, the request goes unchanged, the finding is logged', async () => {
    const messages = conversation(2);
    await gpt.chat.completions.create({ model: 'audit', messages });
    assert.equal(lastCall().body.messages.length, 6);
    assert.deepEqual(sentMessages(), messages);
    assert.deepEqual((await lastAccessLog(proxy))['llm.guardrails'], [
      'request:webhook:audit(not applied):replaced 6 messages with 3',
    ]);
  });

  test('minSizeBytes: a small request is not sent to the service, a large one is', async () => {
    const before = calls.length;
    await askGpt(gpt, 'big-only', 'hi');
    assert.equal(calls.length, before);
    const messages = conversation(4);
    await gpt.chat.completions.create({ model: 'big-only', messages });
    assert.equal(calls.length, before + 1);
    assert.equal(sentMessages().length, 3);
  });

  test('Anthropic client: its own message blocks go to the service; system stays', async () => {
    const messages: Anthropic.MessageParam[] = [
      { role: 'user', content: 'one' },
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'toolu_1', name: 'lookup', input: { q: 'x' } }],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'found' }] },
      { role: 'assistant', content: 'two' },
      { role: 'user', content: 'three' },
      { role: 'assistant', content: 'four' },
      { role: 'user', content: 'five' },
    ];
    await claude.messages.create({ model: 'claude-compress', max_tokens: 20, system: 'Be brief.', messages });
    assert.deepEqual(lastCall().body.messages, messages);
    const seen = lastOf(anthropic.seen).json as { system?: unknown; messages?: unknown };
    assert.equal(seen.system, 'Be brief.');
    assert.deepEqual(seen.messages, [SUMMARY, ...messages.slice(-2)]);
  });

  test('Responses client: a string input goes as one user message; a list of items is replaced', async () => {
    await gpt.responses.create({ model: 'compress', input: 'just one' });
    assert.deepEqual(lastCall().body.messages, [{ role: 'user', content: 'just one' }]);
    // a list of input items is replaced by the service's list
    const input = Array.from({ length: 6 }, (_, i) => ({
      role: i % 2 === 1 ? ('assistant' as const) : ('user' as const),
      content: `turn ${i}`,
    }));
    await gpt.responses.create({ model: 'compress', input });
    assert.deepEqual(lastCall().body.messages, input);
    assert.deepEqual((lastOf(openai.seen).json as { input?: unknown }).input, [SUMMARY, ...input.slice(-2)]);
  });

  test('config: raw on a response guard, or a path without a slash, is refused at its field', () => {
    assert.deepEqual(
      guardrailsIssues('{response: [{webhook: {target: {host: "h:1"}, messageFormat: raw}}]}'),
      [
        "llm.models[0].guardrails.response[0].webhook.messageFormat: messageFormat raw replaces a request's messages: it works on request guards only",
      ],
    );
    assert.deepEqual(guardrailsIssues('{request: [{webhook: {target: {host: "h:1"}, path: v1/check}}]}'), [
      'llm.models[0].guardrails.request[0].webhook.path: expected a path starting with /',
    ]);
  });
});

describe('path (the guardrail contract)', () => {
  test('the call goes to the path set: the verdict there applies', async () => {
    assert.equal((await askGpt(gpt, 'moved', 'hello')).choices[0]?.message.content, FAKE_REPLY);
    const err = await askGpt(gpt, 'moved', 'a forbidden thing').catch((e: unknown) => e);
    assert.ok(err instanceof OpenAI.APIError, String(err));
    assert.equal(err.status, 403);
    assert.equal(err.message, '403 moved and rejected');
  });
});
