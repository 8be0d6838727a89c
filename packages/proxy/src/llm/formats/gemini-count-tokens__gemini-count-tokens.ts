// Gemini's native countTokens to a Gemini API or Vertex AI model: the body (contents, or a whole
// generateContentRequest) goes as sent to the served model's path, and the count comes back
// unchanged. Counting spends no tokens, so no usage is recorded.
import type { FormatPair, StreamConverter } from './types.ts';

const passThrough: StreamConverter = {
  write: (chunk) => chunk,
  end: () => undefined,
};

export const geminiCountTokensToGeminiCountTokens: FormatPair<'gemini-count-tokens', 'gemini-count-tokens'> =
  {
    client: 'gemini-count-tokens',
    provider: 'gemini-count-tokens',
    request: (body) => body,
    response: () => undefined,
    stream: () => passThrough,
  };
