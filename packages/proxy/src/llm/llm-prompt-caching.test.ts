// What gw changes in a request once it is in the provider's own format. promptCaching: an OpenAI
// client's conversation reaches a fake Anthropic with cache_control on its system prompt and history,
// and a fake Bedrock with cachePoint blocks; a model without promptCaching gets none (the rules
// themselves: formats/prompt-caching.test.ts). finalTransformation: CEL over the converted request.
// (The loader's error for a bad expression is a config error at its field: llm-model-rules.test.ts.)
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ConfigError } from '@gw/api';
import { type FakeAnthropic, startFakeAnthropic } from '@gw/testkit';
import { type FakeBedrock, startFakeBedrock } from '@gw/testkit/llm/bedrock';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import OpenAI from 'openai';
import { loadConfigText } from '../config/load.ts';

const CREDS = { accessKeyId: 'AKIDCACHING', secretAccessKey: 'caching/secret/EXAMPLE' };
const conversation = [
  { role: 'system' as const, content: 'You are a careful assistant.' },
  { role: 'user' as const, content: 'What is 2 + 2?' },
  { role: 'assistant' as const, content: '4' },
  { role: 'user' as const, content: 'And 3 + 3?' },
];

let anthropic: FakeAnthropic;
let bedrock: FakeBedrock;
let proxy: TestProxy;

before(async () => {
  anthropic = await startFakeAnthropic({ apiKey: 'sk-ant' });
  bedrock = await startFakeBedrock({ ...CREDS, region: 'us-east-1' });
  proxy = await startProxy(`config:
  adminAddr: "off"
llm:
  port: 0
  models:
  - name: claude
    provider: anthropic
    params: {apiKey: sk-ant, baseUrl: "${anthropic.origin}"}
    promptCaching: {minTokens: 0}
  - name: claude-plain
    provider: anthropic
    params: {apiKey: sk-ant, baseUrl: "${anthropic.origin}"}
  - name: claude-final
    provider: anthropic
    params: {apiKey: sk-ant, baseUrl: "${anthropic.origin}"}
    # Anthropic's own fields: the converted request's max_tokens (4096 set by the conversion) and metadata
    finalTransformation:
      max_tokens: 'llmRequest.max_tokens / 2.0'
      metadata: '{"user_id": "team-" + string(size(llmRequest.messages))}'
  - name: bedrock-claude
    provider: bedrock
    params: {hostOverride: "127.0.0.1:${bedrock.port}", model: anthropic.claude-3-5-haiku-20241022-v1:0}
    auth: {aws: {accessKeyId: ${CREDS.accessKeyId}, secretAccessKey: ${CREDS.secretAccessKey}}}
    promptCaching: {minTokens: null}
`);
});

after(async () => {
  await proxy?.close();
  await anthropic?.close();
  await bedrock?.close();
});

const client = () => new OpenAI({ apiKey: 'sk-client', baseURL: proxy.url('/v1'), maxRetries: 0 });

test('Anthropic: the system prompt and the history carry cache_control; the current turn does not', async () => {
  const r = await client().chat.completions.create({ model: 'claude', messages: conversation });
  assert.equal(r.object, 'chat.completion');
  const body = anthropic.seen[anthropic.seen.length - 1]?.json as {
    system: { text: string; cache_control?: unknown }[];
    messages: { role: string; content: { type: string; cache_control?: unknown }[] | string }[];
  };
  assert.deepEqual(body.system.at(-1)?.cache_control, { type: 'ephemeral' });
  const marked = body.messages.map((m) => JSON.stringify(m.content).includes('cache_control'));
  assert.deepEqual(marked, [false, true, false]);
});

test('a model without promptCaching sends no marker', async () => {
  await client().chat.completions.create({ model: 'claude-plain', messages: conversation });
  const raw = anthropic.seen[anthropic.seen.length - 1]?.body ?? '';
  assert.equal(raw.includes('cache_control'), false);
});

test('Bedrock Converse: cachePoint blocks after the system prompt and the history', async () => {
  const r = await client().chat.completions.create({ model: 'bedrock-claude', messages: conversation });
  assert.equal(r.object, 'chat.completion');
  const body = bedrock.seen[bedrock.seen.length - 1]?.json as {
    system: object[];
    messages: { content: object[] }[];
  };
  assert.deepEqual(body.system.at(-1), { cachePoint: { type: 'default' } });
  const points = body.messages.map((m) => m.content.filter((b) => 'cachePoint' in b).length);
  assert.deepEqual(points, [0, 1, 0]);
});

test('finalTransformation: CEL over the request in Anthropic’s format, after the conversion', async () => {
  await client().chat.completions.create({ model: 'claude-final', messages: conversation });
  const body = anthropic.seen[anthropic.seen.length - 1]?.json as Record<string, unknown>;
  assert.equal(body.max_tokens, 2048, 'half of the 4096 the conversion set for an OpenAI client');
  // three messages once the system prompt moved to Anthropic's `system`
  assert.deepEqual(body.metadata, { user_id: 'team-3' });
});

test('a route ai provider’s policies.ai: transformations and finalTransformations are its model’s; bad CEL is named', () => {
  const yaml = (ai: string) => `binds:
- port: 8080
  listeners:
  - routes:
    - backends:
      - ai: {name: p, provider: {anthropic: {}}, policies: {ai: ${ai}}}
`;
  const { ir } = loadConfigText(
    'route.yaml',
    yaml(`{transformations: {model: '"claude-x"'}, finalTransformations: {max_tokens: "1.0"}}`),
    process.cwd(),
  );
  const target = ir.binds[0]?.listeners[0]?.routes[0]?.backends[0]?.target;
  assert.ok(target && 'kind' in target && target.kind === 'ai');
  assert.deepEqual(target.models[0]?.transformation, { model: '"claude-x"' });
  assert.deepEqual(target.models[0]?.finalTransformation, { max_tokens: '1.0' });
  assert.throws(
    () => loadConfigText('route.yaml', yaml(`{finalTransformations: {max_tokens: "1 +"}}`), process.cwd()),
    (e: unknown) =>
      e instanceof ConfigError &&
      /policies\.ai\.finalTransformations\.max_tokens: invalid CEL/.test(e.message),
  );
});
