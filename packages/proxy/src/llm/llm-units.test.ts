// The LLM core's pieces on their own: SSE splitting, usage normalisation, the usage slot, the
// openai-chat pair's stream converter and the providers' endpoints, paths and credentials.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { LlmProviderIR } from '../config/ir.ts';
import { openaiChatToOpenaiChat } from './formats/openai-chat__openai-chat.ts';
import { FORMAT_PAIRS } from './formats/registry.ts';
import { PROVIDERS } from './providers/registry.ts';
import type { ProviderRequest } from './providers/types.ts';
import { SseSplitter } from './sse.ts';
import { LlmRequestState } from './state.ts';
import { normalizeUsage, usageFromBody } from './usage.ts';

describe('SseSplitter', () => {
  test('events split across chunks come out whole, as they complete', () => {
    const s = new SseSplitter();
    assert.deepEqual(s.push(Buffer.from('data: {"a":')), []);
    const [e] = s.push(Buffer.from('1}\n\nda'));
    assert.equal(e?.raw, 'data: {"a":1}\n\n');
    assert.equal(e?.data, '{"a":1}');
    const two = s.push(Buffer.from('ta: x\r\n\r\nevent: ping\ndata: y\ndata: z\n\n'));
    assert.deepEqual(
      two.map((x) => [x.event, x.data]),
      [
        [undefined, 'x'],
        ['ping', 'y\nz'],
      ],
    );
    assert.equal(s.flush(), undefined);
  });

  test('a multi-byte character split between chunks survives', () => {
    const s = new SseSplitter();
    const bytes = Buffer.from('data: "é"\n\n');
    assert.deepEqual(s.push(bytes.subarray(0, 8)), []);
    assert.equal(s.push(bytes.subarray(8))[0]?.data, '"é"');
  });
});

describe('usage', () => {
  test('OpenAI chat: cached and reasoning tokens are parts of prompt and completion', () => {
    assert.deepEqual(
      normalizeUsage({
        prompt_tokens: 100,
        completion_tokens: 50,
        prompt_tokens_details: { cached_tokens: 60 },
        completion_tokens_details: { reasoning_tokens: 20 },
      }),
      { input: 100, output: 50, cachedInput: 60, reasoning: 20 },
    );
  });

  test('Anthropic: cache reads and writes are added to input (writes also apart)', () => {
    assert.deepEqual(
      normalizeUsage({
        input_tokens: 10,
        cache_read_input_tokens: 30,
        cache_creation_input_tokens: 5,
        output_tokens: 7,
      }),
      { input: 45, output: 7, cachedInput: 30, cacheWrite: 5, reasoning: 0 },
    );
  });

  test('Gemini: thoughts count as output', () => {
    assert.deepEqual(
      normalizeUsage({
        promptTokenCount: 8,
        candidatesTokenCount: 4,
        thoughtsTokenCount: 3,
        cachedContentTokenCount: 2,
      }),
      { input: 8, output: 7, cachedInput: 2, reasoning: 3 },
    );
  });

  test('an SSE body: the last totals win', () => {
    const u = usageFromBody(
      'text/event-stream',
      Buffer.from(
        'data: {"usage":{"prompt_tokens":3,"completion_tokens":1}}\n\ndata: {"usage":{"prompt_tokens":3,"completion_tokens":9}}\n\ndata: [DONE]\n\n',
      ),
    );
    assert.deepEqual(u, { input: 3, output: 9, cachedInput: 0, reasoning: 0 });
  });
});

describe('LlmRequestState', () => {
  test('onUsage hears the final usage once the answer is complete, later listeners at once', () => {
    const s = new LlmRequestState('openai-chat', { model: 'm' }, 'm', true);
    const heard: number[] = [];
    s.onUsage((u) => heard.push(u.input + u.output));
    s.record({ input: 5, output: 1, cachedInput: 0, reasoning: 0 });
    s.record({ input: 0, output: 9, cachedInput: 0, reasoning: 0 });
    assert.equal(heard.length, 0, 'not before the answer is complete');
    s.finish();
    s.finish();
    s.onUsage((u) => heard.push(u.output));
    assert.deepEqual(heard, [14, 9]);
    assert.deepEqual(s.cel(), {
      requestModel: 'm',
      streaming: true,
      inputTokens: 5,
      outputTokens: 9,
      totalTokens: 14,
      cachedInputTokens: 0,
      reasoningTokens: 0,
    });
  });

  test('an answer without usage calls nobody', () => {
    const s = new LlmRequestState('openai-chat', {}, 'm', false);
    let called = false;
    s.onUsage(() => {
      called = true;
    });
    s.finish();
    assert.equal(called, false);
  });
});

