// Mistral (api.mistral.ai): OpenAI-compatible chat completions and embeddings under /v1, a bearer key.

import { bearer, openaiOperation } from '../openai-paths.ts';
import type { ProviderModule } from '../types.ts';

export const mistralProvider: ProviderModule<'mistral'> = {
  kind: 'mistral',
  formats: () => ['openai-chat', 'openai-embeddings'],
  endpoint: () => ({ host: 'api.mistral.ai', port: 443, tls: true }),
  path: (_p, format) => ({ prefix: '/v1', path: openaiOperation(format), query: '' }),
  authorize: (_p, req, key) => bearer(req.headers, key),
};
