// Prompt guards and prompt enrichment as users see them: the official `openai` and `@anthropic-ai/sdk`
// clients through the gateway to fake providers speaking the real wire formats. Each regex action on
// the request, the answer and the streamed answer (a match split across stream events included), the
// rejection in each client's error shape (a stream's as an error the SDK raises), what the access log,
// the trace and the metrics say, and enrichment in each client format.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import {
  FAKE_ANTHROPIC_REPLY,
  FAKE_REPLY,
  FAKE_STREAM_REPLY,
  type FakeAnthropic,
  type FakeOpenAI,
} from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import OpenAI from 'openai';
import {
  askClaudeWithSystem,
  askGpt,
  assertAnthropicRejected,
  assertGuardCounted,
  claudeModel as claudeEntry,
  gptModel as gptEntry,
  lastAccessLog,
  lastOf,
  readClaudeStream,
  readStream,
  startFakeProviders,
  startGuardProxy,
  streamText,
} from './guardrails/test-support.ts';

let openai: FakeOpenAI;
let anthropic: FakeAnthropic;
let proxy: TestProxy;
let gpt: OpenAI;
let claude: Anthropic;

const gptModel = (name: string, guardrails?: string) => gptEntry(openai, name, guardrails);
const claudeModel = (name: string, guardrails: string) => claudeEntry(anthropic, name, guardrails);

before(async () => {
  ({ openai, anthropic } = await startFakeProviders({ chunkDelayMs: 1 }, { chunkDelayMs: 1 }));
  ({ proxy, gpt, claude } = await startGuardProxy(
    `${gptModel('req-reject', '{request: [{regex: {action: reject, rules: [{builtin: email}]}, rejection: {status: 422, body: "no e-mail addresses, please", headers: {set: {x-guard: email}}}}]}')}
${gptModel('req-mask', '{request: [{regex: {action: mask, rules: [{builtin: ssn}, {builtin: creditCard}, {pattern: "project-[a-z]+", name: PROJECT}]}}]}')}
${gptModel('req-audit', '{request: [{regex: {action: audit, rules: [{pattern: "secret-[0-9]+", name: secret}]}}]}')}
${gptModel('req-tools', '{request: [{regex: {action: reject, rules: [{builtin: email}]}, scope: [toolOutput]}]}')}
${gptModel('res-reject', '{streaming: true, response: [{regex: {action: reject, rules: [{pattern: "assist|help you", name: offer}]}, rejection: {body: "the answer was withheld"}}]}')}
${gptModel('res-mask', '{streaming: Enabled, response: [{regex: {action: mask, rules: [{pattern: "How can I", name: PHRASE}]}}]}')}
${gptModel('res-audit', '{streaming: true, response: [{regex: {action: audit, rules: [{pattern: "help you", name: offer}]}}]}')}
${gptModel('res-unstreamed', '{response: [{regex: {action: reject, rules: [{pattern: "help you"}]}}]}')}
${gptModel('plain')}
${gptModel('named', 'shared')}
${claudeModel('claude-req', '{request: [{regex: {action: reject, rules: [{builtin: phoneNumber}]}}]}')}
${claudeModel('claude-res', '{streaming: true, response: [{regex: {action: reject, rules: [{pattern: "help you"}]}, rejection: {status: 451, body: "withheld"}}]}')}
${claudeModel('claude-mask', '{response: [{regex: {action: mask, rules: [{pattern: "Claude", name: NAME}]}}]}')}
`,
    `  policies:
    guardrails:
      request: [{regex: {action: reject, rules: [{pattern: "forbidden-word"}]}}]
  guardrails:
    shared:
      request: [{regex: {action: reject, rules: [{pattern: "shared-secret"}]}}]
`,
  ));
});

after(async () => {
  await proxy.close();
  await Promise.all([openai.close(), anthropic.close()]);
});

const lastSeen = (f: FakeOpenAI | FakeAnthropic) => lastOf(f.seen);
const lastLog = () => lastAccessLog(proxy);
const ask = (model: string, content: string) => askGpt(gpt, model, content);

