// The Responses and embeddings pieces on their own: Azure's and Gemini's paths for them, the
// Responses → chat conversion (requests, answers, streams fed a byte at a time, refusals), usage of
// a passed-through Responses stream, and embeddings' usage and Gemini's vectors.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { LlmProviderIR } from '../config/ir.ts';
import { GwError } from '../errors.ts';
import { openaiEmbeddingsToGeminiEmbedContent } from './formats/openai-embeddings__gemini-embed-content.ts';
import { openaiEmbeddingsToOpenaiEmbeddings } from './formats/openai-embeddings__openai-embeddings.ts';
import { openaiResponsesToOpenaiChat } from './formats/openai-responses__openai-chat.ts';
import { openaiResponsesToOpenaiResponses } from './formats/openai-responses__openai-responses.ts';
import type { StreamConverter } from './formats/types.ts';
import { PROVIDERS } from './providers/registry.ts';
import { SseSplitter } from './sse.ts';
import { LlmRequestState } from './state.ts';

type Obj = Record<string, unknown>;
const req = (stream = false, bodyHasModel = true) => ({ model: 'm', stream, bodyHasModel });
const state = (format: 'openai-responses' | 'openai-embeddings', request: Obj = {}) =>
  new LlmRequestState(format, request, 'm', request.stream === true);

/** Feeds `input` one byte at a time (the worst split) and returns everything the converter sent. */
function feed(conv: StreamConverter, input: string): string {
  let out = '';
  for (const b of Buffer.from(input)) out += String(conv.write(Buffer.from([b])) ?? '');
  return out + String(conv.end() ?? '');
}

/** The SSE events' `event:` names and parsed data. */
function events(sse: string): { event: string | undefined; data: Obj }[] {
  const s = new SseSplitter();
  const all = s.push(Buffer.from(sse));
  return all
    .filter((e) => e.data !== undefined)
    .map((e) => ({ event: e.event, data: JSON.parse(e.data as string) as Obj }));
}

const chunk = (c: Obj) =>
  `data: ${JSON.stringify({ id: 'c1', created: 1, model: 'mistral-small', ...c })}\n\n`;

describe('paths', () => {
  const azure = (apiVersion?: string): LlmProviderIR<'azureOpenAI'> => ({
    kind: 'azureOpenAI',
    name: 'azure',
    settings: { resourceName: 'r', ...(apiVersion ? { apiVersion } : {}) },
  });

  test('Azure: embeddings on the deployment path; responses beside it, the model in the body', () => {
    const dated = azure('2025-03-01-preview');
    const e = PROVIDERS.azureOpenAI.path(dated, 'openai-embeddings', { model: 'dep', stream: false });
    assert.equal(
      e.prefix + e.path + e.query,
      '/openai/deployments/dep/embeddings?api-version=2025-03-01-preview',
    );
    assert.equal(PROVIDERS.azureOpenAI.bodyHasModel?.(dated, 'openai-embeddings'), false);
    const r = PROVIDERS.azureOpenAI.path(dated, 'openai-responses', { model: 'dep', stream: true });
    assert.equal(r.prefix + r.path + r.query, '/openai/responses?api-version=2025-03-01-preview');
    assert.equal(PROVIDERS.azureOpenAI.bodyHasModel?.(dated, 'openai-responses'), true);
    const v1 = PROVIDERS.azureOpenAI.path(azure(), 'openai-responses', { model: 'dep', stream: false });
    assert.equal(v1.prefix + v1.path + v1.query, '/openai/v1/responses');
  });

  test('Gemini: batchEmbedContents and countTokens after the model', () => {
    const g: LlmProviderIR<'gemini'> = { kind: 'gemini', name: 'gemini', settings: {} };
    assert.deepEqual(PROVIDERS.gemini.formats(g), [
      'gemini-generate-content',
      'gemini-count-tokens',
      'gemini-embed-content',
    ]);
    const c = PROVIDERS.gemini.path(g, 'gemini-count-tokens', { model: 'gemini-2.5-flash', stream: false });
    assert.equal(c.prefix + c.path + c.query, '/v1beta/models/gemini-2.5-flash:countTokens');
    const p = PROVIDERS.gemini.path(g, 'gemini-embed-content', {
      model: 'models/text-embedding-004',
      stream: false,
    });
    assert.equal(p.prefix + p.path + p.query, '/v1beta/models/text-embedding-004:batchEmbedContents');
  });
});

