// The OpenAI moderation guard as users see it: the official `openai` and `@anthropic-ai/sdk` clients
// through the gateway to fake providers, the guard calling a fake /v1/moderations in OpenAI's wire
// format (the `openai` client's own moderations.create reads the fake, which shows the format is the
// real one). Clean and flagged prompts, the key (configured or the client's), a custom rejection, and
// a service that answers 500, garbage, or is unreachable: the request fails closed in the client's
// error format, never with the service's body or a stack.
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import {
  FAKE_ANTHROPIC_REPLY,
  FAKE_REPLY,
  type FakeAnthropic,
  type FakeOpenAI,
  startFakeAnthropic,
  startFakeOpenAI,
} from '@gw/testkit';
import { type FakeModeration, startFakeModeration } from '@gw/testkit/llm/moderation';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import OpenAI from 'openai';

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

async function lastLog(): Promise<Record<string, unknown>> {
  await new Promise((r) => setTimeout(r, 30));
  return proxy.accessLog[proxy.accessLog.length - 1] ?? {};
}
const ask = (model: string, content: string, opts?: OpenAI.RequestOptions) =>
  gpt.chat.completions.create({ model, messages: [{ role: 'user', content }] }, opts);
const lastModeration = (f: FakeModeration = moderation) => f.seen[f.seen.length - 1];

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

before(async () => {
  moderation = await startFakeModeration({ apiKey: 'sk-moderation' });
  broken = await startFakeModeration({ answer: () => ({ status: 500 }) });
  garbage = await startFakeModeration({ answer: () => ({ garbage: true }) });
  closedPort = await freePort();
  openai = await startFakeOpenAI({ name: 'openai', apiKey: 'sk-provider' });
  anthropic = await startFakeAnthropic({ name: 'anthropic', apiKey: 'sk-ant-provider' });
  const gptModel = (name: string, guard: string) => `  - name: ${name}
    provider: openai
    params: {apiKey: sk-provider, baseUrl: "${openai.origin}/v1", model: gpt-4o-mini}
    guardrails: {request: [${guard}]}
`;
  const mod = (extra = '', host = moderation.host) =>
    `{openAIModeration: {hostOverride: "${host}", policies: {backendAuth: {key: sk-moderation}}${extra}}}`;
  proxy = await startProxy(`config:
  adminAddr: "off"
llm:
  port: 0
  models:
${gptModel('guarded', mod())}
${gptModel('text-model', `{openAIModeration: {hostOverride: "${moderation.host}", model: text-moderation-latest, policies: {backendAuth: {key: sk-moderation}}}, rejection: {status: 400, body: "Please rephrase."}}`)}
${gptModel('client-key', `{openAIModeration: {hostOverride: "${moderation.host}"}}`)}
${gptModel('system-only', `{openAIModeration: {hostOverride: "${moderation.host}", policies: {backendAuth: {key: sk-moderation}}}, scope: [systemPrompt]}`)}
${gptModel('status-500', mod('', broken.host))}
${gptModel('garbage', mod('', garbage.host))}
${gptModel('unreachable', mod('', `127.0.0.1:${closedPort}`))}
  - name: claude
    provider: anthropic
    params: {apiKey: sk-ant-provider, baseUrl: "${anthropic.origin}/v1", model: claude-sonnet-4-5}
    guardrails: {request: [${mod()}]}
  - name: claude-500
    provider: anthropic
    params: {apiKey: sk-ant-provider, baseUrl: "${anthropic.origin}/v1", model: claude-sonnet-4-5}
    guardrails: {request: [${mod('', broken.host)}]}
`);
  gpt = new OpenAI({ apiKey: 'sk-client', baseURL: proxy.url('/v1'), maxRetries: 0 });
  claude = new Anthropic({ apiKey: 'sk-ant-client', baseURL: proxy.url(''), maxRetries: 0 });
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
    const r = await gpt.chat.completions.create({
      model: 'guarded',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'What is 2+2?' },
      ],
    });
    assert.equal(r.choices[0]?.message.content, FAKE_REPLY);
    assert.equal(openai.seen.length, before + 1);
    const m = lastModeration();
    assert.equal(m?.url, '/v1/moderations');
    assert.equal(m?.headers.authorization, 'Bearer sk-moderation');
    assert.deepEqual(m?.json, { model: 'omni-moderation-latest', input: ['Be brief.', 'What is 2+2?'] });
    assert.equal((await lastLog())['llm.guardrails'], undefined);
  });

  test('a flagged prompt: 403 with the default rejection in OpenAI’s error object; no provider call', async () => {
    const before = openai.seen.length;
    const err = await ask('guarded', 'I will kill them all').catch((e: unknown) => e);
    assert.ok(err instanceof OpenAI.PermissionDeniedError, String(err));
    assert.equal(err.message, '403 The request was rejected due to inappropriate content');
    assert.equal(openai.seen.length, before);
    assert.deepEqual((await lastLog())['llm.guardrails'], [
      'request:openAIModeration:reject:flagged: violence',
    ]);
    const text = await proxy.metrics.registry.metrics();
    assert.match(
      text,
      /^gw_llm_guardrail_actions_total\{phase="request",guard="openAIModeration",action="reject"\} [1-9]/m,
    );
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
    const r = await gpt.chat.completions.create({
      model: 'system-only',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'kill the process' },
      ],
    });
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
    assert.ok(err instanceof Anthropic.PermissionDeniedError, String(err));
    assert.deepEqual(err.error, {
      type: 'error',
      error: { type: 'permission_error', message: 'The request was rejected due to inappropriate content' },
    });
  });
});

describe('a service that fails: closed (agentgateway’s Moderation has no failure mode)', () => {
  const failsClosed = (model: string, how: RegExp) => async () => {
    const before = openai.seen.length;
    const err = await ask(model, 'hi').catch((e: unknown) => e);
    assert.ok(err instanceof OpenAI.APIError, String(err));
    assert.equal(err.status, 503);
    assert.match(err.message, how);
    assert.equal((err.error as { code?: string }).code, 'gw_err_llm_guardrail_unavailable');
    assert.doesNotMatch(JSON.stringify(err.error), /server had an error|html|at [A-Za-z.]+ \(/);
    assert.equal(openai.seen.length, before);
  };
  test('500', failsClosed('status-500', /failed \(request\): answered 500/));
  test('unreachable', failsClosed('unreachable', /failed \(request\): unreachable \(ECONNREFUSED\)/));

  test('garbage (not JSON), recorded as an error', async () => {
    await failsClosed('garbage', /failed \(request\): answered something that is not JSON/)();
    assert.deepEqual((await lastLog())['llm.guardrails'], [
      'request:openAIModeration:error:answered something that is not JSON',
    ]);
  });

  test('the Anthropic client gets Anthropic’s error object', async () => {
    const err = await claude.messages
      .create({ model: 'claude-500', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    assert.ok(err instanceof Anthropic.APIError);
    assert.equal(err.status, 503);
    assert.equal((err.error as { type?: string }).type, 'error');
    assert.match(
      (err.error as { error: { message: string } }).error.message,
      /guardrail openAIModeration failed \(request\): answered 500/,
    );
  });
});
