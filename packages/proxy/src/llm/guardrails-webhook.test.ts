// The webhook guard as users see it: the official `openai` and `@anthropic-ai/sdk` clients through the
// gateway to fake providers, the guardrail service being @gw/guardrail-sdk's own node:http handler.
// Each verdict in each phase, audit, a service that is slow, answers 500 or answers garbage (failing
// closed and open), the headers map with pseudo-headers and an unevaluable expression, keep-alive.
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import {
  createGuardrailHandler,
  type GuardrailCallbacks,
  maskChoices,
  maskMessages,
  pass,
  reject,
} from '@gw/guardrail-sdk';
import { FAKE_ANTHROPIC_REPLY, FAKE_REPLY, type FakeAnthropic, type FakeOpenAI } from '@gw/testkit';
import type { TestProxy } from '@gw/testkit/proxy';
import OpenAI from 'openai';
import {
  askGpt,
  askWithSystem,
  assertClaudeUnavailable,
  assertGuardCounted,
  claudeModel,
  closeServers,
  gptModel,
  guardFailsClosed,
  lastAccessLog,
  lastOf,
  listen,
  startFakeProviders,
  startGuardProxy,
} from './guardrails/test-support.ts';

interface Call {
  phase: 'request' | 'response';
  path: string;
  headers: IncomingHttpHeaders;
  contents: { role: string; content: string }[];
}

let openai: FakeOpenAI;
let anthropic: FakeAnthropic;
let proxy: TestProxy;
let gpt: OpenAI;
let claude: Anthropic;
/** The SDK's handler: rejects "jailbreak", masks SSNs, and in answers "assist" and "Claude". */
let guard: Server;
/** Answers by path: /slow never, /500 with 500, /garbage with text, /bad-verdict with a bad reject. */
let broken: Server;
const calls: Call[] = [];
let connections = 0;

const SSN = /\b\d{3}-\d{2}-\d{4}\b/g;
const callbacks: GuardrailCallbacks = {
  onRequest: ({ body }, { path, headers }) => {
    calls.push({ phase: 'request', path, headers, contents: body.messages });
    if (body.messages.some((m) => m.content.includes('jailbreak')))
      return reject(451, 'Not allowed here.', 'banned word');
    const masked = body.messages.map((m) => ({ ...m, content: m.content.replace(SSN, '<SSN>') }));
    return masked.some((m, i) => m.content !== body.messages[i]?.content)
      ? maskMessages(masked, 'ssn')
      : pass();
  },
  onResponse: ({ body }, { path, headers }) => {
    calls.push({ phase: 'response', path, headers, contents: body.choices.map((c) => c.message) });
    if (headers['x-mode'] === 'reject') return reject(422, 'The answer was withheld.');
    return maskChoices(
      body.choices.map((c) => ({
        message: { ...c.message, content: c.message.content.replace(/assist|Claude/g, '<X>') },
      })),
      'words',
    );
  },
};

const lastSeen = (f: FakeOpenAI | FakeAnthropic) => lastOf(f.seen);
const lastLog = () => lastAccessLog(proxy);
const ask = (model: string, content: string, opts?: OpenAI.RequestOptions) =>
  askGpt(gpt, model, content, opts);
const lastCall = () => lastOf(calls);

