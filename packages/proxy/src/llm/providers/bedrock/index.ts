// Amazon Bedrock: Converse and ConverseStream at `bedrock-runtime.<region>.amazonaws.com`, the model
// in the path. A request is signed with AWS SigV4 (service `bedrock`) by the AWS SDK's own signer,
// with credentials from the environment or, failing that, the SDK's default provider chain; a
// configured apiKey is a Bedrock API key, sent as a bearer token instead. A guardrail in the
// provider's settings is added to the body (`guardrailConfig`) before signing.
import type { ProviderModule } from '../types.ts';
import { loadConverseCodec } from './event-stream.ts';
import { sigV4 } from './sigv4.ts';

export const bedrockProvider: ProviderModule<'bedrock'> = {
  kind: 'bedrock',
  formats: () => ['bedrock-converse'],
  endpoint: (p) => ({ host: `bedrock-runtime.${p.settings.region}.amazonaws.com`, port: 443, tls: true }),
  path: (_p, _format, req) => ({
    prefix: '',
    path: `/model/${encodeURIComponent(req.model)}/${req.stream ? 'converse-stream' : 'converse'}`,
    query: '',
  }),
  // The path names the model.
  bodyHasModel: () => false,
  async authorize(p, req, key, gatewayAuth) {
    const g = p.settings.guardrail;
    if (g) {
      const body = JSON.parse(req.body.toString('utf8')) as Record<string, unknown>;
      body.guardrailConfig = {
        guardrailIdentifier: g.identifier,
        guardrailVersion: g.version,
        // Streamed answers are checked as they pass, not held back until the end.
        ...(req.path.endsWith('/converse-stream') ? { streamProcessingMode: 'async' } : {}),
      };
      req.body = Buffer.from(JSON.stringify(body));
    }
    if (req.path.endsWith('/converse-stream')) await loadConverseCodec();
    // The client's own credentials mean nothing to AWS.
    for (const h of ['authorization', 'x-api-key', 'api-key']) delete req.headers[h];
    if (key !== undefined) {
      req.headers.authorization = `Bearer ${key}`;
      return;
    }
    if (!gatewayAuth) await sigV4(req, p.settings.region, 'bedrock');
  },
};
