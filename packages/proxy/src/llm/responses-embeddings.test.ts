// OpenAI's Responses and embeddings APIs through the gateway, as a user sees them: the official
// `openai` client (`responses.create`, plain and streamed; `embeddings.create`, base64 by default and
// floats) pointed at gw, gw pointed at fake OpenAI-compatible providers answering in the APIs' own
// shapes. Model rewrite, Azure's paths, usage in the access log and metrics, and a 400 naming the
// pair for a provider that cannot serve the client's API.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  FAKE_REPLY,
  FAKE_STREAM_REPLY,
  FAKE_USAGE,
  type FakeLlmRequest,
  type FakeOpenAI,
  fakeEmbeddings,
  startFakeOpenAI,
} from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import OpenAI from 'openai';

let openai: FakeOpenAI;
let azure: FakeOpenAI;
let mistral: FakeOpenAI;
let proxy: TestProxy;
let client: OpenAI;

before(async () => {
  openai = await startFakeOpenAI({ name: 'openai', apiKey: 'sk-provider' });
  azure = await startFakeOpenAI({ name: 'azure', apiKey: 'azure-key' });
  mistral = await startFakeOpenAI({ name: 'mistral' });
  proxy = await startProxy(`config:
  adminAddr: "off"
llm:
  port: 0
  models:
  - name: "openai/*"
    provider: openai
    params: {apiKey: sk-provider, baseUrl: "${openai.origin}/v1"}
    transformation:
      model: 'llmRequest.model.stripPrefix("openai/")'
  - name: embed
    provider: openai
    params: {apiKey: sk-provider, baseUrl: "${openai.origin}/v1", model: text-embedding-3-small}
  - name: azure-model
    provider: azure
    params:
      apiKey: azure-key
      model: my-deployment
      azureResourceName: example
      azureApiVersion: "2024-10-21"
      hostOverride: "127.0.0.1:${azure.port}"
  - name: mistral-model
    provider: mistral
    params: {baseUrl: "${mistral.origin}/v1", model: mistral-embed}
  - name: gemini-model
    provider: gemini
    params: {apiKey: g-key, baseUrl: "${openai.origin}/v1beta"}
`);
  client = new OpenAI({ apiKey: 'sk-client', baseURL: proxy.url('/v1'), maxRetries: 0 });
});

after(async () => {
  await proxy.close();
  await Promise.all([openai.close(), azure.close(), mistral.close()]);
});

const lastSeen = (f: FakeOpenAI) => f.seen[f.seen.length - 1] as FakeLlmRequest;
const lastLog = () => proxy.accessLog[proxy.accessLog.length - 1];
/** The access log line is written once the answer has gone: give it a moment after a stream. */
const settle = () => new Promise((r) => setTimeout(r, 20));

describe('embeddings', () => {
  test('the SDK default (base64): vectors decoded by the client, the model rewritten, usage counted', async () => {
    const r = await client.embeddings.create({ model: 'embed', input: ['one', 'two'] });
    assert.equal(r.object, 'list');
    assert.equal(r.data.length, 2);
    const expected = fakeEmbeddings(2).map((v) => v.map(Math.fround));
    assert.deepEqual(
      r.data.map((d) => d.embedding),
      expected,
    );
    assert.equal(r.model, 'text-embedding-3-small');
    const seen = lastSeen(openai);
    assert.equal(seen.url, '/v1/embeddings');
    assert.equal(seen.headers.authorization, 'Bearer sk-provider');
    assert.equal(seen.json?.model, 'text-embedding-3-small');
    assert.equal(seen.json?.encoding_format, 'base64');
    const log = lastLog();
    assert.equal(log?.['llm.requestModel'], 'embed');
    assert.equal(log?.['llm.model'], 'text-embedding-3-small');
    assert.equal(log?.['llm.inputTokens'], FAKE_USAGE.embeddings.prompt_tokens);
    assert.equal(log?.['llm.outputTokens'], 0);
  });

  test('encoding_format float: the floats as the provider sent them', async () => {
    const r = await client.embeddings.create({ model: 'embed', input: 'hello', encoding_format: 'float' });
    assert.deepEqual(r.data[0]?.embedding, fakeEmbeddings(1)[0]);
    assert.equal(r.usage.prompt_tokens, FAKE_USAGE.embeddings.prompt_tokens);
    assert.equal(lastSeen(openai).json?.encoding_format, 'float');
  });

  test('Azure: the deployment path with api-version and the api-key header', async () => {
    const r = await client.embeddings.create({ model: 'azure-model', input: 'hello' });
    assert.equal(r.data.length, 1);
    const seen = lastSeen(azure);
    assert.equal(seen.url, '/openai/deployments/my-deployment/embeddings?api-version=2024-10-21');
    assert.equal(seen.headers['api-key'], 'azure-key');
    assert.equal(seen.json?.model, undefined, 'the deployment names the model');
  });

  test('Mistral: /v1/embeddings with the configured model', async () => {
    const r = await client.embeddings.create({
      model: 'mistral-model',
      input: 'hello',
      encoding_format: 'float',
    });
    assert.equal(r.model, 'mistral-embed');
    assert.equal(lastSeen(mistral).url, '/v1/embeddings');
    assert.equal(lastSeen(mistral).json?.model, 'mistral-embed');
  });

  test('a provider without an embeddings pair (Gemini): 400 naming the pair', async () => {
    const n = openai.seen.length;
    await assert.rejects(client.embeddings.create({ model: 'gemini-model', input: 'hello' }), (err) => {
      assert.ok(err instanceof OpenAI.BadRequestError);
      assert.match(err.message, /no openai-embeddings__gemini-generate-content format pair/);
      return true;
    });
    assert.equal(openai.seen.length, n, 'nothing was sent');
  });
});

