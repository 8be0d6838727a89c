// Claude's Vertex AI clients (@anthropic-ai/vertex-sdk unchanged; Claude Code with Vertex calls the
// same paths) through the gateway: Messages at …/publishers/anthropic/models/<model>:rawPredict and
// :streamRawPredict, the model in the path and `anthropic_version` in the body, and the token count
// at …/models/count-tokens:rawPredict. The gateway serves them from its model entries — here an
// Anthropic API model, with the gateway's key in place of the client's Google token.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { AnthropicVertex } from '@anthropic-ai/vertex-sdk';
import {
  FAKE_ANTHROPIC_REPLY,
  FAKE_ANTHROPIC_STREAM_REPLY,
  type FakeAnthropic,
  startFakeAnthropic,
} from '@gw/testkit/llm/anthropic';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';

let anthropic: FakeAnthropic;
let proxy: TestProxy;
let client: AnthropicVertex;
const MODEL = 'claude-sonnet-4-5@20250929';

before(async () => {
  anthropic = await startFakeAnthropic({ name: 'anthropic', apiKey: 'sk-ant-provider' });
  proxy = await startProxy(`config:
  adminAddr: "off"
llm:
  port: 0
  models:
  - name: "${MODEL}"
    provider: anthropic
    params: {apiKey: sk-ant-provider, baseUrl: "${anthropic.origin}/v1", model: claude-sonnet-4-5}
`);
  // The client's Google credentials: a stand-in AuthClient (the gateway drops its token)
  const authClient = {
    projectId: 'my-project',
    getRequestHeaders: async () => new Headers({ authorization: 'Bearer ya29.client-token' }),
  };
  client = new AnthropicVertex({
    baseURL: proxy.url('/v1'),
    region: 'us-east5',
    projectId: 'my-project',
    authClient: authClient as never,
    maxRetries: 0,
  });
});

after(async () => {
  await proxy?.close();
  await anthropic?.close();
});

const lastSeen = () => anthropic.seen.at(-1);

test('messages.create: served by the Anthropic model entry, anthropic_version dropped, the gateway’s key', async () => {
  const r = await client.messages.create({
    model: MODEL,
    max_tokens: 64,
    messages: [{ role: 'user', content: 'Hello!' }],
  });
  const text = r.content[0]?.type === 'text' ? r.content[0].text : '';
  assert.equal(text, FAKE_ANTHROPIC_REPLY);
  const seen = lastSeen();
  assert.equal(seen?.url, '/v1/messages');
  assert.equal(seen?.json?.model, 'claude-sonnet-4-5');
  assert.equal(seen?.json?.anthropic_version, undefined);
  assert.equal(seen?.headers['x-api-key'], 'sk-ant-provider');
  assert.equal(seen?.headers.authorization, undefined);
});

test('a stream (streamRawPredict): the events as Anthropic sent them', async () => {
  const stream = client.messages.stream({
    model: MODEL,
    max_tokens: 64,
    messages: [{ role: 'user', content: 'Hello!' }],
  });
  const final = await stream.finalMessage();
  const text = final.content[0]?.type === 'text' ? final.content[0].text : '';
  assert.equal(text, FAKE_ANTHROPIC_STREAM_REPLY);
  assert.equal(lastSeen()?.json?.stream, true);
});

test('countTokens (count-tokens:rawPredict): the provider’s count, the model from the body', async () => {
  const r = await client.messages.countTokens({
    model: MODEL,
    messages: [{ role: 'user', content: 'Hello!' }],
  });
  assert.ok(r.input_tokens > 0, JSON.stringify(r));
  const seen = lastSeen();
  assert.equal(seen?.url, '/v1/messages/count_tokens');
  assert.equal(seen?.json?.model, 'claude-sonnet-4-5');
});

test('an unknown model: Anthropic’s error shape, which the SDK reads', async () => {
  const err = await client.messages
    .create({ model: 'claude-nope', max_tokens: 8, messages: [{ role: 'user', content: 'Hi' }] })
    .catch((e: unknown) => e);
  assert.equal((err as { status?: number }).status, 404);
  assert.match(String((err as Error).message), /claude-nope/);
});
