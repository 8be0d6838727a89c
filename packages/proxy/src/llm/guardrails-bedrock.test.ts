// The Bedrock Guardrails guard as users see it: the official `openai` and `@anthropic-ai/sdk` clients
// through the gateway to fake providers, the guard calling ApplyGuardrail on the fake Bedrock runtime,
// which verifies each SigV4 signature as AWS does; the official `@aws-sdk/client-bedrock-runtime`
// ApplyGuardrailCommand reads the same fake, so the wire format is the real one. Pass, block and
// anonymize in both phases, audit, credentials from the environment or the config, and a service that
// answers 500, garbage, refuses the signature or is unreachable: closed, in the client's error format.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { ApplyGuardrailCommand, BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import {
  CLOSED_PORT,
  FAKE_ANTHROPIC_REPLY,
  FAKE_REPLY,
  FAKE_STREAM_REPLY,
  type FakeAnthropic,
  type FakeOpenAI,
} from '@gw/testkit';
import { type FakeBedrock, type FakeBedrockRequest, startFakeBedrock } from '@gw/testkit/llm/bedrock';
import type { TestProxy } from '@gw/testkit/proxy';
import type OpenAI from 'openai';
import {
  askGpt,
  askWithSystem,
  assertAnthropicRejected,
  assertClaudeUnavailable,
  assertRejectedUnsent,
  claudeModel,
  gptModel,
  guardFailsClosed,
  lastAccessLog,
  lastOf,
  readClaudeStream,
  startFakeProviders,
  startGuardProxy,
  streamText,
} from './guardrails/test-support.ts';

const CREDS = { accessKeyId: 'AKIDGUARD', secretAccessKey: 'guard-secret' };
const STATIC = { accessKeyId: 'AKIDSTATIC', secretAccessKey: 'static-secret' };
const GUARDRAIL = { identifier: 'gr0abc123', version: '3' };

let openai: FakeOpenAI;
let anthropic: FakeAnthropic;
/** Default rules: investing is denied, e-mail addresses anonymized. */
let bedrock: FakeBedrock;
/** For answers: "Claude" is denied, "assist" anonymized as {NAME}. */
let answers: FakeBedrock;
/** Signed with other credentials; `broken` answers 500, `garbage` an HTML page with 200. */
let other: FakeBedrock;
let broken: FakeBedrock;
let garbage: FakeBedrock;
/** For streams: "help you" is denied. */
let streams: FakeBedrock;
let closedPort: number;
let proxy: TestProxy;
let gpt: OpenAI;
let claude: Anthropic;
const saved = { ...process.env };

const lastLog = () => lastAccessLog(proxy);
const ask = (model: string, content: string) => askGpt(gpt, model, content);
const lastApply = (f: FakeBedrock = bedrock): FakeBedrockRequest => lastOf(f.seen);

before(async () => {
  // The environment's credentials, as the Bedrock provider reads them.
  process.env.AWS_ACCESS_KEY_ID = CREDS.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY = CREDS.secretAccessKey;
  delete process.env.AWS_SESSION_TOKEN;
  bedrock = await startFakeBedrock({ ...CREDS, region: 'eu-west-3', guardrail: GUARDRAIL });
  answers = await startFakeBedrock({
    ...CREDS,
    region: 'eu-west-3',
    guardrail: { ...GUARDRAIL, deny: /\bClaude\b/, anonymize: { pattern: /\bassist\b/g, type: 'NAME' } },
  });
  other = await startFakeBedrock({
    ...STATIC,
    sessionToken: 'tok',
    region: 'us-west-2',
    guardrail: GUARDRAIL,
  });
  broken = await startFakeBedrock({
    ...CREDS,
    region: 'eu-west-3',
    guardrail: GUARDRAIL,
    answer: () => ({ error: 500 }),
  });
  garbage = await startFakeBedrock({ ...CREDS, region: 'eu-west-3', answer: () => ({ html: 200 }) });
  streams = await startFakeBedrock({
    ...CREDS,
    region: 'eu-west-3',
    guardrail: { ...GUARDRAIL, deny: /\bhelp you\b/ },
  });
  closedPort = CLOSED_PORT;
  ({ openai, anthropic } = await startFakeProviders());
  const guard = (fake: { port: number } | number, extra = '', region = 'eu-west-3') =>
    `{bedrockGuardrails: {guardrailIdentifier: ${GUARDRAIL.identifier}, guardrailVersion: "${GUARDRAIL.version}", region: ${region}, hostOverride: "127.0.0.1:${typeof fake === 'number' ? fake : fake.port}"${extra}}}`;
  ({ proxy, gpt, claude } =
    await startGuardProxy(`${gptModel(openai, 'req', `{request: [${guard(bedrock)}]}`)}
${gptModel(openai, 'res', `{response: [${guard(answers)}]}`)}
${gptModel(openai, 'audit', `{request: [${guard(bedrock, ', action: Audit')}]}`)}
${gptModel(openai, 'static', `{request: [${guard(other, `, policies: {backendAuth: {aws: {accessKeyId: ${STATIC.accessKeyId}, secretAccessKey: ${STATIC.secretAccessKey}, sessionToken: tok}}}`, 'us-west-2')}]}`)}
${gptModel(openai, 'wrong-region', `{request: [${guard(bedrock, '', 'us-east-1')}]}`)}
${gptModel(openai, 'status-500', `{request: [${guard(broken)}]}`)}
${gptModel(openai, 'garbage', `{request: [${guard(garbage)}]}`)}
${gptModel(openai, 'audit-500', `{request: [${guard(broken, ', action: Audit')}]}`)}
${gptModel(openai, 'unreachable', `{request: [${guard(closedPort)}]}`)}
${gptModel(openai, 'stream-pass', `{streaming: true, response: [${guard(answers)}]}`)}
${claudeModel(anthropic, 'claude-stream', `{streaming: true, response: [${guard(streams)}]}`)}
${claudeModel(anthropic, 'claude', `{request: [${guard(bedrock)}], response: [${guard(answers)}]}`)}
${claudeModel(anthropic, 'claude-500', `{request: [${guard(broken)}]}`)}
`));
});

