// Every LLM provider, keyed by the IR's provider kind (config/ir.ts LlmProviderSettings). A kind
// without an entry is a type error: a provider is one folder here plus one line below.
import type { LlmProviderKind } from '../../config/ir.ts';
import { anthropicProvider } from './anthropic/index.ts';
import { azureOpenaiProvider } from './azure-openai/index.ts';
import { bedrockProvider } from './bedrock/index.ts';
import { copilotProvider } from './copilot/index.ts';
import { customProvider } from './custom/index.ts';
import { geminiProvider } from './gemini/index.ts';
import { mistralProvider } from './mistral/index.ts';
import { openaiProvider } from './openai/index.ts';
import type { ProviderModule } from './types.ts';
import { vertexAiProvider } from './vertex-ai/index.ts';

export const PROVIDERS: { [K in LlmProviderKind]: ProviderModule<K> } = {
  openai: openaiProvider,
  azureOpenAI: azureOpenaiProvider,
  mistral: mistralProvider,
  custom: customProvider,
  anthropic: anthropicProvider,
  bedrock: bedrockProvider,
  gemini: geminiProvider,
  vertexAI: vertexAiProvider,
  copilot: copilotProvider,
};
