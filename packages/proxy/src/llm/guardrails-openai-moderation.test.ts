// The OpenAI moderation guard as users see it: the official `openai` and `@anthropic-ai/sdk` clients
// through the gateway to fake providers, the guard calling a fake /v1/moderations in OpenAI's wire
// format (the `openai` client's own moderations.create reads the fake, which shows the format is the
// real one). Clean and flagged prompts, the key (configured or the client's), a custom rejection, and
// a service that answers 500, garbage, or is unreachable: the request fails closed in the client's
// error format, never with the service's body or a stack.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type Anthropic from '@anthropic-ai/sdk';
import {
  CLOSED_PORT,
  FAKE_ANTHROPIC_REPLY,
  FAKE_REPLY,
  type FakeAnthropic,
  type FakeOpenAI,
} from '@gw/testkit';
import { type FakeModeration, startFakeModeration } from '@gw/testkit/llm/moderation';
import type { TestProxy } from '@gw/testkit/proxy';
import OpenAI from 'openai';
import {
  askGpt,
  askWithSystem,
  assertAnthropicRejected,
  assertClaudeUnavailable,
  assertGuardCounted,
  assertRejectedUnsent,
  claudeModel,
  gptModel,
  guardFailsClosed,
  lastAccessLog,
  startFakeProviders,
  startGuardProxy,
} from './guardrails/test-support.ts';

let openai: FakeOpenAI;
let anthropic: FakeAnthropic;
let moderation: FakeModeration;
/** Answers 500; `garbage` answers an HTML page with 200. */
let broken: FakeModeration;
let garbage: FakeModeration;
let closedPort: number;
let proxy: TestProxy;
let gpt: OpenAI;
let claude: Anthropic;

const lastLog = () => lastAccessLog(proxy);
const ask = (model: string, content: string) => askGpt(gpt, model, content);
const lastModeration = (f: FakeModeration = moderation) => f.seen[f.seen.length - 1];

before(async () => {
  moderation = await startFakeModeration({ apiKey: 'sk-moderation' });
  broken = await startFakeModeration({ answer: () => ({ status: 500 }) });
  garbage = await startFakeModeration({ answer: () => ({ garbage: true }) });
  closedPort = CLOSED_PORT;
  ({ openai, anthropic } = await startFakeProviders());
  const guarded = (name: string, guard: string) => gptModel(openai, name, `{request: [${guard}]}`);
  const mod = (extra = '', host = moderation.host) =>
    `{openAIModeration: {hostOverride: "${host}", policies: {backendAuth: {key: sk-moderation}}${extra}}}`;
  ({ proxy, gpt, claude } = await startGuardProxy(`${guarded('guarded', mod())}
${guarded('text-model', `{openAIModeration: {hostOverride: "${moderation.host}", model: text-moderation-latest, policies: {backendAuth: {key: sk-moderation}}}, rejection: {status: 400, body: "Please rephrase."}}`)}
${guarded('client-key', `{openAIModeration: {hostOverride: "${moderation.host}"}}`)}
${guarded('system-only', `{openAIModeration: {hostOverride: "${moderation.host}", policies: {backendAuth: {key: sk-moderation}}}, scope: [systemPrompt]}`)}
${guarded('status-500', mod('', broken.host))}
${guarded('garbage', mod('', garbage.host))}
${guarded('unreachable', mod('', `127.0.0.1:${closedPort}`))}
${guarded('audited', mod(', action: audit'))}
${guarded('with-credentials', `{openAIModeration: {hostOverride: "${moderation.host}", policies: {backendAuth: {key: sk-moderation, credentials: [{location: {header: {name: x-org, prefix: "Org "}}, key: acme}]}}}}`)}
${guarded('audited-unreachable', mod(', action: audit', `127.0.0.1:${closedPort}`))}
${claudeModel(anthropic, 'claude', `{request: [${mod()}]}`)}
${claudeModel(anthropic, 'claude-500', `{request: [${mod('', broken.host)}]}`)}
`));
});

after(async () => {
  await proxy.close();
  await Promise.all([openai.close(), anthropic.close(), moderation.close(), broken.close(), garbage.close()]);
});

test('the fake speaks the moderation API: the official client reads its verdicts', async () => {
  const client = new OpenAI({
    apiKey: 'sk-moderation',
    baseURL: `http://${moderation.host}/v1`,
    maxRetries: 0,
  });
  const r = await client.moderations.create({
    model: 'omni-moderation-latest',
    input: ['hello there', 'I will kill them'],
  });
  assert.equal(r.model, 'omni-moderation-latest');
  assert.deepEqual(
    r.results.map((x) => [x.flagged, x.categories.violence]),
    [
      [false, false],
      [true, true],
    ],
  );
  await assert.rejects(
    new OpenAI({
      apiKey: 'sk-wrong',
      baseURL: `http://${moderation.host}/v1`,
      maxRetries: 0,
    }).moderations.create({
      input: 'x',
    }),
    (e: unknown) => e instanceof OpenAI.AuthenticationError,
  );
});

