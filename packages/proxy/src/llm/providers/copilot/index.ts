// GitHub Copilot (api.githubcopilot.com): OpenAI's chat completions and responses, at the root (no
// /v1), with a GitHub token as the bearer and the headers Copilot's API asks of a client. The token is
// the configured key, else the one the GitHub tooling left on this machine (copilot-token.ts), read
// at each request so a rotated one is picked up.
import { GwError } from '../../../errors.ts';
import { copilotToken } from '../../../policies/backend-auth/copilot-token.ts';
import { openaiOperation } from '../openai-paths.ts';
import type { ProviderModule } from '../types.ts';

/** What Copilot's API expects of a client besides the token. */
export const COPILOT_HEADERS: Readonly<Record<string, string>> = {
  'editor-version': 'gw/1.0',
  'x-github-api-version': '2025-10-01',
  'x-initiator': 'agent',
  'x-interaction-type': 'conversation-agent',
  'openai-intent': 'conversation-agent',
};

export const copilotProvider: ProviderModule<'copilot'> = {
  kind: 'copilot',
  formats: () => ['openai-chat', 'openai-responses'],
  endpoint: () => ({ host: 'api.githubcopilot.com', port: 443, tls: true }),
  path: (_p, format) => ({ prefix: '', path: openaiOperation(format), query: '' }),
  async authorize(_p, req, key, gatewayAuth) {
    Object.assign(req.headers, COPILOT_HEADERS);
    if (gatewayAuth) return;
    const token = key ?? (await copilotToken());
    if (token === undefined)
      throw new GwError(
        'GW_ERR_INTERNAL',
        'no GitHub Copilot token: set GH_COPILOT_TOKEN (or COPILOT_GITHUB_TOKEN), sign in with GitHub Copilot or the GitHub CLI, or give the provider a key',
      );
    req.headers.authorization = `Bearer ${token}`;
  },
};
