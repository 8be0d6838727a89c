// What an LLM request cost, by config.modelCatalog: the provider's entry for the model that answered
// (else the model sent), its rates — those of the highest tier the request's context exceeds laid
// over the base ones — times the tokens of each kind. Cache reads and writes are priced apart only
// when the entry has a rate for them (else they count as input); reasoning tokens, part of the output,
// at the reasoning rate (default: the output's).
import type { CostCatalogIR, CostModelIR, CostRatesIR } from '../config/ir.ts';

/** What pricing reads of a request's usage (llm/state.ts LlmUsage). */
interface Usage {
  input: number;
  output: number;
  cachedInput: number;
  cacheWrite?: number;
  reasoning: number;
}

/** A request's cost in the catalog's currency, by kind; `total` is their sum. */
export interface LlmCost {
  total: number;
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  reasoning: number;
}

/**
 * The names a catalog may know a provider by: gw's own (openai, anthropic, gemini, …) and
 * OpenTelemetry's GenAI names that agentgateway's catalogs use (gcp.gemini, aws.bedrock, …).
 */
const OTEL_NAMES: Record<string, string> = {
  gemini: 'gcp.gemini',
  vertexAI: 'gcp.vertex_ai',
  bedrock: 'aws.bedrock',
  azureOpenAI: 'azure.ai.openai',
  mistral: 'mistral_ai',
  xai: 'x_ai',
};

function entryFor(catalog: CostCatalogIR, provider: string, models: readonly (string | undefined)[]) {
  const names = [provider, OTEL_NAMES[provider]];
  for (const model of models) {
    if (model === undefined) continue;
    for (const name of names) {
      const entry = name === undefined ? undefined : catalog[name]?.[model];
      if (entry) return entry;
    }
  }
  return undefined;
}

/** The rates for a request with `context` tokens of context: the highest tier it exceeds over the base. */
function ratesFor(m: CostModelIR, context: number): CostRatesIR {
  let tier: CostModelIR['tiers'][number] | undefined;
  for (const t of m.tiers) if (context > t.contextOver) tier = t;
  return tier ? { ...m.rates, ...tier.rates } : m.rates;
}

/**
 * The cost of `usage` for `provider`'s model (the model that answered first, then the one sent);
 * undefined when the catalog has no entry for either, or the entry prices nothing.
 */
export function priceUsage(
  catalog: CostCatalogIR,
  provider: string,
  models: readonly (string | undefined)[],
  usage: Usage,
): LlmCost | undefined {
  const entry = entryFor(catalog, provider, models);
  if (!entry) return undefined;
  // usage.input holds the cache reads and writes too: the context, whichever way they are priced
  const r = ratesFor(entry, usage.input);
  if (Object.keys(r).length === 0) return undefined;
  const cacheRead = r.cacheRead !== undefined ? usage.cachedInput : 0;
  const cacheWrite = r.cacheWrite !== undefined ? (usage.cacheWrite ?? 0) : 0;
  const input = Math.max(0, usage.input - cacheRead - cacheWrite);
  const reasoning = Math.min(usage.reasoning, usage.output);
  const output = usage.output - reasoning;
  const line = (tokens: number, rate: number | undefined) => (rate === undefined ? 0 : (tokens * rate) / 1e6);
  const cost = {
    input: line(input, r.input),
    output: line(output, r.output),
    cacheRead: line(cacheRead, r.cacheRead),
    cacheWrite: line(cacheWrite, r.cacheWrite),
    reasoning: line(reasoning, r.reasoning ?? r.output),
  };
  return {
    total: cost.input + cost.output + cost.cacheRead + cost.cacheWrite + cost.reasoning,
    ...cost,
  };
}