describe('request phase', () => {
  test('a clean prompt reaches the provider; the service saw each text, the default model, the key', async () => {
    const before = openai.seen.length;
    const r = await askWithSystem(gpt, 'guarded', 'Be brief.', 'What is 2+2?');
    assert.equal(r.choices[0]?.message.content, FAKE_REPLY);
    assert.equal(openai.seen.length, before + 1);
    const m = lastModeration();
    assert.equal(m?.url, '/v1/moderations');
    assert.equal(m?.headers.authorization, 'Bearer sk-moderation');
    assert.deepEqual(m?.json, { model: 'omni-moderation-latest', input: ['Be brief.', 'What is 2+2?'] });
    assert.equal((await lastLog())['llm.guardrails'], undefined);
  });

  test('backendAuth credentials: more secrets, each in its own header, beside the key', async () => {
    const r = await ask('with-credentials', 'What is 2+2?');
    assert.equal(r.choices[0]?.message.content, FAKE_REPLY);
    const m = lastModeration();
    assert.equal(m?.headers.authorization, 'Bearer sk-moderation');
    assert.equal(m?.headers['x-org'], 'Org acme');
  });

  test('a flagged prompt: 403 with the default rejection in OpenAI’s error object; no provider call', async () => {
    await assertRejectedUnsent(openai, gpt, 'guarded', 'I will kill them all');
    assert.deepEqual((await lastLog())['llm.guardrails'], [
      'request:openAIModeration:reject:flagged: violence',
    ]);
    await assertGuardCounted(proxy, { phase: 'request', guard: 'openAIModeration', action: 'reject' });
  });

  test('the configured model and rejection', async () => {
    const err = await ask('text-model', 'kill').catch((e: unknown) => e);
    assert.ok(err instanceof OpenAI.BadRequestError);
    assert.equal(err.message, '400 Please rephrase.');
    assert.equal(lastModeration()?.json?.model, 'text-moderation-latest');
  });

  test('no configured key: the client’s own Authorization is sent (and refused here)', async () => {
    const err = await ask('client-key', 'hi').catch((e: unknown) => e);
    assert.equal(lastModeration()?.headers.authorization, 'Bearer sk-client');
    // the fake wants sk-moderation: a 401 from the service is a failed call, not the client's 401
    assert.ok(err instanceof OpenAI.APIError);
    assert.equal(err.status, 503);
    assert.match(err.message, /guardrail openAIModeration failed \(request\): answered 401/);
  });

  test('scope: only the system prompt is read', async () => {
    const r = await askWithSystem(gpt, 'system-only', 'Be brief.', 'kill the process');
    assert.equal(r.choices[0]?.message.content, FAKE_REPLY);
    assert.deepEqual(lastModeration()?.json?.input, ['Be brief.']);
  });

  test('Anthropic client: system and blocks are read; a flagged prompt is Anthropic’s error object', async () => {
    const m = await claude.messages.create({
      model: 'claude',
      max_tokens: 50,
      system: 'Be brief.',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hello' }] }],
    });
    assert.deepEqual(m.content, [{ type: 'text', text: FAKE_ANTHROPIC_REPLY }]);
    assert.deepEqual(lastModeration()?.json?.input, ['Be brief.', 'Hello']);
    const err = await claude.messages
      .create({ model: 'claude', max_tokens: 50, messages: [{ role: 'user', content: 'kill' }] })
      .catch((e: unknown) => e);
    assertAnthropicRejected(err);
  });
});

describe('action: audit', () => {
  test('a flagged prompt reaches the provider; the finding is recorded as an audit, not applied', async () => {
    const before = openai.seen.length;
    const r = await ask('audited', 'I will kill them all');
    assert.equal(r.choices[0]?.message.content, FAKE_REPLY);
    assert.equal(openai.seen.length, before + 1);
    assert.deepEqual((await lastLog())['llm.guardrails'], [
      'request:openAIModeration:audit(not applied):flagged: violence',
    ]);
  });

  test('a service that cannot be reached: recorded, and the request goes on', async () => {
    const r = await ask('audited-unreachable', 'hi');
    assert.equal(r.choices[0]?.message.content, FAKE_REPLY);
    assert.match(
      String((await lastLog())['llm.guardrails']),
      /request:openAIModeration:error\(not applied\):/,
    );
  });
});

describe('a service that fails: closed (agentgateway’s Moderation has no failure mode)', () => {
  const failsClosed = guardFailsClosed(() => ({ openai, gpt }), /server had an error|html|at [A-Za-z.]+ \(/);
  test('500', failsClosed('status-500', /failed \(request\): answered 500/));
  test('unreachable', failsClosed('unreachable', /failed \(request\): unreachable \(ECONNREFUSED\)/));

  test('garbage (not JSON), recorded as an error', async () => {
    await failsClosed('garbage', /failed \(request\): answered something that is not JSON/)();
    assert.deepEqual((await lastLog())['llm.guardrails'], [
      'request:openAIModeration:error:answered something that is not JSON',
    ]);
  });

  test('the Anthropic client gets Anthropic’s error object', async () => {
    const err = await assertClaudeUnavailable(
      claude,
      'claude-500',
      /guardrail openAIModeration failed \(request\): answered 500/,
    );
    assert.equal((err.error as { type?: string }).type, 'error');
  });
});
