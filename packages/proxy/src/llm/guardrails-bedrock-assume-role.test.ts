// Bedrock Guardrails signed with an assumed role (backendAuth.aws.assumeRole on the guard service):
// the AWS SDK's STS client, as gw runs it, against a fake STS from the ambient credentials; the
// session name from the client's request; the fake Bedrock runtime verifies the signature with the
// role's temporary credentials. A role STS refuses fails the guard closed, in OpenAI's error shape.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ConfigError } from '@gw/api';
import { FAKE_REPLY, type FakeAnthropic, type FakeOpenAI } from '@gw/testkit';
import { type FakeSts, startFakeSts } from '@gw/testkit/aws-sts';
import { type FakeBedrock, startFakeBedrock } from '@gw/testkit/llm/bedrock';
import type { TestProxy } from '@gw/testkit/proxy';
import OpenAI from 'openai';
import { loadConfigText } from '../config/load.ts';
import { gptModel, lastOf, startFakeProviders, startGuardProxy } from './guardrails/test-support.ts';

const BASE = { accessKeyId: 'AKIAGWGUARDBASE00001', secretAccessKey: 'base-secret' };
const ROLE = 'arn:aws:iam::123456789012:role/gw-guardrails';
const DENIED = 'arn:aws:iam::123456789012:role/not-for-gw';
const GUARDRAIL = { identifier: 'gr0role01', version: '1' };

let sts: FakeSts;
let bedrock: FakeBedrock;
let openai: FakeOpenAI;
let anthropic: FakeAnthropic;
let proxy: TestProxy;
let gpt: OpenAI;
const saved = { ...process.env };

const guard = (role: string) =>
  `{request: [{bedrockGuardrails: {guardrailIdentifier: ${GUARDRAIL.identifier}, guardrailVersion: "${GUARDRAIL.version}", region: eu-west-3, hostOverride: "127.0.0.1:${bedrock.port}", policies: {backendAuth: {aws: {assumeRole: {roleArn: "${role}", sessionName: {expression: 'request.headers["x-user"]'}, tags: [{key: app, value: gw}]}}}}}}]}`;

before(async () => {
  // STS is called in the guard's region
  sts = await startFakeSts([BASE], 'eu-west-3');
  process.env.AWS_ENDPOINT_URL_STS = sts.origin;
  process.env.AWS_ACCESS_KEY_ID = BASE.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY = BASE.secretAccessKey;
  delete process.env.AWS_SESSION_TOKEN;
  // the fake STS's first credentials: the only ones the fake runtime accepts
  bedrock = await startFakeBedrock({
    accessKeyId: 'ASIAFAKESTS000000001',
    secretAccessKey: 'sts-secret-1',
    sessionToken: 'sts-token-1',
    region: 'eu-west-3',
    guardrail: GUARDRAIL,
  });
  ({ openai, anthropic } = await startFakeProviders());
  ({ proxy, gpt } = await startGuardProxy(`${gptModel(openai, 'role', guard(ROLE))}
${gptModel(openai, 'denied', guard(DENIED))}`));
});

after(async () => {
  await proxy?.close();
  await Promise.all([sts, bedrock, openai, anthropic].map((f) => f?.close()));
  process.env = saved;
});

const ask = (model: string, content: string, user: string) =>
  gpt.chat.completions.create(
    { model, messages: [{ role: 'user', content }] },
    { headers: { 'x-user': user } },
  );

test('the guard signs with the role’s credentials; one STS call per session, kept for the next requests', async () => {
  const r = await ask('role', 'What is 2+2?', 'alice');
  assert.equal(r.choices[0]?.message.content, FAKE_REPLY);
  const seen = lastOf(bedrock.seen);
  assert.deepEqual(seen.sigv4 && [seen.sigv4.accessKeyId, seen.sigv4.service], [
    'ASIAFAKESTS000000001',
    'bedrock',
  ]);
  assert.equal(sts.calls.length, 1);
  assert.deepEqual(
    [sts.calls[0]?.roleArn, sts.calls[0]?.sessionName, sts.calls[0]?.tags],
    [ROLE, 'alice', { app: 'gw' }],
  );
  // blocked by the guardrail with the same credentials, no new STS call
  const err = await ask('role', 'Should I invest in tulips?', 'alice').catch((e: unknown) => e);
  assert.ok(err instanceof OpenAI.APIError, String(err));
  assert.equal(sts.calls.length, 1);
});

test('a role STS refuses: the guard fails closed and the provider is not called', async () => {
  const before = openai.seen.length;
  const err = await ask('denied', 'What is 2+2?', 'alice').catch((e: unknown) => e);
  assert.ok(err instanceof OpenAI.APIError, String(err));
  assert.ok((err.status ?? 0) >= 500, String(err.status));
  assert.equal(openai.seen.length, before);
});

test('a session name expression that is not CEL is refused at its field', () => {
  assert.throws(
    () =>
      loadConfigText(
        'guard.yaml',
        `llm:
  models:
  - name: m
    provider: openai
    params: {apiKey: k, model: gpt-4o-mini}
    guardrails: {request: [{bedrockGuardrails: {guardrailIdentifier: g1, guardrailVersion: "1", region: us-east-1, policies: {backendAuth: {aws: {assumeRole: {roleArn: "${ROLE}", sessionName: {expression: 'request.headers[('}}}}}}}]}
`,
        process.cwd(),
      ),
    (e: unknown) =>
      e instanceof ConfigError &&
      /bedrockGuardrails\.policies\.backendAuth\.aws\.assumeRole\.sessionName\.expression: invalid CEL/.test(
        e.message,
      ),
  );
});
