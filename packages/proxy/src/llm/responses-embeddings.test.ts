// OpenAI's Responses and embeddings APIs through the gateway, as a user sees them: the official
// `openai` client (`responses.create`, plain and streamed; `embeddings.create`, base64 by default and
// floats) pointed at gw, gw pointed at fake OpenAI-compatible providers (and a fake Gemini for its
// batchEmbedContents) answering in the APIs' own shapes. Model rewrite, Azure's paths, usage in the access log and metrics, and a 400 naming the
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
import { type FakeGemini, fakeGeminiEmbeddings, startFakeGemini } from '@gw/testkit/llm/gemini';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import OpenAI from 'openai';

let openai: FakeOpenAI;
let azure: FakeOpenAI;
let mistral: FakeOpenAI;
let gemini: FakeGemini;
let proxy: TestProxy;
let client: OpenAI;

before(async () => {
  openai = await startFakeOpenAI({ name: 'openai', apiKey: 'sk-provider' });
  azure = await startFakeOpenAI({ name: 'azure', apiKey: 'azure-key' });
  mistral = await startFakeOpenAI({ name: 'mistral' });
  gemini = await startFakeGemini({ apiKey: 'g-key' });
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
    params: {apiKey: g-key, baseUrl: "${gemini.origin}/v1beta", model: text-embedding-004}
`);
  client = new OpenAI({ apiKey: 'sk-client', baseURL: proxy.url('/v1'), maxRetries: 0 });
});

after(async () => {
  await proxy.close();
  await Promise.all([openai.close(), azure.close(), mistral.close(), gemini.close()]);
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

  test('Gemini: batchEmbedContents, one request per input, the vectors back in OpenAI’s list', async () => {
    const r = await client.embeddings.create({
      model: 'gemini-model',
      input: ['one', 'two'],
      dimensions: 4,
      encoding_format: 'float',
    });
    const seen = gemini.seen[gemini.seen.length - 1];
    assert.equal(seen?.url, '/v1beta/models/text-embedding-004:batchEmbedContents');
    assert.equal(seen?.headers['x-goog-api-key'], 'g-key');
    const requests = [
      { model: 'models/text-embedding-004', content: { parts: [{ text: 'one' }] }, outputDimensionality: 4 },
      { model: 'models/text-embedding-004', content: { parts: [{ text: 'two' }] }, outputDimensionality: 4 },
    ];
    assert.deepEqual(seen?.json, { requests });
    assert.equal(r.object, 'list');
    assert.equal(r.model, 'text-embedding-004');
    assert.deepEqual(
      r.data.map((d) => [d.object, d.index, d.embedding]),
      fakeGeminiEmbeddings(requests).map((e, i) => ['embedding', i, e.values]),
    );
    // The SDK's default: base64, float32 bytes the gateway encoded.
    const b = await client.embeddings.create({ model: 'gemini-model', input: 'one' });
    assert.deepEqual(b.data[0]?.embedding, fakeGeminiEmbeddings([{}])[0]?.values.map(Math.fround));
  });

  test('Gemini with token arrays as input: 400 saying Gemini embeds text', async () => {
    await assert.rejects(
      client.embeddings.create({ model: 'gemini-model', input: [[1, 2, 3]] }),
      (err) => err instanceof OpenAI.BadRequestError && /Gemini embeds text/.test(err.message),
    );
  });
});

const weather: OpenAI.Responses.FunctionTool = {
  type: 'function',
  name: 'get_current_weather',
  description: 'Get the current weather in a given location',
  parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] },
  strict: false,
};

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

  test('the SDK’s stream helper reads the provider’s events into the final Response', async () => {
    const r = await client.responses.stream({ model: 'openai/gpt-4.1', input: 'Hello!' }).finalResponse();
    assert.equal(r.output_text, FAKE_STREAM_REPLY);
    assert.equal(
      r.usage?.total_tokens,
      FAKE_USAGE.responseStream.input_tokens + FAKE_USAGE.responseStream.output_tokens,
    );
  });

  test('Azure with a dated apiVersion: /openai/responses, the deployment in the body', async () => {
    const r = await client.responses.create({ model: 'azure-model', input: 'Hello!' });
    assert.equal(r.output_text, FAKE_REPLY);
    const seen = lastSeen(azure);
    assert.equal(seen.url, '/openai/responses?api-version=2024-10-21');
    assert.equal(seen.headers['api-key'], 'azure-key');
    assert.equal(seen.json?.model, 'my-deployment');
  });

  test('a provider without a Responses pair (Gemini): 400 naming the pair, nothing sent', async () => {
    const n = gemini.seen.length;
    await assert.rejects(client.responses.create({ model: 'gemini-model', input: 'Hello!' }), (err) => {
      assert.ok(err instanceof OpenAI.BadRequestError);
      assert.match(err.message, /no openai-responses__gemini-generate-content format pair/);
      return true;
    });
    assert.equal(gemini.seen.length, n);
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

describe('responses to a chat-only provider (Mistral): openai-responses__openai-chat', () => {
  test('instructions, input and max_output_tokens become chat; the answer a Response, usage counted', async () => {
    const r = await client.responses.create({
      model: 'mistral-model',
      instructions: 'Be brief.',
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'Hello!' }] }],
      max_output_tokens: 100,
    });
    assert.equal(r.object, 'response');
    assert.equal(r.status, 'completed');
    assert.equal(r.output_text, FAKE_REPLY);
    assert.equal(r.model, 'mistral-embed');
    assert.equal(r.usage?.input_tokens, FAKE_USAGE.chat.prompt_tokens);
    assert.equal(r.usage?.output_tokens, FAKE_USAGE.chat.completion_tokens);
    const seen = lastSeen(mistral);
    assert.equal(seen.url, '/v1/chat/completions');
    assert.deepEqual(seen.json?.messages, [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: [{ type: 'text', text: 'Hello!' }] },
    ]);
    assert.equal(seen.json?.max_tokens, 100);
    const log = lastLog();
    assert.equal(log?.['llm.provider'], 'mistral');
    assert.equal(log?.['llm.inputTokens'], FAKE_USAGE.chat.prompt_tokens);
    assert.equal(log?.['llm.outputTokens'], FAKE_USAGE.chat.completion_tokens);
  });

  test('streamed: chat chunks become typed events the SDK reads; usage in response.completed', async () => {
    const stream = await client.responses.create({ model: 'mistral-model', input: 'Hello!', stream: true });
    const types: string[] = [];
    const seqs: number[] = [];
    let text = '';
    let completed: OpenAI.Responses.Response | undefined;
    for await (const ev of stream) {
      types.push(ev.type);
      seqs.push(ev.sequence_number);
      if (ev.type === 'response.output_text.delta') text += ev.delta;
      if (ev.type === 'response.completed') completed = ev.response;
    }
    assert.equal(text, FAKE_STREAM_REPLY);
    assert.deepEqual(types.slice(0, 4), [
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
    ]);
    assert.deepEqual(types.slice(-4), [
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    assert.deepEqual(
      seqs,
      seqs.map((_, i) => i),
    );
    assert.equal(completed?.output_text ?? outputText(completed), FAKE_STREAM_REPLY);
    assert.equal(completed?.usage?.input_tokens, FAKE_USAGE.stream.prompt_tokens);
    assert.equal(completed?.usage?.output_tokens, FAKE_USAGE.stream.completion_tokens);
    assert.deepEqual(lastSeen(mistral).json?.stream_options, { include_usage: true });
    await settle();
    assert.equal(lastLog()?.['llm.outputTokens'], FAKE_USAGE.stream.completion_tokens);
  });

  test('function tools: a function_call item back, and its output sent as a tool message', async () => {
    const r = await client.responses.create({
      model: 'mistral-model',
      input: 'Weather in Boston?',
      tools: [weather],
    });
    const call = r.output.find((o) => o.type === 'function_call');
    assert.ok(call?.type === 'function_call');
    assert.equal(call.name, 'get_current_weather');
    assert.deepEqual(JSON.parse(call.arguments), { location: 'Boston, MA' });
    assert.deepEqual(lastSeen(mistral).json?.tools, [
      {
        type: 'function',
        function: {
          name: weather.name,
          description: weather.description,
          parameters: weather.parameters,
          strict: false,
        },
      },
    ]);

    await client.responses.create({
      model: 'mistral-model',
      input: [
        { role: 'user', content: 'Weather in Boston?' },
        { type: 'function_call', call_id: call.call_id, name: call.name, arguments: call.arguments },
        { type: 'function_call_output', call_id: call.call_id, output: '{"temperature": 22}' },
      ],
      tools: [weather],
    });
    assert.deepEqual(lastSeen(mistral).json?.messages, [
      { role: 'user', content: 'Weather in Boston?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: call.call_id, type: 'function', function: { name: call.name, arguments: call.arguments } },
        ],
      },
      { role: 'tool', tool_call_id: call.call_id, content: '{"temperature": 22}' },
    ]);
  });

  test('streamed function call: output_item.added, argument deltas, the call in response.completed', async () => {
    const stream = await client.responses.create({
      model: 'mistral-model',
      input: 'Weather in Boston?',
      tools: [weather],
      stream: true,
    });
    let args = '';
    let name: string | undefined;
    let done: OpenAI.Responses.Response | undefined;
    for await (const ev of stream) {
      if (ev.type === 'response.output_item.added' && ev.item.type === 'function_call') name = ev.item.name;
      if (ev.type === 'response.function_call_arguments.delta') args += ev.delta;
      if (ev.type === 'response.completed') done = ev.response;
    }
    assert.equal(name, 'get_current_weather');
    assert.deepEqual(JSON.parse(args), { location: 'Boston, MA' });
    const call = done?.output.find((o) => o.type === 'function_call');
    assert.ok(call?.type === 'function_call');
    assert.equal(call.arguments, args);
  });

  test('the SDK’s stream helper accumulates the events into the final Response (text and a call)', async () => {
    const text = await client.responses.stream({ model: 'mistral-model', input: 'Hello!' }).finalResponse();
    assert.equal(text.output_text, FAKE_STREAM_REPLY);
    const call = await client.responses
      .stream({ model: 'mistral-model', input: 'Weather in Boston?', tools: [weather] })
      .finalResponse();
    const item = call.output.find((o) => o.type === 'function_call');
    assert.ok(item?.type === 'function_call');
    assert.deepEqual(JSON.parse(item.arguments), { location: 'Boston, MA' });
  });

  test('previous_response_id needs stored responses: 400 saying so', async () => {
    await assert.rejects(
      client.responses.create({ model: 'mistral-model', input: 'Hi', previous_response_id: 'resp_1' }),
      (err) =>
        err instanceof OpenAI.BadRequestError &&
        /previous_response_id needs a provider that stores/.test(err.message),
    );
  });
});

/** A Response's text, for an object the SDK did not add `output_text` to (a streamed event's). */
function outputText(r: OpenAI.Responses.Response | undefined): string {
  let s = '';
  for (const o of r?.output ?? [])
    if (o.type === 'message') for (const c of o.content) if (c.type === 'output_text') s += c.text;
  return s;
}