describe('openai-chat__openai-chat', () => {
  const pair = openaiChatToOpenaiChat;
  test('is registered under its file name', () => {
    assert.equal(FORMAT_PAIRS['openai-chat__openai-chat'], pair);
  });

  test('request: the model to serve; a stream asks for usage, keeping other stream_options', () => {
    const state = new LlmRequestState('openai-chat', {}, 'alias', true);
    const out = pair.request(
      { model: 'alias', stream: true, stream_options: { other: 1 } },
      { model: 'gpt-4o', stream: true, bodyHasModel: true },
      state,
    );
    assert.deepEqual(out, {
      model: 'gpt-4o',
      stream: true,
      stream_options: { other: 1, include_usage: true },
    });
    const azure = pair.request({ model: 'x' }, { model: 'x', stream: false, bodyHasModel: false }, state);
    assert.deepEqual(azure, {});
  });

  const chunk = (o: object) => `data: ${JSON.stringify(o)}\n\n`;
  const content = chunk({ choices: [{ index: 0, delta: { content: 'hi' } }], usage: null });
  const usage = chunk({
    model: 'gpt-4o-2024',
    choices: [],
    usage: { prompt_tokens: 4, completion_tokens: 2 },
  });

  test('stream: chunks pass byte for byte; the usage chunk the client did not ask for is dropped', () => {
    const state = new LlmRequestState('openai-chat', { stream: true }, 'm', true);
    const conv = pair.stream(state);
    assert.equal(conv.write(Buffer.from(content.slice(0, 10))), undefined);
    assert.equal(conv.write(Buffer.from(content.slice(10))), content);
    assert.equal(conv.write(Buffer.from(usage + 'data: [DONE]\n\n')), 'data: [DONE]\n\n');
    assert.equal(conv.end(), undefined);
    assert.deepEqual(state.usage, { input: 4, output: 2, cachedInput: 0, reasoning: 0 });
    assert.equal(state.responseModel, 'gpt-4o-2024');
  });

  test('stream: kept when the client asked; usage on a content chunk is taken off it', () => {
    const asked = new LlmRequestState('openai-chat', { stream_options: { include_usage: true } }, 'm', true);
    assert.equal(pair.stream(asked).write(Buffer.from(usage)), usage);
    const state = new LlmRequestState('openai-chat', {}, 'm', true);
    const both = chunk({
      choices: [{ index: 0, delta: {} }],
      usage: { prompt_tokens: 1, completion_tokens: 1 },
    });
    assert.equal(pair.stream(state).write(Buffer.from(both)), chunk({ choices: [{ index: 0, delta: {} }] }));
    assert.equal(state.usage?.input, 1);
  });
});

describe('providers', () => {
  const req = (): ProviderRequest => ({
    method: 'POST',
    path: '/',
    headers: { authorization: 'Bearer client' },
    body: Buffer.alloc(0),
  });

  test('every provider kind has a module that names itself', () => {
    for (const [kind, mod] of Object.entries(PROVIDERS)) assert.equal(mod.kind, kind);
  });

  test('openai and mistral: their hosts, /v1 paths and a bearer key', async () => {
    const openai: LlmProviderIR<'openai'> = { kind: 'openai', name: 'openai', settings: {} };
    assert.deepEqual(PROVIDERS.openai.endpoint(openai), { host: 'api.openai.com', port: 443, tls: true });
    assert.deepEqual(PROVIDERS.openai.path(openai, 'openai-chat', { model: 'm', stream: false }), {
      prefix: '/v1',
      path: '/chat/completions',
      query: '',
    });
    const r = req();
    await PROVIDERS.openai.authorize(openai, r, 'sk-1');
    assert.equal(r.headers.authorization, 'Bearer sk-1');
    const mistral: LlmProviderIR<'mistral'> = { kind: 'mistral', name: 'mistral', settings: {} };
    assert.equal(PROVIDERS.mistral.endpoint(mistral).host, 'api.mistral.ai');
  });

  test('azureOpenAI: resource host, deployment or v1 path, foundry projects, api-key header', async () => {
    const az = (settings: LlmProviderIR<'azureOpenAI'>['settings']): LlmProviderIR<'azureOpenAI'> => ({
      kind: 'azureOpenAI',
      name: 'azureOpenAI',
      settings,
    });
    const dated = az({ resourceName: 'res', apiVersion: '2024-10-21' });
    assert.equal(PROVIDERS.azureOpenAI.endpoint(dated).host, 'res.openai.azure.com');
    assert.deepEqual(PROVIDERS.azureOpenAI.path(dated, 'openai-chat', { model: 'dep 1', stream: true }), {
      prefix: '/openai/deployments/dep%201',
      path: '/chat/completions',
      query: '?api-version=2024-10-21',
    });
    assert.equal(PROVIDERS.azureOpenAI.bodyHasModel?.(dated, 'openai-chat'), false);
    const v1 = az({ resourceName: 'res' });
    assert.equal(
      PROVIDERS.azureOpenAI.path(v1, 'openai-chat', { model: 'm', stream: false }).prefix,
      '/openai/v1',
    );
    assert.equal(PROVIDERS.azureOpenAI.bodyHasModel?.(v1, 'openai-chat'), true);
    const foundry = az({ resourceName: 'res', resourceType: 'foundry', projectName: 'p' });
    assert.equal(PROVIDERS.azureOpenAI.endpoint(foundry).host, 'res.services.ai.azure.com');
    assert.equal(
      PROVIDERS.azureOpenAI.path(foundry, 'openai-chat', { model: 'm', stream: false }).prefix,
      '/api/projects/p/openai/v1',
    );
    const r = req();
    await PROVIDERS.azureOpenAI.authorize(dated, r, 'k');
    assert.deepEqual(r.headers, { 'api-key': 'k' });
  });

  test('custom: its formats, a path of its own per format, the client credential kept without a key', async () => {
    const c: LlmProviderIR<'custom'> = {
      kind: 'custom',
      name: 'vllm',
      endpoint: { host: 'h', port: 8000, tls: false },
      settings: { formats: [{ format: 'openai-chat', path: '/generate' }, { format: 'openai-embeddings' }] },
    };
    assert.deepEqual(PROVIDERS.custom.formats(c), ['openai-chat', 'openai-embeddings']);
    assert.deepEqual(PROVIDERS.custom.path(c, 'openai-chat', { model: 'm', stream: false }), {
      prefix: '',
      path: '/generate',
      query: '',
    });
    assert.equal(
      PROVIDERS.custom.path(c, 'openai-embeddings', { model: 'm', stream: false }).path,
      '/embeddings',
    );
    const r = req();
    await PROVIDERS.custom.authorize(c, r, undefined);
    assert.equal(r.headers.authorization, 'Bearer client');
  });
});
