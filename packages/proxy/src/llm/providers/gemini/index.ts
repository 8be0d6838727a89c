// Google Gemini (the Gemini API at generativelanguage.googleapis.com): its native generateContent
// and streamGenerateContent (SSE with `alt=sse`), and batchEmbedContents for embeddings, under
// /v1beta, the model in the path and the key in `x-goog-api-key`. (Gemini also serves an
// OpenAI-compatible endpoint; a `custom` provider reaches it.)
import type { ProviderModule } from '../types.ts';

/** A model id as its path segment (a `models/` prefix, as Google's own names carry, dropped). */
const modelSegment = (model: string) =>
  encodeURIComponent(model.startsWith('models/') ? model.slice(7) : model);

/** `:generateContent` or, streamed, `:streamGenerateContent?alt=sse`, after `models/<model>`. */
export function generateContentOperation(model: string, stream: boolean): { path: string; query: string } {
  const name = modelSegment(model);
  return stream
    ? { path: `/models/${name}:streamGenerateContent`, query: '?alt=sse' }
    : { path: `/models/${name}:generateContent`, query: '' };
}

export const geminiProvider: ProviderModule<'gemini'> = {
  kind: 'gemini',
  formats: () => ['gemini-generate-content', 'gemini-count-tokens', 'gemini-embed-content'],
  endpoint: () => ({ host: 'generativelanguage.googleapis.com', port: 443, tls: true }),
  path: (_p, format, req) =>
    format === 'gemini-embed-content'
      ? { prefix: '/v1beta', path: `/models/${modelSegment(req.model)}:batchEmbedContents`, query: '' }
      : format === 'gemini-count-tokens'
        ? { prefix: '/v1beta', path: `/models/${modelSegment(req.model)}:countTokens`, query: '' }
        : { prefix: '/v1beta', ...generateContentOperation(req.model, req.stream) },
  bodyHasModel: () => false,
  authorize(_p, req, key) {
    if (key === undefined) {
      // An OpenAI client sends its apiKey as a bearer, where Google takes OAuth tokens only: a
      // Google API key there (they start with AIza) is moved to its header.
      const auth = req.headers.authorization;
      if (typeof auth === 'string' && auth.startsWith('Bearer AIza') && !req.headers['x-goog-api-key']) {
        delete req.headers.authorization;
        req.headers['x-goog-api-key'] = auth.slice(7);
      }
      return;
    }
    delete req.headers.authorization;
    req.headers['x-goog-api-key'] = key;
  },
};