after(async () => {
  await proxy.close();
  await Promise.all(
    [openai, anthropic, bedrock, answers, other, broken, garbage, streams].map((f) => f.close()),
  );
  process.env = saved;
});

describe('the fake speaks ApplyGuardrail: the AWS SDK signs, the fake verifies, the SDK parses', () => {
  const sdk = (secretAccessKey = CREDS.secretAccessKey) =>
    new BedrockRuntimeClient({
      region: 'eu-west-3',
      endpoint: `http://127.0.0.1:${bedrock.port}`,
      credentials: { ...CREDS, secretAccessKey },
      maxAttempts: 1,
    });
  const apply = (text: string, client = sdk()) =>
    client.send(
      new ApplyGuardrailCommand({
        guardrailIdentifier: GUARDRAIL.identifier,
        guardrailVersion: GUARDRAIL.version,
        source: 'INPUT',
        content: [{ text: { text } }],
      }),
    );

  test('none, blocked, anonymized; a bad signature', async () => {
    assert.equal((await apply('What is 2+2?')).action, 'NONE');
    const blocked = await apply('Should I invest in tulips?');
    assert.equal(blocked.action, 'GUARDRAIL_INTERVENED');
    assert.equal(blocked.assessments?.[0]?.topicPolicy?.topics?.[0]?.action, 'BLOCKED');
    const masked = await apply('Mail jane@example.com please');
    assert.deepEqual(masked.outputs, [{ text: 'Mail {EMAIL} please' }]);
    assert.equal(masked.assessments?.[0]?.sensitiveInformationPolicy?.piiEntities?.[0]?.type, 'EMAIL');
    await assert.rejects(apply('x', sdk('wrong')), (e: Error) => e.name === 'InvalidSignatureException');
  });
});

describe('request phase', () => {
  test('pass: a signed ApplyGuardrail, source INPUT, one content block per text', async () => {
    const r = await askWithSystem(gpt, 'req', 'Be brief.', 'What is 2+2?');
    assert.equal(r.choices[0]?.message.content, FAKE_REPLY);
    const seen = lastApply();
    assert.equal(seen.url, `/guardrail/${GUARDRAIL.identifier}/version/${GUARDRAIL.version}/apply`);
    assert.deepEqual(seen.sigv4 && [seen.sigv4.accessKeyId, seen.sigv4.region, seen.sigv4.service], [
      CREDS.accessKeyId,
      'eu-west-3',
      'bedrock',
    ]);
    assert.deepEqual(seen.json, {
      source: 'INPUT',
      content: [{ text: { text: 'Be brief.' } }, { text: { text: 'What is 2+2?' } }],
    });
    assert.equal((await lastLog())['llm.guardrails'], undefined);
  });

  test('blocked: the guard’s rejection in OpenAI’s error object; the provider is not called', async () => {
    await assertRejectedUnsent(openai, gpt, 'req', 'Should I invest in tulips?');
    assert.deepEqual((await lastLog())['llm.guardrails'], [
      'request:bedrockGuardrails:reject:blocked: topic Investment Advice',
    ]);
  });

  test('anonymized: the provider gets the guardrail’s output text', async () => {
    await askWithSystem(gpt, 'req', 'Be brief.', 'Write to jane@example.com for me.');
    const msgs = openai.seen[openai.seen.length - 1]?.json?.messages as { content: string }[];
    assert.deepEqual(
      msgs.map((m) => m.content),
      ['Be brief.', 'Write to {EMAIL} for me.'],
    );
    assert.deepEqual((await lastLog())['llm.guardrails'], [
      'request:bedrockGuardrails:mask:anonymized: pii EMAIL',
    ]);
  });

  test('Audit: called, recorded, never applied', async () => {
    const r = await ask('audit', 'Should I invest? Mail jane@example.com');
    assert.equal(r.choices[0]?.message.content, FAKE_REPLY);
    assert.equal(
      (openai.seen[openai.seen.length - 1]?.json?.messages as { content: string }[] | undefined)?.[0]
        ?.content,
      'Should I invest? Mail jane@example.com',
    );
    assert.deepEqual((await lastLog())['llm.guardrails'], [
      'request:bedrockGuardrails:audit(not applied):blocked: topic Investment Advice',
    ]);
  });

  test('configured credentials and session token sign instead of the environment’s', async () => {
    await ask('static', 'hi');
    const seen = lastApply(other);
    assert.equal(seen.sigv4?.accessKeyId, STATIC.accessKeyId);
    assert.equal(seen.sigv4?.region, 'us-west-2');
    assert.equal(seen.headers['x-amz-security-token'], 'tok');
  });

  test('Anthropic client: blocks are read; a block is Anthropic’s error object', async () => {
    const err = await claude.messages
      .create({
        model: 'claude',
        max_tokens: 50,
        messages: [{ role: 'user', content: 'How do I kill a process?' }],
      })
      .catch((e: unknown) => e);
    assertAnthropicRejected(err);
    assert.deepEqual((await lastLog())['llm.guardrails'], [
      'request:bedrockGuardrails:reject:blocked: content VIOLENCE',
    ]);
  });
});

