// Google Vertex AI: Gemini models at `<region>-aiplatform.googleapis.com` (`aiplatform.googleapis.com`
// for the `global` location), under /v1/projects/<project>/locations/<region>/publishers/google, in
// Gemini's generateContent format, with a Google OAuth access token as a bearer: the configured
// apiKey when set, else Application Default Credentials (google-auth-library), else the client's own
// Authorization header passes. Claude models on Vertex (publishers/anthropic) are not served yet.
import { generateContentOperation } from '../gemini/index.ts';
import type { ProviderModule } from '../types.ts';
import { googleAccessToken } from './adc.ts';

export const vertexAiProvider: ProviderModule<'vertexAI'> = {
  kind: 'vertexAI',
  formats: () => ['gemini-generate-content'],
  endpoint: (p) => {
    const r = p.settings.region;
    return {
      host: r === 'global' ? 'aiplatform.googleapis.com' : `${r}-aiplatform.googleapis.com`,
      port: 443,
      tls: true,
    };
  },
  path: (p, _format, req) => ({
    prefix: `/v1/projects/${encodeURIComponent(p.settings.project)}/locations/${encodeURIComponent(p.settings.region)}/publishers/google`,
    ...generateContentOperation(req.model, req.stream),
  }),
  bodyHasModel: () => false,
  async authorize(_p, req, key) {
    const token = key ?? (await googleAccessToken());
    if (token === undefined) return;
    for (const h of ['x-api-key', 'api-key']) delete req.headers[h];
    req.headers.authorization = `Bearer ${token}`;
  },
};
