// spec.backend.ai (a GwPolicy on an ai GwBackend) → the providers' policies.ai: prompt guards, prompt
// enrichment, defaults and overrides (ai-policy.ts). The result rides on the backend's policies as
// `ai` until resources.ts moves it into each provider without its own (a provider's own wins).
import { guardRefs, translateAiPolicy } from '../../ai-policy.ts';
import type { BackendMapper } from '../spec.ts';

export const ai: BackendMapper<'ai'> = {
  map(spec, ctx, out, at) {
    const r = translateAiPolicy(spec, at.field, guardRefs(ctx));
    for (const u of r.unsupported) ctx.unsupported(u);
    for (const p of r.invalid) ctx.invalid.push({ ...p, path: [...at.path, ...p.path] });
    if (Object.keys(r.policy).length > 0) (out as { ai?: Record<string, unknown> }).ai = r.policy;
  },
};
