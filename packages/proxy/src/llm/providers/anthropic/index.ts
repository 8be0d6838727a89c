// Anthropic (api.anthropic.com): the Messages API and its token count under /v1, the key in
// `x-api-key` and the API version in `anthropic-version`. A client that sends its own
// anthropic-version (or anthropic-beta) keeps it: it knows which API revision it speaks.
import type { LlmFormat } from '../../../config/ir.ts';
import type { ProviderModule } from '../types.ts';

/** The version the gateway asks for when the client names none (the current stable one). */
export const ANTHROPIC_VERSION = '2023-06-01';

const OPERATIONS: Partial<Record<LlmFormat, string>> = {
  'anthropic-messages': '/messages',
  'anthropic-count-tokens': '/messages/count_tokens',
};

export const anthropicProvider: ProviderModule<'anthropic'> = {
  kind: 'anthropic',
  formats: () => ['anthropic-messages', 'anthropic-count-tokens'],
  endpoint: () => ({ host: 'api.anthropic.com', port: 443, tls: true }),
  path(_p, format) {
    const op = OPERATIONS[format];
    // The serving code only asks for formats the provider listed, so this is a programming error.
    if (op === undefined) throw new Error(`anthropic: no path for ${format}`);
    return { prefix: '/v1', path: op, query: '' };
  },
  authorize(_p, req, key) {
    if (req.headers['anthropic-version'] === undefined) req.headers['anthropic-version'] = ANTHROPIC_VERSION;
    if (key === undefined) return;
    // An OpenAI client's bearer token is not Anthropic's credential.
    delete req.headers.authorization;
    req.headers['x-api-key'] = key;
  },
};