describe('request guards', () => {
  test('reject: the configured status, message and header in OpenAI’s error shape; nothing sent', async () => {
    const before = openai.seen.length;
    const err = await ask('req-reject', 'write to jane.doe@example.com').catch((e: unknown) => e);
    assert.ok(err instanceof OpenAI.APIError);
    assert.equal(err.status, 422);
    assert.equal(err.message, '422 no e-mail addresses, please');
    assert.equal((err.error as { code?: string }).code, 'gw_err_llm_guardrail');
    assert.equal(err.headers?.get('x-guard'), 'email');
    assert.equal(openai.seen.length, before);
    assert.deepEqual((await lastLog())['llm.guardrails'], ['request:regex:reject:email']);
  });

  test('reject on a streamed request: the same error, before any stream starts', async () => {
    await assert.rejects(
      gpt.chat.completions.create({
        model: 'req-reject',
        stream: true,
        messages: [{ role: 'user', content: 'a@b.io' }],
      }),
      (e: unknown) => e instanceof OpenAI.APIError && e.status === 422,
    );
  });

  test('no match passes; llm.policies guards apply to models without their own', async () => {
    const r = await ask('req-reject', 'hello');
    assert.equal(r.choices[0]?.message.content, FAKE_REPLY);
    // req-reject has its own guardrails: the llm-wide forbidden word is not checked there
    await ask('req-reject', 'forbidden-word');
    await assert.rejects(
      ask('plain', 'forbidden-word'),
      (e: unknown) => e instanceof OpenAI.PermissionDeniedError,
    );
  });

  test('a model naming a set of llm.guardrails gets that set, in place of the llm-wide guards', async () => {
    await assert.rejects(
      ask('named', 'the shared-secret'),
      (e: unknown) => e instanceof OpenAI.PermissionDeniedError,
    );
    assert.equal((await ask('named', 'forbidden-word')).choices[0]?.message.content, FAKE_REPLY);
    assert.equal((await ask('plain', 'the shared-secret')).choices[0]?.message.content, FAKE_REPLY);
  });

  test('mask: each match replaced in what the provider gets, the client’s structure kept', async () => {
    await gpt.chat.completions.create({
      model: 'req-mask',
      messages: [
        { role: 'system', content: 'You help with project-apollo.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'My SSN is 123-45-6789 and card 4111 1111 1111 1111.' },
            { type: 'text', text: 'Not a card: 4111 1111 1111 1112.' },
          ],
        },
      ],
    });
    const msgs = lastSeen(openai).json?.messages as { content: unknown }[];
    assert.equal(msgs[0]?.content, 'You help with <PROJECT>.');
    assert.deepEqual(msgs[1]?.content, [
      { type: 'text', text: 'My SSN is <SSN> and card <CREDIT_CARD>.' },
      { type: 'text', text: 'Not a card: 4111 1111 1111 1112.' },
    ]);
    // the first text with a match names the finding
    assert.deepEqual((await lastLog())['llm.guardrails'], ['request:regex:mask:PROJECT']);
  });

  test('audit: the request passes unchanged; log, trace and metrics record the would-be action', async () => {
    const traced = proxy.trace();
    await ask('req-audit', 'the code is secret-42');
    assert.equal(
      (lastSeen(openai).json?.messages as { content: string }[] | undefined)?.[0]?.content,
      'the code is secret-42',
    );
    assert.deepEqual((await lastLog())['llm.guardrails'], ['request:regex:audit(not applied):secret']);
    const events = await traced;
    const g = events.find((e) => (e.message as { type?: string }).type === 'guardrail');
    assert.deepEqual(g?.message, {
      type: 'guardrail',
      phase: 'request',
      guard: 'regex',
      action: 'audit',
      rule: 'secret',
      applied: false,
    });
    await assertGuardCounted(proxy, { phase: 'request', guard: 'regex', action: 'audit' });
  });

  test('scope: a toolOutput guard reads tool results, not the user’s messages', async () => {
    await ask('req-tools', 'mail me at a@example.com');
    await assert.rejects(
      gpt.chat.completions.create({
        model: 'req-tools',
        messages: [
          { role: 'user', content: 'who owns it?' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'c1', type: 'function', function: { name: 'owner', arguments: '{}' } }],
          },
          { role: 'tool', tool_call_id: 'c1', content: 'owner: a@example.com' },
        ],
      }),
      (e: unknown) => e instanceof OpenAI.PermissionDeniedError,
    );
  });

  test('Anthropic client: the rejection in Anthropic’s error shape', async () => {
    assertAnthropicRejected(
      await askClaudeWithSystem(claude, 'claude-req', 'Call +1 (415) 555-0100 for help.', 'hi'),
    );
  });
});