before(async () => {
  const main = createGuardrailHandler(callbacks);
  const moved = createGuardrailHandler(callbacks, { requestPath: '/v3/guardrails/request' });
  guard = createServer((req, res) => void (req.url?.startsWith('/v3/') ? moved : main)(req, res));
  guard.on('connection', () => connections++);
  broken = createServer((req, res) => {
    req.resume();
    if (req.url === '/slow') return; // never answers
    if (req.url === '/500') {
      res
        .writeHead(500, { 'content-type': 'text/plain' })
        .end('boom\n    at Object.<anonymous> (server.js:1:1)');
      return;
    }
    if (req.url === '/bad-verdict') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"action":{"status_code":403}}');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('<html>not a verdict</html>');
  });
  const good = await listen(guard);
  const bad = await listen(broken);
  ({ openai, anthropic } = await startFakeProviders({ chunkDelayMs: 1 }, { chunkDelayMs: 1 }));
  const wh = (extra = '') => `{webhook: {target: {host: "${good}"}${extra}}}`;
  // a short timeout for the service that never answers; the others answer at once, and a timeout a
  // busy machine's stall could reach would be reported instead of what they answered
  const failing = (path: string, extra = '') =>
    `{webhook: {target: {host: "${bad}"}, timeout: ${path === '/slow' ? '300ms' : '5s'}, headers: {":path": '"${path}"'}${extra}}}`;
  ({ proxy, gpt, claude } = await startGuardProxy(`${gptModel(openai, 'req', `{request: [${wh()}]}`)}
${gptModel(openai, 'res', `{response: [${wh()}]}`)}
${gptModel(openai, 'res-reject', `{response: [${wh(`, headers: {x-mode: '"reject"'}`)}]}`)}
${gptModel(openai, 'audit', `{request: [${wh(', action: audit')}], response: [${wh(', action: audit')}]}`)}
${gptModel(
  openai,
  'headers',
  `{request: [${wh(`, forwardHeaderMatches: [{name: x-team, value: {exact: blue}}], headers: {x-tenant: 'request.headers["x-tenant"]', x-model: 'llmRequest.model', x-user: 'jwt.sub', x-path: 'request.path', ":path": '"/v3/guardrails/request"', ":authority": '"guard.internal"'}`)}]}`,
)}
${gptModel(openai, 'bad-path', `{request: [${wh(`, headers: {":path": 'request.headers["x-absent"]'}`)}]}`)}
${gptModel(openai, 'slow', `{request: [${failing('/slow')}]}`)}
${gptModel(openai, 'status-500', `{request: [${failing('/500')}]}`)}
${gptModel(openai, 'garbage', `{request: [${failing('/garbage')}]}`)}
${gptModel(openai, 'bad-verdict', `{response: [${failing('/bad-verdict')}]}`)}
${gptModel(openai, 'open-slow', `{request: [${failing('/slow', ', failureMode: failOpen')}]}`)}
${gptModel(openai, 'open-500', `{request: [${failing('/500', ', failureMode: failOpen')}], response: [${failing('/garbage', ', failureMode: failOpen')}]}`)}
${gptModel(openai, 'audit-500', `{request: [${failing('/500', ', action: audit')}]}`)}
${claudeModel(anthropic, 'claude', `{request: [${wh()}], response: [${wh()}]}`)}
${claudeModel(anthropic, 'claude-slow', `{request: [${failing('/slow')}]}`)}
`));
});

after(async () => {
  await proxy.close();
  await Promise.all([openai.close(), anthropic.close()]);
  await closeServers(guard, broken);
});

