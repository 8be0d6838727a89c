// agentgateway's model cost catalog (`config.modelCatalog`): what each provider's models cost per
// million tokens, read from files, inline JSON text or inline YAML, merged in order. The proxy prices
// each LLM request's usage with it (llm.cost in CEL and the access log, gw_llm_cost_total).
import { z } from 'zod';

const strict = z.strictObject;

/** A price in currency units per million tokens: a decimal string, never negative, at most 6 decimals. */
const Money = z.string().regex(/^(0|[1-9][0-9]*)(\.[0-9]{1,6})?$/, {
  message: 'expected a decimal string such as "2.5" (not negative, at most 6 decimals)',
});

export const CatalogRates = strict({
  input: Money.nullable().optional().meta({ description: 'per 1M input (prompt) tokens' }),
  output: Money.nullable().optional().meta({ description: 'per 1M output (completion) tokens' }),
  cacheRead: Money.nullable().optional().meta({ description: 'per 1M tokens read from a prompt cache' }),
  cacheWrite: Money.nullable().optional().meta({ description: 'per 1M tokens written to a prompt cache' }),
  reasoning: Money.nullable()
    .optional()
    .meta({ description: 'per 1M reasoning tokens (default: the output rate)' }),
  inputAudio: Money.nullable()
    .optional()
    .meta({ description: 'per 1M input audio tokens (not counted by gw)' }),
  outputAudio: Money.nullable()
    .optional()
    .meta({ description: 'per 1M output audio tokens (not counted by gw)' }),
});
export type CatalogRates = z.infer<typeof CatalogRates>;

const CatalogModel = strict({
  rates: CatalogRates.optional(),
  tiers: z
    .array(
      strict({
        contextOver: z.number().int().min(0).meta({
          description: 'context tokens (input, cache reads and writes) above which these rates apply',
        }),
        rates: CatalogRates,
      }),
    )
    .optional()
    .superRefine((tiers, ctx) => {
      (tiers ?? []).forEach((t, i) => {
        const prev = tiers?.[i - 1];
        if (prev && t.contextOver <= prev.contextOver)
          ctx.addIssue({
            code: 'custom',
            path: [i, 'contextOver'],
            message: `each tier's contextOver is above the one before (${prev.contextOver})`,
          });
      });
    }),
  tags: z.array(z.string()).optional(),
});

export const ModelCatalog = strict({
  providers: z
    .record(z.string().min(1), strict({ models: z.record(z.string().min(1), CatalogModel).optional() }))
    .optional()
    .meta({ description: 'provider name (openai, anthropic, gcp.gemini, aws.bedrock, …) → its models' }),
});
export type ModelCatalog = z.infer<typeof ModelCatalog>;

export const ModelCatalogSource = z.union([
  strict({ file: z.string().min(1).meta({ description: 'a JSON file of the catalog' }) }),
  strict({
    inline: z
      .union([z.string().min(1), ModelCatalog])
      .meta({ description: 'the catalog, or it as JSON text' }),
  }),
]);
export type ModelCatalogSource = z.infer<typeof ModelCatalogSource>;
