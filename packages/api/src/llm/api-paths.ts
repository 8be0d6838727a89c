// The request paths of the LLM client APIs gw serves (chat completions, responses, embeddings,
// messages and their token count, the model list), and the patterns of those whose path names the
// model (Gemini's native methods, Claude on Vertex AI). The proxy's llm/formats/clients.ts serves
// each (a test there keeps the lists equal); the controller routes them to the models of a listener.
export const LLM_API_PATHS = [
  '/v1/chat/completions',
  '/v1/responses',
  '/v1/embeddings',
  '/v1/messages',
  '/v1/messages/count_tokens',
  '/v1/models',
] as const;

/**
 * Where those APIs' paths usually start (the Gemini API's roots — @google/genai calls /v1 as well as
 * /v1beta — and Vertex AI's), taken as path
 * prefixes too: a regex match ranks below every prefix match, so a route for `/` on the same
 * listener would otherwise take them.
 */
export const LLM_API_PATH_PREFIXES = ['/v1beta/models/', '/v1/models/', '/v1/projects/'] as const;

/** The APIs whose path names the model, as path regular expressions (a whole-path match, any prefix). */
export const LLM_API_PATH_REGEXES = {
  geminiGenerateContent: '.*/models/[^/:]+:(generateContent|streamGenerateContent)',
  geminiCountTokens: '.*/models/[^/:]+:countTokens',
  vertexClaude: '.*/publishers/anthropic/models/[^/:]+:(rawPredict|streamRawPredict)',
} as const;
