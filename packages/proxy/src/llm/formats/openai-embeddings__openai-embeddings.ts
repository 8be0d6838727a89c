// OpenAI embeddings to an OpenAI-compatible embeddings endpoint (OpenAI, Azure, Mistral, custom): the
// body goes as sent, with the model to serve, and the answer comes back unchanged. Its usage
// (`prompt_tokens`, `total_tokens`) counts as input: an embedding produces no output tokens.
import type { LlmRequestState } from '../state.ts';
import type { FormatPair, JsonObject, StreamConverter } from './types.ts';

const passThrough: StreamConverter = {
  write: (chunk) => chunk,
  end: () => undefined,
};

const count = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

export const openaiEmbeddingsToOpenaiEmbeddings: FormatPair<'openai-embeddings', 'openai-embeddings'> = {
  client: 'openai-embeddings',
  provider: 'openai-embeddings',
  request(body, req) {
    if (req.bodyHasModel) body.model = req.model;
    else delete body.model;
    return body;
  },
  response(body, state) {
    recordEmbeddingUsage(body, state);
    return undefined;
  },
  // Embeddings are never streamed; whatever comes passes as it is.
  stream: () => passThrough,
};

/** An embedding list's model and usage, on the slot: every token is an input token. */
export function recordEmbeddingUsage(body: JsonObject, state: LlmRequestState): void {
  if (typeof body.model === 'string') state.responseModel = body.model;
  const u = body.usage;
  if (!u || typeof u !== 'object') return;
  const usage = u as JsonObject;
  const input = count(usage.prompt_tokens) ?? count(usage.total_tokens);
  if (input !== undefined) state.record({ input, output: 0, cachedInput: 0, reasoning: 0 });
}