describe('response phase', () => {
  test('anonymized: the client gets the output text; source OUTPUT', async () => {
    const r = await ask('res', 'hi');
    assert.equal(r.choices[0]?.message.content, FAKE_REPLY.replace('assist', '{NAME}'));
    assert.deepEqual(lastApply(answers).json, {
      source: 'OUTPUT',
      content: [{ text: { text: FAKE_REPLY } }],
    });
  });

  test('blocked: the answer is dropped, Anthropic’s error object', async () => {
    const err = await claude.messages
      .create({ model: 'claude', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    assert.ok(err instanceof Anthropic.PermissionDeniedError, String(err));
    assert.deepEqual(lastApply(answers).json?.content, [{ text: { text: FAKE_ANTHROPIC_REPLY } }]);
    assert.deepEqual((await lastLog())['llm.guardrails'], [
      'response:bedrockGuardrails:reject:blocked: topic Investment Advice',
    ]);
  });
});

describe('a service that fails: closed (agentgateway’s BedrockGuardrails has no failure mode)', () => {
  const failsClosed = guardFailsClosed(
    () => ({ openai, gpt }),
    /Internal server error|Signature|at [A-Za-z.]+ \(/,
  );
  test('500', failsClosed('status-500', /guardrail bedrockGuardrails failed \(request\): answered 500/));
  test(
    'a signature the service refuses (403)',
    failsClosed('wrong-region', /failed \(request\): answered 403/),
  );
  test('garbage', failsClosed('garbage', /failed \(request\): answered something that is not JSON/));
  test('unreachable', failsClosed('unreachable', /failed \(request\): unreachable \(ECONNREFUSED\)/));

  test('Audit: a failure is recorded and never stops the request', async () => {
    const r = await ask('audit-500', 'hi');
    assert.equal(r.choices[0]?.message.content, FAKE_REPLY);
    assert.deepEqual((await lastLog())['llm.guardrails'], [
      'request:bedrockGuardrails:error(not applied):answered 500',
    ]);
  });

  test('the Anthropic client gets Anthropic’s error object', async () => {
    await assertClaudeUnavailable(claude, 'claude-500', /guardrail bedrockGuardrails failed/);
  });
});

describe('streams (read in windows)', () => {
  test('a pass: the streamed answer unchanged; ApplyGuardrail saw its text as OUTPUT', async () => {
    const s = await gpt.chat.completions.create({
      model: 'stream-pass',
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.equal(await streamText(s), FAKE_STREAM_REPLY);
    assert.deepEqual(lastApply(answers).json, {
      source: 'OUTPUT',
      content: [{ text: { text: FAKE_STREAM_REPLY } }],
    });
  });

  test('BLOCKED: the stream ends with an error event @anthropic-ai/sdk raises; none of the text sent', async () => {
    const { text, err } = await readClaudeStream(claude, 'claude-stream', 50);
    assert.ok(err instanceof Anthropic.APIError, String(err));
    assert.match(String(err.message), /rejected due to inappropriate content/);
    assert.equal(text, '');
    assert.deepEqual((await lastLog())['llm.guardrails'], [
      'stream:bedrockGuardrails:reject:blocked: topic Investment Advice',
    ]);
  });
});
