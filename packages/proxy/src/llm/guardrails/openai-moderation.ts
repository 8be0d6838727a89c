// The OpenAI moderation guard (request phase only, as agentgateway's): the request's texts in scope
// go to POST /v1/moderations as one `input` array, and a result that is `flagged` rejects the request
// with the guard's rejection, naming the flagged categories. The key is the configured one, else the
// client's own Authorization (as the OpenAI provider passes it on); a call that fails fails closed.

import { failed, field, guardService, ServiceFailure } from './service-call.ts';
import type { CompiledGuard, GuardKindModule, GuardVerdict } from './types.ts';

export const OPENAI_MODERATION_HOST = 'api.openai.com';
export const OPENAI_MODERATION_PATH = '/v1/moderations';
export const DEFAULT_MODERATION_MODEL = 'omni-moderation-latest';

interface ModerationResult {
  flagged?: unknown;
  categories?: Record<string, unknown>;
}

const isResults = (x: unknown): x is ModerationResult[] =>
  Array.isArray(x) && x.every((r) => r && typeof r === 'object' && typeof r.flagged === 'boolean');

export const openAIModerationGuard: GuardKindModule<'openAIModeration'> = {
  compile(ir, env): CompiledGuard {
    const s = ir.settings;
    const service = guardService(s.service, env);
    return {
      ir,
      async check(input): Promise<GuardVerdict> {
        let results: ModerationResult[];
        try {
          const client = input.request.headers.authorization;
          const auth = s.apiKey ? `Bearer ${s.apiKey.reveal()}` : Array.isArray(client) ? client[0] : client;
          if (auth === undefined) throw new ServiceFailure('no API key (set policies.backendAuth.key)');
          const answer = await service.post({
            path: OPENAI_MODERATION_PATH,
            headers: { authorization: auth },
            ...(input.signal ? { signal: input.signal } : {}),
            body: Buffer.from(JSON.stringify({ model: s.model, input: [...input.texts] })),
          });
          results = field(answer, 'results', isResults);
          if (results.length !== input.texts.length)
            throw new ServiceFailure(
              `invalid answer: ${results.length} results for ${input.texts.length} texts`,
            );
        } catch (err) {
          return failed(err, true);
        }
        const flagged = results.filter((r) => r.flagged === true);
        if (flagged.length === 0) return { action: 'pass' };
        const categories = new Set<string>();
        for (const r of flagged)
          for (const [name, hit] of Object.entries(r.categories ?? {}))
            if (hit === true) categories.add(name);
        return {
          action: 'reject',
          rule: categories.size > 0 ? `flagged: ${[...categories].join(', ')}` : 'flagged',
        };
      },
    };
  },
};