describe('openai-responses__openai-responses', () => {
  test('a stream passes byte for byte; usage from response.completed, not response.created', () => {
    const created = { type: 'response.created', response: { model: 'gpt-4.1', usage: null } };
    const completed = {
      type: 'response.completed',
      response: {
        model: 'gpt-4.1-2025-04-14',
        usage: {
          input_tokens: 40,
          input_tokens_details: { cached_tokens: 32 },
          output_tokens: 7,
          output_tokens_details: { reasoning_tokens: 3 },
        },
      },
    };
    const input =
      `event: response.created\ndata: ${JSON.stringify(created)}\n\n` +
      `event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"Hi"}\n\n` +
      `event: response.completed\ndata: ${JSON.stringify(completed)}\n\n`;
    const s = state('openai-responses', { stream: true });
    assert.equal(feed(openaiResponsesToOpenaiResponses.stream(s), input), input);
    assert.deepEqual(s.usage, { input: 40, output: 7, cachedInput: 32, reasoning: 3 });
    assert.equal(s.responseModel, 'gpt-4.1-2025-04-14');
  });
});

describe('openai-responses__openai-chat: the request', () => {
  const convert = (body: Obj, stream = false) =>
    openaiResponsesToOpenaiChat.request({ ...body }, req(stream), state('openai-responses', body));

  test('instructions, developer messages, images, parallel calls merged, outputs, reasoning dropped', () => {
    const out = convert({
      instructions: 'Be brief.',
      input: [
        { role: 'developer', content: 'Answer in French.' },
        {
          type: 'message',
          role: 'user',
          content: [
            { type: 'input_text', text: 'What is this?' },
            { type: 'input_image', image_url: 'https://example.com/a.png', detail: 'low' },
          ],
        },
        { type: 'reasoning', id: 'rs_1', summary: [] },
        { type: 'function_call', call_id: 'call_1', name: 'a', arguments: '{}' },
        { type: 'function_call', call_id: 'call_2', name: 'b', arguments: '{"x":1}' },
        { type: 'function_call_output', call_id: 'call_1', output: 'one' },
        { type: 'function_call_output', call_id: 'call_2', output: [{ type: 'input_text', text: 'two' }] },
        { role: 'assistant', content: [{ type: 'output_text', text: 'Done.' }] },
      ],
      max_output_tokens: 50,
      temperature: 0.2,
      safety_identifier: 'u1',
      tool_choice: { type: 'function', name: 'a' },
      parallel_tool_calls: false,
      tools: [{ type: 'function', name: 'a', parameters: { type: 'object' } }],
      text: { format: { type: 'json_schema', name: 'out', schema: { type: 'object' }, strict: true } },
    });
    assert.deepEqual(out.messages, [
      { role: 'system', content: 'Be brief.' },
      { role: 'system', content: 'Answer in French.' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is this?' },
          { type: 'image_url', image_url: { url: 'https://example.com/a.png', detail: 'low' } },
        ],
      },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'a', arguments: '{}' } },
          { id: 'call_2', type: 'function', function: { name: 'b', arguments: '{"x":1}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'one' },
      { role: 'tool', tool_call_id: 'call_2', content: 'two' },
      { role: 'assistant', content: 'Done.' },
    ]);
    assert.equal(out.model, 'm');
    assert.equal(out.max_tokens, 50);
    assert.equal(out.temperature, 0.2);
    assert.equal(out.user, 'u1');
    assert.deepEqual(out.tool_choice, { type: 'function', function: { name: 'a' } });
    assert.equal(out.parallel_tool_calls, false);
    assert.deepEqual(out.tools, [
      { type: 'function', function: { name: 'a', parameters: { type: 'object' } } },
    ]);
    assert.deepEqual(out.response_format, {
      type: 'json_schema',
      json_schema: { name: 'out', schema: { type: 'object' }, strict: true },
    });
    assert.equal(out.stream, undefined);
  });

  test('a stream asks for usage', () => {
    const out = convert({ input: 'Hi', stream: true }, true);
    const plain = convert({ input: 'Hi', stream: true, parallel_tool_calls: true }, true);
    assert.equal(plain.parallel_tool_calls, undefined, 'not without tools');
    assert.deepEqual(out.messages, [{ role: 'user', content: 'Hi' }]);
    assert.equal(out.stream, true);
    assert.deepEqual(out.stream_options, { include_usage: true });
  });

  test('what a chat model cannot do is refused by name, as a bad request', () => {
    const refused = (body: Obj, re: RegExp) =>
      assert.throws(
        () => convert(body),
        (e) => e instanceof GwError && e.code === 'GW_ERR_LLM_BAD_REQUEST' && re.test(e.message),
      );
    refused({ input: 'x', previous_response_id: 'resp_1' }, /previous_response_id/);
    refused({ input: 'x', conversation: 'conv_1' }, /conversation/);
    refused({ input: 'x', tools: [{ type: 'web_search' }] }, /built-in tool "web_search"/);
    refused({ input: [{ type: 'item_reference', id: 'msg_1' }] }, /"item_reference"/);
    refused({ input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'f' }] }] }, /"input_file"/);
    refused({ input: 42 }, /"input" string or array/);
  });
});

