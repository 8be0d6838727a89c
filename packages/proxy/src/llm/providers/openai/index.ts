// OpenAI (api.openai.com): chat completions, responses and embeddings under /v1, a bearer key.

import { bearer, openaiOperation } from '../openai-paths.ts';
import type { ProviderModule } from '../types.ts';

export const openaiProvider: ProviderModule<'openai'> = {
  kind: 'openai',
  formats: () => ['openai-chat', 'openai-responses', 'openai-embeddings'],
  endpoint: () => ({ host: 'api.openai.com', port: 443, tls: true }),
  path: (_p, format) => ({ prefix: '/v1', path: openaiOperation(format), query: '' }),
  authorize: (_p, req, key) => bearer(req.headers, key),
};
