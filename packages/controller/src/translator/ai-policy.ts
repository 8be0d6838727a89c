// An LLM provider's `policies.ai` (GwBackend providers, GwModels) → the standalone `policies.ai` of an
// ai backend provider (agentgateway's Policy): prompt guards, prompt enrichment, defaults, overrides.
// Guard kinds and fields the proxy does not serve yet are returned by name, so the caller can say so
// in the status instead of shipping a guard that silently does nothing.
import { checkRegex, inOneLine } from '@gw/api';
import type { GwBackendPoliciesSpec } from './policy/spec.ts';

type Spec = NonNullable<GwBackendPoliciesSpec['ai']>;
type GuardSpec = NonNullable<NonNullable<Spec['promptGuard']>['request']>[number];

const BUILTINS = {
  Ssn: 'ssn',
  CreditCard: 'creditCard',
  PhoneNumber: 'phoneNumber',
  Email: 'email',
  CaSin: 'caSin',
} as const;
const SCOPES = {
  SystemPrompt: 'systemPrompt',
  Messages: 'messages',
  ToolOutput: 'toolOutput',
  ToolInput: 'toolInput',
} as const;
/** Guard kinds the proxy serves from a GwBackend or GwModel; the others are Unsupported. */
const SERVED_GUARDS = ['regex', 'webhook'] as const;

/** Resolves a webhook's backendRef (a Service) to host:port; undefined when it cannot be used. */
export type ResolveService = (
  field: string,
  ref: { group?: string; kind?: string; name: string; port?: number | undefined },
) => string | undefined;

export interface AiPolicyResult {
  policy: Record<string, unknown>;
  /** Fields not translated, e.g. `policies.ai.promptGuard.request[0].webhook`. */
  unsupported: string[];
  /** Fields that are wrong (a pattern the proxy's engine refuses), with the reason. */
  invalid: string[];
}

export function translateAiPolicy(spec: Spec, field: string, resolve: ResolveService): AiPolicyResult {
  const out: AiPolicyResult = { policy: {}, unsupported: [], invalid: [] };
  const regexRules = (r: NonNullable<GuardSpec['regex']>, at: string) => {
    const rules: Record<string, unknown>[] = [];
    (r.matches ?? []).forEach((m, mi) => {
      for (const p of checkRegex(m.pattern, []))
        out.invalid.push(`${at}.regex.matches[${mi}].pattern: ${inOneLine(p.message)}`);
      rules.push({ pattern: m.pattern, ...(m.name ? { name: m.name } : {}) });
    });
    for (const b of r.builtins ?? []) rules.push({ builtin: BUILTINS[b] });
    return rules;
  };
  const g = spec.promptGuard;
  if (g) {
    const guard = (s: GuardSpec, phase: 'request' | 'response', i: number) => {
      const at = `${field}.promptGuard.${phase}[${i}]`;
      const kind = Object.keys(s).find(
        (k) => k !== 'contentScopes' && k !== 'response' && (s as Record<string, unknown>)[k] !== undefined,
      );
      if (!kind || !(SERVED_GUARDS as readonly string[]).includes(kind)) {
        out.unsupported.push(`${at}.${kind ?? '(none)'}`);
        return undefined;
      }
      const entry: Record<string, unknown> = {};
      if (s.webhook) {
        const w = s.webhook;
        const host = resolve(`${at}.webhook.backendRef`, w.backendRef);
        // without its webhook the guard would check nothing: the whole provider is left out
        if (host === undefined) return undefined;
        if (phase === 'response' && g.streaming) {
          out.unsupported.push(`${at}.webhook (on streamed answers)`);
          return undefined;
        }
        entry.webhook = {
          target: { host },
          ...(w.headers ? { headers: w.headers } : {}),
          ...(w.action === 'Audit' ? { action: 'audit' } : {}),
        };
      } else {
        const r = s.regex as NonNullable<GuardSpec['regex']>;
        entry.regex = { action: r.action.toLowerCase(), rules: regexRules(r, at) };
      }
      if (s.response) {
        entry.rejection = {
          ...(s.response.message !== undefined ? { body: s.response.message } : {}),
          ...(s.response.statusCode !== undefined ? { status: s.response.statusCode } : {}),
        };
      }
      if (s.contentScopes) {
        if (phase === 'request') entry.scope = s.contentScopes.map((c) => SCOPES[c]);
        else out.unsupported.push(`${at}.contentScopes`);
      }
      return entry;
    };
    const promptGuard: Record<string, unknown> = {};
    if (g.streaming) promptGuard.streaming = true;
    for (const phase of ['request', 'response'] as const) {
      const list = (g[phase] ?? []).map((s, i) => guard(s, phase, i)).filter((x) => x !== undefined);
      if (list.length > 0) promptGuard[phase] = list;
    }
    if (promptGuard.request || promptGuard.response) out.policy.promptGuard = promptGuard;
  }
  if (spec.promptEnrichment) {
    const msg = (m: { role: string; content: string }) => ({
      role: m.role.toLowerCase(),
      content: m.content,
    });
    out.policy.prompts = {
      ...(spec.promptEnrichment.prepend ? { prepend: spec.promptEnrichment.prepend.map(msg) } : {}),
      ...(spec.promptEnrichment.append ? { append: spec.promptEnrichment.append.map(msg) } : {}),
    };
  }
  if (spec.defaults) out.policy.defaults = spec.defaults;
  if (spec.overrides) out.policy.overrides = spec.overrides;
  if (spec.modelAliases) out.unsupported.push(`${field}.modelAliases`);
  return out;
}