describe('response guards, whole answers', () => {
  test('reject: the rejection instead of the answer (OpenAI chat)', async () => {
    const err = await ask('res-reject', 'hi').catch((e: unknown) => e);
    assert.ok(err instanceof OpenAI.PermissionDeniedError);
    assert.equal(err.message, '403 the answer was withheld');
    assert.deepEqual((await lastLog())['llm.guardrails'], ['response:regex:reject:offer']);
  });

  test('reject: Responses API', async () => {
    await assert.rejects(
      gpt.responses.create({ model: 'res-reject', input: 'hi' }),
      (e: unknown) => e instanceof OpenAI.PermissionDeniedError && /withheld/.test(e.message),
    );
  });

  test('mask: the answer with the match replaced', async () => {
    const r = await ask('res-mask', 'hi');
    assert.equal(r.choices[0]?.message.content, FAKE_REPLY.replace('How can I', '<PHRASE>'));
    const m = await claude.messages.create({
      model: 'claude-mask',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.deepEqual(m.content, [{ type: 'text', text: FAKE_ANTHROPIC_REPLY.replace('Claude', '<NAME>') }]);
  });

  test('audit: the answer unchanged, the finding logged', async () => {
    const r = await ask('res-audit', 'hi');
    assert.equal(r.choices[0]?.message.content, FAKE_REPLY);
    // the non-streamed fixture says "assist you", not "help you"
    assert.equal((await lastLog())['llm.guardrails'], undefined);
  });

  test('Anthropic client: a rejected answer in Anthropic’s error shape, the configured status', async () => {
    await assert.rejects(
      claude.messages.create({
        model: 'claude-res',
        max_tokens: 100,
        messages: [{ role: 'user', content: 'hi' }],
      }),
      (e: unknown) => e instanceof Anthropic.APIError && e.status === 451 && /withheld/.test(e.message),
    );
  });
});

describe('response guards on streams', () => {
  test('reject, the match split across two events: the SDK raises an APIError, not a parse error', async () => {
    const s = await gpt.chat.completions.create({
      model: 'res-reject',
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    });
    const { text, err } = await readStream(s);
    assert.ok(err instanceof OpenAI.APIError, String(err));
    assert.match(err.message, /the answer was withheld/);
    // " How can I help" and " you today?" are separate events: neither part reached the client
    assert.ok(!text.includes('help'), text);
    assert.deepEqual((await lastLog())['llm.guardrails'], ['stream:regex:reject:offer']);
  });

  test('reject on a Responses stream: an error event the SDK raises', async () => {
    const s = await gpt.responses.create({ model: 'res-reject', input: 'hi', stream: true });
    const err = await (async () => {
      for await (const _ of s);
    })().catch((e: unknown) => e);
    assert.ok(err instanceof OpenAI.APIError, String(err));
    assert.match(err.message, /withheld/);
  });

  test('reject on an Anthropic stream: an error event the SDK raises', async () => {
    const { text, err } = await readClaudeStream(claude, 'claude-res', 100);
    assert.ok(err instanceof Anthropic.APIError, String(err));
    assert.match(String(err.message), /withheld/);
    assert.ok(!text.includes('help'), text);
  });

  test('audit: every event passes at once, the finding logged', async () => {
    const s = await gpt.chat.completions.create({
      model: 'res-audit',
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.equal(await streamText(s), FAKE_STREAM_REPLY);
    assert.deepEqual((await lastLog())['llm.guardrails'], ['stream:regex:audit(not applied):offer']);
  });

  test('mask is not applied to a stream; the trace says so', async () => {
    const traced = proxy.trace();
    const s = await gpt.chat.completions.create({
      model: 'res-mask',
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.equal(await streamText(s), FAKE_STREAM_REPLY);
    const events = await traced;
    const g = events.find((e) => (e.message as { type?: string }).type === 'guardrail');
    assert.equal(
      (g?.message as { note?: string } | undefined)?.note,
      'mask is not applied to streamed answers',
    );
    assert.deepEqual((await lastLog())['llm.guardrails'], ['stream:regex:mask(not applied):PHRASE']);
  });

  test('without streaming, response guards leave streams alone', async () => {
    const s = await gpt.chat.completions.create({
      model: 'res-unstreamed',
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.equal(await streamText(s), FAKE_STREAM_REPLY);
  });
});

describe('prompt enrichment (policies.ai.prompts on an ai backend)', () => {
  let routed: TestProxy;
  const prompts = `prompts:
                prepend: [{role: SYSTEM, content: "Be brief."}]
                append: [{role: user, content: "Answer in French."}]`;
  before(async () => {
    routed = await startProxy(`config:
  adminAddr: "off"
binds:
- port: 0
  listeners:
  - routes:
    - matches: [{path: {pathPrefix: /oa}}]
      backends:
      - ai:
          name: oa
          provider: {openAI: {model: gpt-4o-mini}}
          hostOverride: "127.0.0.1:${openai.port}"
          policies:
            backendAuth: {key: sk-provider}
            ai:
              ${prompts}
    - matches: [{path: {pathPrefix: /an}}]
      backends:
      - ai:
          name: an
          provider: {anthropic: {model: claude-sonnet-4-5}}
          hostOverride: "127.0.0.1:${anthropic.port}"
          policies:
            backendAuth: {key: sk-ant-provider}
            ai:
              ${prompts}
`);
  });
  after(() => routed.close());
  const gptAt = (path: string) => new OpenAI({ apiKey: 'x', baseURL: routed.url(path), maxRetries: 0 });
  /** The client's message between the enrichment's. */
  const enriched = [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'hi' },
    { role: 'user', content: 'Answer in French.' },
  ];

  test('OpenAI chat: a system message first, a user message last', async () => {
    await askGpt(gptAt('/oa/v1'), 'm', 'hi');
    assert.deepEqual(lastSeen(openai).json?.messages, enriched);
  });

  test('Responses: input items around the client’s (a string input becomes a user item)', async () => {
    await gptAt('/oa/v1').responses.create({ model: 'm', input: 'hi' });
    assert.deepEqual(lastSeen(openai).json?.input, enriched);
  });

  test('Anthropic messages: system messages join `system`, the others the messages', async () => {
    const c = new Anthropic({ apiKey: 'x', baseURL: routed.url('/an'), maxRetries: 0 });
    await c.messages.create({
      model: 'm',
      max_tokens: 50,
      system: 'You are a cat.',
      messages: [{ role: 'user', content: 'hi' }],
    });
    const seen = lastSeen(anthropic).json;
    assert.equal(seen?.system, 'Be brief.\n\nYou are a cat.');
    assert.deepEqual(seen?.messages, [
      { role: 'user', content: 'hi' },
      { role: 'user', content: 'Answer in French.' },
    ]);
  });

  test('OpenAI client to the Anthropic provider: the pair carries the system message to `system`', async () => {
    await askGpt(gptAt('/an/v1'), 'm', 'hi');
    const seen = lastSeen(anthropic).json;
    assert.match(JSON.stringify(seen?.system), /Be brief\./);
  });
});