describe('request phase', () => {
  test('allow: the request reaches the provider unchanged; the webhook saw every message', async () => {
    const r = await askWithSystem(gpt, 'req', 'Be brief.', 'What is 2+2?');
    assert.equal(r.choices[0]?.message.content, FAKE_REPLY);
    const c = lastCall();
    assert.equal(c.path, '/request');
    assert.deepEqual(c.contents, [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'What is 2+2?' },
    ]);
    assert.equal(c.headers['content-type'], 'application/json');
    assert.equal((await lastLog())['llm.guardrails'], undefined);
  });

  test('modify: the provider gets the masked text, the client’s other messages as they were', async () => {
    await gpt.chat.completions.create({
      model: 'req',
      messages: [
        { role: 'system', content: 'Be brief.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'My SSN is 123-45-6789.' },
            { type: 'text', text: 'Is it valid?' },
          ],
        },
      ],
    });
    const msgs = lastSeen(openai).json?.messages as { content: unknown }[];
    assert.equal(msgs[0]?.content, 'Be brief.');
    // The parts were one message to the webhook: its text goes in the first part.
    assert.deepEqual(msgs[1]?.content, [{ type: 'text', text: 'My SSN is <SSN>.\nIs it valid?' }]);
    assert.deepEqual((await lastLog())['llm.guardrails'], ['request:webhook:mask:mask: ssn']);
  });

  test('reject: the webhook’s status and text in OpenAI’s error shape; the provider is not called', async () => {
    const before = openai.seen.length;
    const err = await ask('req', 'a jailbreak, please').catch((e: unknown) => e);
    assert.ok(err instanceof OpenAI.APIError);
    assert.equal(err.status, 451);
    assert.equal(err.message, '451 Not allowed here.');
    assert.equal(openai.seen.length, before);
    await assertGuardCounted(proxy, { phase: 'request', guard: 'webhook', action: 'reject' });
  });

  test('Responses API: input items become messages and the mask comes back into them', async () => {
    await gpt.responses.create({
      model: 'req',
      instructions: 'Be brief.',
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'SSN 123-45-6789' }] }],
    });
    assert.deepEqual(lastCall().contents, [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'SSN 123-45-6789' },
    ]);
    assert.match(JSON.stringify(lastSeen(openai).json), /SSN <SSN>/);
    assert.doesNotMatch(JSON.stringify(lastSeen(openai).json), /6789/);
  });

  test('Anthropic client: system and blocks in, the mask back into the blocks; a reject in Anthropic’s shape', async () => {
    await claude.messages.create({
      model: 'claude',
      max_tokens: 50,
      system: 'Be brief.',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'SSN 123-45-6789' },
            { type: 'text', text: 'ok?' },
          ],
        },
      ],
    });
    const seenReq = calls.filter((c) => c.phase === 'request').at(-1);
    assert.deepEqual(seenReq?.contents, [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'SSN 123-45-6789\nok?' },
    ]);
    const msgs = lastSeen(anthropic).json?.messages as { content: unknown }[];
    assert.deepEqual(msgs[0]?.content, [{ type: 'text', text: 'SSN <SSN>\nok?' }]);
    const err = await claude.messages
      .create({ model: 'claude', max_tokens: 50, messages: [{ role: 'user', content: 'jailbreak' }] })
      .catch((e: unknown) => e);
    assert.ok(err instanceof Anthropic.APIError);
    assert.equal(err.status, 451);
    assert.deepEqual(err.error, {
      type: 'error',
      error: { type: 'invalid_request_error', message: 'Not allowed here.' },
    });
  });
});

