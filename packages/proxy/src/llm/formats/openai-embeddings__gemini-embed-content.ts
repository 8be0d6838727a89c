// OpenAI embeddings to Gemini's batchEmbedContents: each input string becomes one request
// (`{model: models/<model>, content: {parts: [{text}]}}`, `dimensions` as outputDimensionality), and
// the embeddings come back as OpenAI's list, in the client's `encoding_format` (base64: the float32
// bytes, little-endian, as OpenAI sends them). Token arrays as input have no Gemini equivalent and
// are refused. Gemini reports no token usage for embeddings unless it sends `usageMetadata`.
import { GwError } from '../../errors.ts';
import type { LlmRequestState } from '../state.ts';
import { obj } from './json.ts';
import { openaiError } from './openai-chat-answer.ts';
import type { FormatPair, JsonObject, StreamConverter } from './types.ts';

type Obj = Record<string, unknown>;
const count = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

const passThrough: StreamConverter = {
  write: (chunk) => chunk,
  end: () => undefined,
};

export const openaiEmbeddingsToGeminiEmbedContent: FormatPair<'openai-embeddings', 'gemini-embed-content'> = {
  client: 'openai-embeddings',
  provider: 'gemini-embed-content',
  request(body, req) {
    const model = req.model.startsWith('models/') ? req.model : `models/${req.model}`;
    const dims = typeof body.dimensions === 'number' ? body.dimensions : undefined;
    return {
      requests: inputs(body.input).map((text) => ({
        model,
        content: { parts: [{ text }] },
        ...(dims !== undefined ? { outputDimensionality: dims } : {}),
      })),
    };
  },
  response(body, state) {
    const base64 = state.request.encoding_format === 'base64';
    const list = Array.isArray(body.embeddings) ? body.embeddings : [];
    const data = list.map((e, index) => {
      const values = (obj(e)?.values as number[] | undefined) ?? [];
      return {
        object: 'embedding',
        index,
        embedding: base64 ? Buffer.from(new Float32Array(values).buffer).toString('base64') : values,
      };
    });
    return { object: 'list', data, model: state.model, usage: usage(body, state) };
  },
  stream: () => passThrough,
  error(body, status) {
    const e = obj(body.error);
    if (!e || typeof e.message !== 'string') return undefined;
    return openaiError(e.message, status, typeof e.status === 'string' ? e.status : null);
  },
};

/** The input strings: one string, or a list of them. */
function inputs(input: unknown): string[] {
  if (typeof input === 'string') return [input];
  if (Array.isArray(input) && input.length > 0 && input.every((i) => typeof i === 'string'))
    return input as string[];
  throw new GwError(
    'GW_ERR_LLM_BAD_REQUEST',
    'Gemini embeds text: "input" must be a string or a list of strings (token arrays cannot be sent)',
  );
}

function usage(body: JsonObject, state: LlmRequestState): Obj {
  const tokens = count(obj(body.usageMetadata)?.promptTokenCount);
  if (tokens > 0) state.record({ input: tokens, output: 0, cachedInput: 0, reasoning: 0 });
  return { prompt_tokens: tokens, total_tokens: tokens };
}