describe('openai-responses__openai-chat: the answer', () => {
  test('JSON: text and a call as output items, a length stop as incomplete, usage', () => {
    const s = state('openai-responses', { input: 'Hi', instructions: 'Be brief.' });
    const r = openaiResponsesToOpenaiChat.response(
      {
        id: 'c1',
        object: 'chat.completion',
        created: 5,
        model: 'mistral-small',
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: 'Let me look.',
              tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'a', arguments: '{}' } }],
            },
            finish_reason: 'length',
          },
        ],
        usage: { prompt_tokens: 10, completion_tokens: 4, prompt_tokens_details: { cached_tokens: 2 } },
      },
      s,
    ) as Obj;
    assert.equal(r.object, 'response');
    assert.equal(r.id, 'resp_c1');
    assert.equal(r.created_at, 5);
    assert.equal(r.model, 'mistral-small');
    assert.equal(r.instructions, 'Be brief.');
    assert.equal(r.status, 'incomplete');
    assert.deepEqual(r.incomplete_details, { reason: 'max_output_tokens' });
    assert.deepEqual(r.output, [
      {
        id: 'msg_c1',
        type: 'message',
        status: 'completed',
        role: 'assistant',
        content: [{ type: 'output_text', text: 'Let me look.', annotations: [] }],
      },
      {
        id: 'fc_call_1',
        type: 'function_call',
        status: 'completed',
        arguments: '{}',
        call_id: 'call_1',
        name: 'a',
      },
    ]);
    assert.deepEqual(r.usage, {
      input_tokens: 10,
      input_tokens_details: { cached_tokens: 2 },
      output_tokens: 4,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 14,
    });
    assert.deepEqual(s.usage, { input: 10, output: 4, cachedInput: 2, reasoning: 0 });
  });

  test('a stream fed a byte at a time: text then a call, numbered events, usage at the end', () => {
    const s = state('openai-responses', { input: 'Hi', stream: true });
    const input =
      chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] }) +
      chunk({ choices: [{ index: 0, delta: { content: 'Hel' }, finish_reason: null }] }) +
      chunk({ choices: [{ index: 0, delta: { content: 'lo' }, finish_reason: null }] }) +
      chunk({
        choices: [
          {
            index: 0,
            delta: {
              tool_calls: [
                { index: 0, id: 'call_1', type: 'function', function: { name: 'a', arguments: '' } },
              ],
            },
            finish_reason: null,
          },
        ],
      }) +
      chunk({
        choices: [
          {
            index: 0,
            delta: { tool_calls: [{ index: 0, function: { arguments: '{"x":' } }] },
            finish_reason: null,
          },
        ],
      }) +
      chunk({
        choices: [
          {
            index: 0,
            delta: { tool_calls: [{ index: 0, function: { arguments: '1}' } }] },
            finish_reason: null,
          },
        ],
      }) +
      chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] }) +
      chunk({ choices: [], usage: { prompt_tokens: 9, completion_tokens: 6 } }) +
      'data: [DONE]\n\n';
    const out = events(feed(openaiResponsesToOpenaiChat.stream(s), input));
    assert.deepEqual(
      out.map((e) => e.event),
      [
        'response.created',
        'response.in_progress',
        'response.output_item.added',
        'response.content_part.added',
        'response.output_text.delta',
        'response.output_text.delta',
        'response.output_text.done',
        'response.content_part.done',
        'response.output_item.done',
        'response.output_item.added',
        'response.function_call_arguments.delta',
        'response.function_call_arguments.delta',
        'response.function_call_arguments.done',
        'response.output_item.done',
        'response.completed',
      ],
    );
    assert.ok(out.every((e, i) => e.data.type === e.event && e.data.sequence_number === i));
    const text = out.find((e) => e.event === 'response.output_text.done');
    assert.equal(text?.data.text, 'Hello');
    const args = out.find((e) => e.event === 'response.function_call_arguments.done');
    assert.equal(args?.data.arguments, '{"x":1}');
    assert.equal(args?.data.output_index, 1);
    const done = out[out.length - 1]?.data.response as Obj;
    assert.equal(done.status, 'completed');
    assert.deepEqual(
      (done.output as Obj[]).map((o) => o.type),
      ['message', 'function_call'],
    );
    assert.equal((done.usage as Obj).output_tokens, 6);
    assert.deepEqual(s.usage, { input: 9, output: 6, cachedInput: 0, reasoning: 0 });
  });

  test('a stream cut short still completes; a length stop is response.incomplete; an error event', () => {
    const cut = events(
      feed(
        openaiResponsesToOpenaiChat.stream(state('openai-responses', { stream: true })),
        chunk({ choices: [{ index: 0, delta: { content: 'Hi' }, finish_reason: 'length' }] }),
      ),
    );
    const last = cut[cut.length - 1];
    assert.equal(last?.event, 'response.incomplete');
    assert.deepEqual((last?.data.response as Obj | undefined)?.incomplete_details, {
      reason: 'max_output_tokens',
    });

    const failed = events(
      feed(
        openaiResponsesToOpenaiChat.stream(state('openai-responses', { stream: true })),
        chunk({ choices: [{ index: 0, delta: { content: 'Hi' }, finish_reason: null }] }) +
          `data: ${JSON.stringify({ error: { message: 'overloaded', code: 'server_error' } })}\n\n`,
      ),
    );
    const err = failed[failed.length - 1];
    assert.equal(err?.event, 'error');
    assert.equal(err?.data.message, 'overloaded');
    assert.equal(err?.data.code, 'server_error');
  });
});