describe('response phase', () => {
  test('modify: the client gets the masked answer (OpenAI and Anthropic)', async () => {
    const r = await ask('res', 'hi');
    assert.equal(r.choices[0]?.message.content, FAKE_REPLY.replace('assist', '<X>'));
    assert.equal(lastCall().path, '/response');
    assert.deepEqual(lastCall().contents, [{ role: 'assistant', content: FAKE_REPLY }]);
    const m = await claude.messages.create({
      model: 'claude',
      max_tokens: 50,
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.deepEqual(m.content, [{ type: 'text', text: FAKE_ANTHROPIC_REPLY.replace('Claude', '<X>') }]);
  });

  test('reject: the answer is dropped; the webhook’s status and text', async () => {
    const err = await ask('res-reject', 'hi').catch((e: unknown) => e);
    assert.ok(err instanceof OpenAI.UnprocessableEntityError);
    assert.equal(err.message, '422 The answer was withheld.');
    await assert.rejects(
      gpt.responses.create({ model: 'res-reject', input: 'hi' }),
      (e: unknown) => e instanceof OpenAI.APIError && e.status === 422,
    );
  });
});

describe('audit', () => {
  test('the webhook is called in both phases, the verdicts recorded, nothing applied', async () => {
    const before = calls.length;
    const r = await ask('audit', 'SSN 123-45-6789');
    assert.equal(calls.length, before + 2);
    assert.equal(
      (lastSeen(openai).json?.messages as { content: string }[] | undefined)?.[0]?.content,
      'SSN 123-45-6789',
    );
    assert.equal(r.choices[0]?.message.content, FAKE_REPLY);
    assert.deepEqual((await lastLog())['llm.guardrails'], [
      'request:webhook:audit(not applied):mask: ssn',
      'response:webhook:audit(not applied):mask: words',
    ]);
    await ask('audit', 'a jailbreak');
    assert.deepEqual((await lastLog())['llm.guardrails'], [
      'request:webhook:audit(not applied):reject: banned word',
      'response:webhook:audit(not applied):mask: words',
    ]);
  });

  test('an audit webhook that fails never stops the request', async () => {
    const r = await ask('audit-500', 'hi');
    assert.equal(r.choices[0]?.message.content, FAKE_REPLY);
    assert.deepEqual((await lastLog())['llm.guardrails'], [
      'request:webhook:error(not applied):answered 500',
    ]);
  });
});

describe('failures', () => {
  const failsClosed = guardFailsClosed(() => ({ openai, gpt }), /boom|at Object|html/);
  test(
    'fail closed: a webhook that times out',
    failsClosed('slow', /guardrail webhook failed \(request\): no verdict within 300 ms/),
  );
  test('fail closed: a webhook that answers 500', failsClosed('status-500', /answered 500/));
  test('fail closed: a webhook that answers garbage', failsClosed('garbage', /not JSON/));

  test('fail closed in the response phase: an invalid verdict (a reject without its body)', async () => {
    const err = await ask('bad-verdict', 'hi').catch((e: unknown) => e);
    assert.ok(err instanceof OpenAI.APIError);
    assert.equal(err.status, 503);
    assert.match(err.message, /failed \(response\): invalid response-phase verdict/);
    assert.deepEqual((await lastLog())['llm.guardrails'], [
      `response:webhook:error:${err.message.replace(/^503 guardrail webhook failed \(response\): /, '')}`,
    ]);
  });

  test('fail closed: the Anthropic client gets Anthropic’s error object', async () => {
    const err = await assertClaudeUnavailable(claude, 'claude-slow', /guardrail webhook failed/);
    assert.equal((err.error as { type?: string }).type, 'error');
  });

  test('fail open: timeout, 500 and garbage pass the content on, recorded', async () => {
    const r = await ask('open-slow', 'hi');
    assert.equal(r.choices[0]?.message.content, FAKE_REPLY);
    assert.deepEqual((await lastLog())['llm.guardrails'], [
      'request:webhook:error(not applied):no verdict within 300 ms',
    ]);
    const r2 = await ask('open-500', 'hi');
    assert.equal(r2.choices[0]?.message.content, FAKE_REPLY);
    assert.deepEqual((await lastLog())['llm.guardrails'], [
      'request:webhook:error(not applied):answered 500',
      'response:webhook:error(not applied):answered something that is not JSON',
    ]);
    await assertGuardCounted(proxy, { phase: 'request', guard: 'webhook', action: 'error' });
  });
});

describe('headers', () => {
  test('CEL on the original request, pseudo-headers, forwarded headers; a failing expression is left out', async () => {
    await ask('headers', 'hi', { headers: { 'x-tenant': 'acme', 'x-team': 'blue', 'x-other': 'no' } });
    const c = lastCall();
    assert.equal(c.path, '/v3/guardrails/request');
    assert.equal(c.headers.host, 'guard.internal');
    assert.equal(c.headers['x-tenant'], 'acme');
    // llmRequest is the request being guarded: the provider's model name is already in it
    assert.equal(c.headers['x-model'], 'gpt-4o-mini');
    // the client's path, not the provider's
    assert.equal(c.headers['x-path'], '/v1/chat/completions');
    assert.equal(c.headers['x-team'], 'blue');
    assert.equal(c.headers['x-other'], undefined);
    // no JWT on this request: jwt.sub cannot be evaluated
    assert.equal('x-user' in c.headers, false);
    // the client's credentials are not sent
    assert.equal(c.headers.authorization, undefined);
    await ask('headers', 'hi', { headers: { 'x-team': 'red' } });
    assert.equal(lastCall().headers['x-team'], undefined);
    assert.equal('x-tenant' in lastCall().headers, false);
  });

  test('an unevaluable :path keeps the default path', async () => {
    await ask('bad-path', 'hi');
    assert.equal(lastCall().path, '/request');
  });
});

test('keep-alive: several calls share one connection to the webhook', async () => {
  await ask('req', 'warm up');
  const before = connections;
  for (let i = 0; i < 4; i++) await ask('req', `call ${i}`);
  assert.equal(connections, before);
});
