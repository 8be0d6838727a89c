// spec.backend.ai (a GwPolicy on an ai GwBackend) → the providers' policies.ai: prompt guards, prompt
// enrichment, defaults and overrides (ai-policy.ts). The result rides on the backend's policies as
// `ai` until resources.ts moves it into each provider without its own (a provider's own wins).
import { guardRefs, translateAiPolicy } from '../../ai-policy.ts';
import type { BackendMapper } from '../spec.ts';

export const ai: BackendMapper<'ai'> = {
  map(spec, ctx, out, at) {
    const r = translateAiPolicy(spec, at.field, guardRefs(ctx));
    for (const u of r.unsupported) ctx.unsupported(u);
    // `<field path>: <message>` → a Problem at that CRD path
    for (const i of r.invalid) {
      const at2 = i.indexOf(': ');
      const path = i
        .slice(0, at2)
        .split('.')
        .flatMap((seg) => seg.split(/\[(\d+)\]/).filter((x) => x !== ''))
        .map((x) => (/^\d+$/.test(x) ? Number(x) : x));
      ctx.invalid.push({ path: ['spec', ...path], message: i.slice(at2 + 2) });
    }
    if (Object.keys(r.policy).length > 0) (out as { ai?: Record<string, unknown> }).ai = r.policy;
  },
};