describe('responses', () => {
  test('non-streamed: the Response as the provider gave it, the model rewritten, usage counted', async () => {
    const r = await client.responses.create({
      model: 'openai/gpt-4.1',
      input: 'Hello!',
      instructions: 'Be brief.',
    });
    assert.equal(r.object, 'response');
    assert.equal(r.output_text, FAKE_REPLY);
    assert.equal(r.model, 'gpt-4.1');
    const seen = lastSeen(openai);
    assert.equal(seen.url, '/v1/responses');
    assert.equal(seen.headers.authorization, 'Bearer sk-provider');
    assert.equal(seen.json?.model, 'gpt-4.1');
    assert.equal(seen.json?.input, 'Hello!');
    assert.equal(seen.json?.instructions, 'Be brief.');
    const log = lastLog();
    assert.equal(log?.['llm.provider'], 'openai');
    assert.equal(log?.['llm.inputTokens'], FAKE_USAGE.response.input_tokens);
    assert.equal(log?.['llm.outputTokens'], FAKE_USAGE.response.output_tokens);
  });

  test('streamed: typed events in order, the text from the deltas, usage from response.completed', async () => {
    const stream = await client.responses.create({ model: 'openai/gpt-4.1', input: 'Hello!', stream: true });
    const types: string[] = [];
    let text = '';
    let completed: OpenAI.Responses.Response | undefined;
    for await (const ev of stream) {
      types.push(ev.type);
      if (ev.type === 'response.output_text.delta') text += ev.delta;
      if (ev.type === 'response.completed') completed = ev.response;
    }
    assert.equal(types[0], 'response.created');
    assert.equal(types[types.length - 1], 'response.completed');
    assert.equal(text, FAKE_STREAM_REPLY);
    assert.equal(completed?.usage?.output_tokens, FAKE_USAGE.responseStream.output_tokens);
    assert.equal(lastSeen(openai).json?.stream, true);
    await settle();
    const log = lastLog();
    assert.equal(log?.['llm.streaming'], true);
    assert.equal(log?.['llm.inputTokens'], FAKE_USAGE.responseStream.input_tokens);
    assert.equal(log?.['llm.outputTokens'], FAKE_USAGE.responseStream.output_tokens);
  });

  test('Azure with a dated apiVersion: /openai/responses, the deployment in the body', async () => {
    const r = await client.responses.create({ model: 'azure-model', input: 'Hello!' });
    assert.equal(r.output_text, FAKE_REPLY);
    const seen = lastSeen(azure);
    assert.equal(seen.url, '/openai/responses?api-version=2024-10-21');
    assert.equal(seen.headers['api-key'], 'azure-key');
    assert.equal(seen.json?.model, 'my-deployment');
  });

  test('a chat-only provider (Mistral): 400 naming the pair, nothing sent', async () => {
    const n = mistral.seen.length;
    await assert.rejects(client.responses.create({ model: 'mistral-model', input: 'Hello!' }), (err) => {
      assert.ok(err instanceof OpenAI.BadRequestError);
      assert.match(err.message, /no openai-responses__openai-chat format pair/);
      return true;
    });
    assert.equal(mistral.seen.length, n);
  });

  test('Prometheus: the Responses and embeddings tokens in gw_llm_tokens_total', async () => {
    const text = await proxy.metrics.registry.metrics();
    const value = (model: string, kind: string) =>
      Number(
        new RegExp(
          `^gw_llm_tokens_total\\{provider="openai",model="${model}",kind="${kind}"\\} (\\d+)`,
          'm',
        ).exec(text)?.[1] ?? 0,
      );
    assert.ok(
      value('gpt-4.1', 'input') >= FAKE_USAGE.response.input_tokens + FAKE_USAGE.responseStream.input_tokens,
    );
    assert.ok(value('gpt-4.1', 'output') >= FAKE_USAGE.response.output_tokens);
    assert.ok(value('text-embedding-3-small', 'input') >= 2 * FAKE_USAGE.embeddings.prompt_tokens);
  });
});
