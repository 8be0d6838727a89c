// Named providers (agentgateway's provider presets): hosted APIs, and Ollama on the machine, that
// speak OpenAI's API, each at its own address. A preset is a custom provider whose endpoint, path
// prefix and formats are known, so `provider: groq` needs only a key. The endpoints are the ones
// each provider documents for its OpenAI-compatible API; `params.baseUrl`, `hostOverride` and
// `pathPrefix` still move one (a regional endpoint, a proxy, a stand-in in tests).
export interface LlmPreset {
  /** The name a GwModel's `provider` gives it. */
  crd: string;
  host: string;
  port: number;
  tls: boolean;
  /** What comes before the operation (`/chat/completions`, `/embeddings`, `/responses`). */
  pathPrefix: string;
  /** The formats it speaks, as a custom provider's `formats` name them; a `path` is the whole path. */
  formats: { type: 'completions' | 'messages' | 'responses' | 'embeddings'; path?: string }[];
}

const hosted = (
  crd: string,
  host: string,
  pathPrefix: string,
  formats: LlmPreset['formats'] = [{ type: 'completions' }],
): LlmPreset => ({ crd, host, port: 443, tls: true, pathPrefix, formats });

const chatAndEmbeddings: LlmPreset['formats'] = [{ type: 'completions' }, { type: 'embeddings' }];

export const LLM_PRESETS: Readonly<Record<string, LlmPreset>> = {
  baseten: hosted('Baseten', 'inference.baseten.co', '/v1'),
  cerebras: hosted('Cerebras', 'api.cerebras.ai', '/v1'),
  cohere: hosted('Cohere', 'api.cohere.ai', '/compatibility/v1', chatAndEmbeddings),
  deepinfra: hosted('Deepinfra', 'api.deepinfra.com', '/v1/openai', chatAndEmbeddings),
  // DeepSeek also answers Anthropic's messages API, under /anthropic
  deepseek: hosted('Deepseek', 'api.deepseek.com', '', [
    { type: 'completions' },
    { type: 'messages', path: '/anthropic/v1/messages' },
  ]),
  fireworks: hosted('Fireworks', 'api.fireworks.ai', '/inference/v1', chatAndEmbeddings),
  groq: hosted('Groq', 'api.groq.com', '/openai/v1'),
  huggingface: hosted('Huggingface', 'router.huggingface.co', '/v1'),
  ollama: {
    crd: 'Ollama',
    host: 'localhost',
    port: 11434,
    tls: false,
    pathPrefix: '/v1',
    formats: chatAndEmbeddings,
  },
  openrouter: hosted('Openrouter', 'openrouter.ai', '/api/v1'),
  togetherai: hosted('TogetherAI', 'api.together.xyz', '/v1', chatAndEmbeddings),
  xai: hosted('XAI', 'api.x.ai', '/v1', [{ type: 'completions' }, { type: 'responses' }]),
};

/** A GwModel's provider name (`Groq`) → the preset's standalone name (`groq`). */
export const LLM_PRESET_BY_CRD_NAME: Readonly<Record<string, string>> = Object.fromEntries(
  Object.entries(LLM_PRESETS).map(([name, p]) => [p.crd, name]),
);

export function llmPreset(name: unknown): LlmPreset | undefined {
  return typeof name === 'string' && Object.hasOwn(LLM_PRESETS, name) ? LLM_PRESETS[name] : undefined;
}
