// The Azure AI Content Safety guard (agentgateway's AzureContentSafety): the texts go to the resource's
// text:analyze (harm categories Hate, SelfHarm, Sexual and Violence at FourSeverityLevels, and the
// blocklists named) and, on requests, text:detectJailbreak. A category at or above the threshold, a
// blocklist item found or a jailbreak detected rejects, named by what was found, never by the text.
// Texts longer than an API takes are sent in pieces, each checked. The credential is the resource's
// subscription key or an Entra ID token (a service principal, a managed or workload identity, or
// Azure's implicit chain); a call that fails fails closed.

import { azure } from '../../policies/backend-auth/cloud.ts';
import { failed, field, guardService, type ServiceRequest } from './service-call.ts';
import type { CompiledGuard, GuardKindModule, GuardVerdict } from './types.ts';

/** The longest text each API takes, in characters. */
const LIMITS = { analyze: 10_000, jailbreak: 1_000 };

interface Category {
  category: string;
  severity: number;
}
const isCategories = (x: unknown): x is Category[] =>
  Array.isArray(x) &&
  x.every(
    (c) => c && typeof c === 'object' && typeof c.category === 'string' && typeof c.severity === 'number',
  );
const isMatches = (x: unknown): x is { blocklistName?: unknown }[] =>
  Array.isArray(x) && x.every((m) => m && typeof m === 'object');
const isJailbreak = (x: unknown): x is { detected: boolean } =>
  !!x && typeof x === 'object' && typeof (x as { detected?: unknown }).detected === 'boolean';

/** `text` in pieces of at most `limit` characters, cut at a whitespace when there is one near the end. */
export function pieces(text: string, limit: number): string[] {
  const out: string[] = [];
  let rest = text;
  while (rest.length > limit) {
    const space = rest.lastIndexOf(' ', limit);
    const cut = space > limit / 2 ? space : limit;
    out.push(rest.slice(0, cut));
    rest = rest.slice(cut).trimStart();
  }
  if (rest.length > 0) out.push(rest);
  return out;
}

export const azureContentSafetyGuard: GuardKindModule<'azureContentSafety'> = {
  compile(ir, env): CompiledGuard {
    const s = ir.settings;
    const service = guardService(s.service, env);
    const auth = s.auth;
    const token = auth.kind === 'azure' ? azure(auth.azure) : undefined;
    const prepare = async (req: ServiceRequest) => {
      if (auth.kind === 'key') req.headers['ocp-apim-subscription-key'] = auth.key.reveal();
      else if (token) req.headers.authorization = `Bearer ${await token()}`;
    };
    return {
      ir,
      async check(input): Promise<GuardVerdict> {
        const text = input.texts.join('\n\n');
        if (text.trim() === '') return { action: 'pass' };
        const found: string[] = [];
        try {
          const call = (api: string, version: string, body: Record<string, unknown>) =>
            service.post(
              {
                path: `/contentsafety/text:${api}?api-version=${encodeURIComponent(version)}`,
                headers: {},
                ...(input.signal ? { signal: input.signal } : {}),
                body: Buffer.from(JSON.stringify(body)),
              },
              prepare,
            );
          const a = s.analyze;
          if (a) {
            for (const piece of pieces(text, LIMITS.analyze)) {
              const answer = await call('analyze', a.apiVersion, {
                text: piece,
                outputType: 'FourSeverityLevels',
                ...(a.blocklists.length > 0
                  ? { blocklistNames: a.blocklists, haltOnBlocklistHit: a.haltOnBlocklistHit }
                  : {}),
              });
              for (const m of field(answer, 'blocklistsMatch', isMatches))
                found.push(`blocklist ${String(m.blocklistName ?? '?')}`);
              for (const c of field(answer, 'categoriesAnalysis', isCategories))
                if (c.severity >= a.threshold) found.push(`${c.category} ${c.severity}`);
              if (found.length > 0) break;
            }
          }
          if (s.jailbreak && input.phase === 'request' && found.length === 0) {
            for (const piece of pieces(text, LIMITS.jailbreak)) {
              const answer = await call('detectJailbreak', s.jailbreak.apiVersion, { text: piece });
              if (field(answer, 'jailbreakAnalysis', isJailbreak).detected) {
                found.push('jailbreak');
                break;
              }
            }
          }
        } catch (err) {
          return failed(err, true);
        }
        if (found.length === 0) return { action: 'pass' };
        return { action: 'reject', rule: [...new Set(found)].join(', ') };
      },
    };
  },
};
