// Anthropic's token count (`/v1/messages/count_tokens`) to an Anthropic endpoint: the body goes as
// sent, with the model to serve, and the count comes back unchanged. Counting spends no tokens, so
// no usage is recorded.
import type { FormatPair, StreamConverter } from './types.ts';

const passThrough: StreamConverter = {
  write: (chunk) => chunk,
  end: () => undefined,
};

export const anthropicCountTokensToAnthropicCountTokens: FormatPair<
  'anthropic-count-tokens',
  'anthropic-count-tokens'
> = {
  client: 'anthropic-count-tokens',
  provider: 'anthropic-count-tokens',
  request(body, req) {
    if (req.bodyHasModel) body.model = req.model;
    else delete body.model;
    // The count is never streamed.
    delete body.stream;
    return body;
  },
  response: () => undefined,
  stream: () => passThrough,
};
