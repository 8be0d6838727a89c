// The request paths of the LLM client APIs gw serves (chat completions, responses, embeddings,
// messages and their token count, the model list). The proxy's llm/formats/clients.ts serves each (a
// test there keeps the two lists equal); the controller routes them to the models of a listener.
export const LLM_API_PATHS = [
  '/v1/chat/completions',
  '/v1/responses',
  '/v1/embeddings',
  '/v1/messages',
  '/v1/messages/count_tokens',
  '/v1/models',
] as const;
