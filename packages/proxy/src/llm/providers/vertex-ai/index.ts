// Google Vertex AI at `<region>-aiplatform.googleapis.com` (`aiplatform.googleapis.com` for the
// `global` location), under /v1/projects/<project>/locations/<region>: Gemini models in Gemini's
// generateContent format (publishers/google), and Claude models in Anthropic's Messages format
// (publishers/anthropic, rawPredict/streamRawPredict, `anthropic_version` in the body instead of
// the model) when the model entry's `model` names a Claude model. The credential is a Google OAuth
// access token as a bearer: the configured apiKey when set, else Application Default Credentials
// (./adc.ts), else the client's own Authorization header passes.
import type { LlmProviderIR } from '../../../config/ir.ts';
import { generateContentOperation } from '../gemini/index.ts';
import type { ProviderModule } from '../types.ts';
import { googleAccessToken } from './adc.ts';

/** The Messages API version Vertex AI asks Claude requests to name. */
export const VERTEX_ANTHROPIC_VERSION = 'vertex-2023-10-16';

/** The format a model is served in is fixed per model entry, so it follows the configured model. */
const isClaude = (p: LlmProviderIR<'vertexAI'>) => p.model?.startsWith('claude') === true;

/** A model id as a path segment: Claude's versions are `name@date`, and `@` may stay as it is. */
const modelSegment = (m: string) => encodeURIComponent(m).replaceAll('%40', '@');

export const vertexAiProvider: ProviderModule<'vertexAI'> = {
  kind: 'vertexAI',
  formats: (p) => (isClaude(p) ? ['anthropic-messages'] : ['gemini-generate-content', 'gemini-count-tokens']),
  endpoint: (p) => {
    const r = p.settings.region;
    const host = r === 'global' ? 'aiplatform.googleapis.com' : `${r}-aiplatform.googleapis.com`;
    return { host, port: 443, tls: true };
  },
  path(p, format, req) {
    const prefix = `/v1/projects/${encodeURIComponent(p.settings.project)}/locations/${encodeURIComponent(p.settings.region)}`;
    if (format === 'anthropic-messages') {
      const op = req.stream ? 'streamRawPredict' : 'rawPredict';
      return {
        prefix,
        path: `/publishers/anthropic/models/${modelSegment(req.model)}:${op}`,
        query: '',
      };
    }
    if (format === 'gemini-count-tokens')
      return { prefix, path: `/publishers/google/models/${modelSegment(req.model)}:countTokens`, query: '' };
    const op = generateContentOperation(req.model, req.stream);
    return { prefix, path: `/publishers/google${op.path}`, query: op.query };
  },
  bodyHasModel: () => false,
  async authorize(p, req, key, gatewayAuth) {
    if (isClaude(p)) {
      const body = JSON.parse(req.body.toString('utf8')) as Record<string, unknown>;
      body.anthropic_version = VERTEX_ANTHROPIC_VERSION;
      req.body = Buffer.from(JSON.stringify(body));
    }
    const token = key ?? (gatewayAuth ? undefined : await googleAccessToken());
    if (token === undefined) return;
    for (const h of ['x-api-key', 'api-key']) delete req.headers[h];
    req.headers.authorization = `Bearer ${token}`;
  },
};
