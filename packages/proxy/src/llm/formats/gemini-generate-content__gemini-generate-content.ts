// Gemini's native generateContent (a Google client: @google/genai, the Vertex AI SDKs) to a Gemini
// API or Vertex AI model: the model and streaming are in the path, so the body goes as sent to the
// served model's path, and the answer passes unchanged while its usageMetadata is read — the last
// event of a stream carries the full usage.
import { record } from './openai-chat__gemini-generate-content.ts';
import { UsageWatchingStream } from './passthrough.ts';
import type { FormatPair } from './types.ts';

/** Whether an event's data carries Gemini's usage (only those are parsed). */
const HAS_USAGE_METADATA = /"usageMetadata"\s*:\s*\{/;

export const geminiGenerateContentToGeminiGenerateContent: FormatPair<
  'gemini-generate-content',
  'gemini-generate-content'
> = {
  client: 'gemini-generate-content',
  provider: 'gemini-generate-content',
  request: (body) => body,
  response(body, state) {
    record(body, state);
    return undefined;
  },
  stream: (state) => new UsageWatchingStream(state, record, HAS_USAGE_METADATA),
};
