// An endpoint of the user's own (vLLM, Ollama, a hosted OpenAI-compatible API …): the formats it
// says it speaks, each at its own path or the OpenAI-style default, and a bearer key when one is set.
// The loader refuses a custom provider without an endpoint (baseUrl or hostOverride).
import type { LlmFormat } from '../../../config/ir.ts';
import { bearer, OPENAI_OPERATIONS } from '../openai-paths.ts';
import type { ProviderModule } from '../types.ts';

const DEFAULT_PATHS: Partial<Record<LlmFormat, string>> = {
  ...OPENAI_OPERATIONS,
  'anthropic-messages': '/messages',
  'anthropic-count-tokens': '/messages/count_tokens',
};

export const customProvider: ProviderModule<'custom'> = {
  kind: 'custom',
  formats: (p) => p.settings.formats.map((f) => f.format),
  endpoint: (p) => p.endpoint ?? { host: 'localhost', port: 80, tls: false },
  path(p, format) {
    const own = p.settings.formats.find((f) => f.format === format)?.path;
    if (own !== undefined) return { prefix: '', path: own, query: '' };
    const op = DEFAULT_PATHS[format];
    if (op === undefined) throw new Error(`custom provider: no default path for ${format}`);
    return { prefix: '/v1', path: op, query: '' };
  },
  authorize: (_p, req, key) => bearer(req.headers, key),
};
