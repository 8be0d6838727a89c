// The Google Model Armor guard: the texts (joined by blank lines: a DataItem holds one text) go to a
// template's sanitizeUserPrompt (request) or sanitizeModelResponse (answer) on
// modelarmor.<location>.rep.googleapis.com with a Google access token (the configured one, else
// Application Default Credentials as the Vertex AI provider gets them). `filterMatchState:
// MATCH_FOUND` rejects, named by the filters that matched; the content is never named.
import { googleAccessToken } from '../providers/vertex-ai/adc.ts';
import { failed, field, guardService, ServiceFailure } from './service-call.ts';
import type { CompiledGuard, GuardKindModule, GuardVerdict } from './types.ts';

type Json = Record<string, unknown>;

const isObject = (x: unknown): x is Json => x !== null && typeof x === 'object' && !Array.isArray(x);

/** The filters of a result that matched: each entry of `filterResults` holds one `*Result`. */
function matched(filterResults: unknown): string[] {
  if (!isObject(filterResults)) return [];
  const out: string[] = [];
  for (const [name, entry] of Object.entries(filterResults)) {
    if (!isObject(entry)) continue;
    const hit = Object.values(entry).some((r) => {
      if (!isObject(r)) return false;
      // sdpFilterResult nests its state in inspectResult or deidentifyResult.
      const states = [r, r.inspectResult, r.deidentifyResult].filter(isObject).map((x) => x.matchState);
      return states.includes('MATCH_FOUND');
    });
    if (hit) out.push(name);
  }
  return out;
}

export const googleModelArmorGuard: GuardKindModule<'googleModelArmor'> = {
  compile(ir, env): CompiledGuard {
    const s = ir.settings;
    const service = guardService(s.service, env);
    const template = `/v1/projects/${encodeURIComponent(s.project)}/locations/${encodeURIComponent(s.location)}/templates/${encodeURIComponent(s.template)}`;
    const token = s.token;
    return {
      ir,
      async check(input): Promise<GuardVerdict> {
        let result: Json;
        try {
          const text = input.texts.join('\n\n');
          const request = input.phase === 'request';
          const answer = await service.post(
            {
              path: `${template}:${request ? 'sanitizeUserPrompt' : 'sanitizeModelResponse'}`,
              headers: {},
              ...(input.signal ? { signal: input.signal } : {}),
              body: Buffer.from(
                JSON.stringify(request ? { userPromptData: { text } } : { modelResponseData: { text } }),
              ),
            },
            async (req) => {
              const t = token?.reveal() ?? (await googleAccessToken());
              if (t === undefined)
                throw new Error('no Google access token (no Application Default Credentials)');
              req.headers.authorization = `Bearer ${t}`;
            },
          );
          result = field(answer, 'sanitizationResult', isObject);
          if (result.filterMatchState !== 'MATCH_FOUND' && result.filterMatchState !== 'NO_MATCH_FOUND')
            throw new ServiceFailure(`invalid answer: filterMatchState ${String(result.filterMatchState)}`);
        } catch (err) {
          return failed(err, true);
        }
        if (result.filterMatchState === 'NO_MATCH_FOUND') return { action: 'pass' };
        const filters = matched(result.filterResults);
        return { action: 'reject', rule: filters.length > 0 ? `match: ${filters.join(', ')}` : 'match' };
      },
    };
  },
};
