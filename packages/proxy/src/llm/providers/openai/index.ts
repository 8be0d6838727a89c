// OpenAI (api.openai.com): chat completions, responses and embeddings under /v1, a bearer key. The
// provider's inline moderation setting goes into every chat completions and responses body as
// OpenAI's `moderation` parameter.

import { bearer, openaiOperation } from '../openai-paths.ts';
import type { ProviderModule } from '../types.ts';

export const openaiProvider: ProviderModule<'openai'> = {
  kind: 'openai',
  formats: () => ['openai-chat', 'openai-responses', 'openai-embeddings'],
  endpoint: () => ({ host: 'api.openai.com', port: 443, tls: true }),
  path: (_p, format) => ({ prefix: '/v1', path: openaiOperation(format), query: '' }),
  bodyFields: (p, format) =>
    p.settings.moderation && (format === 'openai-chat' || format === 'openai-responses')
      ? { moderation: p.settings.moderation }
      : undefined,
  authorize: (_p, req, key) => bearer(req.headers, key),
};