describe('embeddings', () => {
  test('OpenAI-compatible: the model rewritten or dropped; usage as input, total_tokens when alone', () => {
    const body = { model: 'x', input: 'a' };
    assert.deepEqual(
      openaiEmbeddingsToOpenaiEmbeddings.request({ ...body }, req(), state('openai-embeddings')),
      {
        model: 'm',
        input: 'a',
      },
    );
    assert.deepEqual(
      openaiEmbeddingsToOpenaiEmbeddings.request({ ...body }, req(false, false), state('openai-embeddings')),
      { input: 'a' },
    );
    const s = state('openai-embeddings');
    assert.equal(
      openaiEmbeddingsToOpenaiEmbeddings.response({ model: 'e', usage: { total_tokens: 5 } }, s),
      undefined,
    );
    assert.deepEqual(s.usage, { input: 5, output: 0, cachedInput: 0, reasoning: 0 });
    assert.equal(s.responseModel, 'e');
  });

  test('Gemini: a request per input; base64 vectors are little-endian float32; errors in OpenAI’s shape', () => {
    const out = openaiEmbeddingsToGeminiEmbedContent.request(
      { model: 'x', input: 'a' },
      req(false, false),
      state('openai-embeddings'),
    );
    assert.deepEqual(out, { requests: [{ model: 'models/m', content: { parts: [{ text: 'a' }] } }] });
    const s = state('openai-embeddings', { input: 'a', encoding_format: 'base64' });
    s.model = 'm';
    const r = openaiEmbeddingsToGeminiEmbedContent.response(
      { embeddings: [{ values: [0.5, -2] }] },
      s,
    ) as Obj;
    const data = r.data as Obj[];
    const bytes = Buffer.from(String(data[0]?.embedding), 'base64');
    assert.deepEqual([bytes.readFloatLE(0), bytes.readFloatLE(4)], [0.5, -2]);
    assert.deepEqual(r.usage, { prompt_tokens: 0, total_tokens: 0 });
    assert.equal(s.usage, undefined, 'Gemini reports no tokens for embeddings');
    assert.deepEqual(
      openaiEmbeddingsToGeminiEmbedContent.error?.(
        { error: { code: 400, message: 'bad', status: 'INVALID_ARGUMENT' } },
        400,
      ),
      { error: { message: 'bad', type: 'invalid_request_error', param: null, code: 'INVALID_ARGUMENT' } },
    );
  });
});
