// The format pairs this build converts, keyed `<client>__<provider>`. A pair that is not here is not
// supported: a request needing it gets a 4xx naming both formats (see llm/serve.ts).
import { anthropicCountTokensToAnthropicCountTokens } from './anthropic-count-tokens__anthropic-count-tokens.ts';
import { anthropicMessagesToAnthropicMessages } from './anthropic-messages__anthropic-messages.ts';
import { anthropicMessagesToBedrockConverse } from './anthropic-messages__bedrock-converse.ts';
import { anthropicMessagesToGeminiGenerateContent } from './anthropic-messages__gemini-generate-content.ts';
import { anthropicMessagesToOpenaiChat } from './anthropic-messages__openai-chat.ts';
import { geminiCountTokensToGeminiCountTokens } from './gemini-count-tokens__gemini-count-tokens.ts';
import { geminiGenerateContentToGeminiGenerateContent } from './gemini-generate-content__gemini-generate-content.ts';
import { openaiChatToAnthropicMessages } from './openai-chat__anthropic-messages.ts';
import { openaiChatToBedrockConverse } from './openai-chat__bedrock-converse.ts';
import { openaiChatToGeminiGenerateContent } from './openai-chat__gemini-generate-content.ts';
import { openaiChatToOpenaiChat } from './openai-chat__openai-chat.ts';
import { openaiEmbeddingsToGeminiEmbedContent } from './openai-embeddings__gemini-embed-content.ts';
import { openaiEmbeddingsToOpenaiEmbeddings } from './openai-embeddings__openai-embeddings.ts';
import { openaiResponsesToOpenaiChat } from './openai-responses__openai-chat.ts';
import { openaiResponsesToOpenaiResponses } from './openai-responses__openai-responses.ts';
import type { FormatPair, PairKey } from './types.ts';

export const FORMAT_PAIRS: Partial<Record<PairKey, FormatPair>> = {
  'openai-chat__openai-chat': openaiChatToOpenaiChat,
  'openai-chat__bedrock-converse': openaiChatToBedrockConverse,
  'openai-chat__gemini-generate-content': openaiChatToGeminiGenerateContent,
  'openai-chat__anthropic-messages': openaiChatToAnthropicMessages,
  'openai-responses__openai-responses': openaiResponsesToOpenaiResponses,
  'openai-responses__openai-chat': openaiResponsesToOpenaiChat,
  'openai-embeddings__openai-embeddings': openaiEmbeddingsToOpenaiEmbeddings,
  'openai-embeddings__gemini-embed-content': openaiEmbeddingsToGeminiEmbedContent,
  'anthropic-messages__anthropic-messages': anthropicMessagesToAnthropicMessages,
  'anthropic-messages__openai-chat': anthropicMessagesToOpenaiChat,
  'anthropic-messages__bedrock-converse': anthropicMessagesToBedrockConverse,
  'anthropic-messages__gemini-generate-content': anthropicMessagesToGeminiGenerateContent,
  'anthropic-count-tokens__anthropic-count-tokens': anthropicCountTokensToAnthropicCountTokens,
  'gemini-generate-content__gemini-generate-content': geminiGenerateContentToGeminiGenerateContent,
  'gemini-count-tokens__gemini-count-tokens': geminiCountTokensToGeminiCountTokens,
};
