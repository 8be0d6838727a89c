// An LLM provider's `policies.ai` (GwBackend providers, GwModels) → the standalone `policies.ai` of an
// ai backend provider (agentgateway's Policy): prompt guards, prompt enrichment, defaults, overrides.
// `routes` (which API a path is) and `prompt` (agentgateway's name of promptEnrichment) too. Guard
// kinds, route types and fields the proxy does not serve yet are returned by name, so the caller can
// say so in the status instead of shipping a guard that silently does nothing.
import { checkRegex, type FieldPath, type Problem, SERVED_AI_ROUTE_TYPES } from '@gw/api';
import { checkCel } from '@gw/api/checks/cel';
import { CRD_REQUEST_GUARD_KINDS } from '@gw/api/crd/policy-blocks';
import { translateAssumeRole } from './policy/backend/auth.ts';
import { httpPolicy } from './policy/backend/http.ts';
import { tcpPolicy } from './policy/backend/tcp.ts';
import { backendTls } from './policy/backend/tls.ts';
import { tunnel as tunnelMapper } from './policy/backend/tunnel.ts';
import { isSecretRef, type MapContext, readKey, serviceAddress } from './policy/context.ts';
import type { BackendPolicies, BackendSpec, GwBackendPoliciesSpec } from './policy/spec.ts';

type BackendTlsSpec = NonNullable<BackendSpec['tls']>;

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
/** Guard kinds the proxy serves from a GwBackend or GwModel (every kind the CRDs have); the others are Unsupported. */
const SERVED_GUARDS: readonly string[] = CRD_REQUEST_GUARD_KINDS;

/** What a guard needs from the cluster; each returns undefined when the reference cannot be used. */
export interface GuardRefs {
  /** A webhook's backendRef (a Service) → host:port. */
  service(
    field: string,
    ref: { group?: string; kind?: string; name: string; port?: number | undefined },
  ): string | undefined;
  /** A key: inline, or a Secret's (`defaultKey` when the reference names none). */
  key(
    field: string,
    auth: { key?: string | undefined; secretRef?: { name: string; key?: string | undefined } | undefined },
  ): string | undefined;
  /** One key of a Secret (AWS credentials). */
  secretKey(field: string, name: string, key: string, optional?: boolean): string | undefined;
  /** A guard service's `tls` as backendTLS; undefined: its material is missing (fail closed). */
  tls(field: string, spec: BackendTlsSpec): Record<string, unknown> | undefined;
  /** A guard service's `tunnel` as backendTunnel; undefined: no proxy to go through (fail closed). */
  tunnel(field: string, spec: NonNullable<BackendSpec['tunnel']>): Record<string, unknown> | undefined;
}

export interface AiPolicyResult {
  policy: Record<string, unknown>;
  /** Fields not translated, e.g. `policies.ai.promptGuard.request[0].webhook`. */
  unsupported: string[];
  /** Fields that are wrong (a pattern the proxy's engine refuses), at paths below the ai policy. */
  invalid: Problem[];
}

export function translateAiPolicy(spec: Spec, field: string, refs: GuardRefs): AiPolicyResult {
  const out: AiPolicyResult = { policy: {}, unsupported: [], invalid: [] };
  const regexRules = (r: NonNullable<GuardSpec['regex']>, at: FieldPath) => {
    const rules: Record<string, unknown>[] = [];
    (r.matches ?? []).forEach((m, mi) => {
      out.invalid.push(...checkRegex(m.pattern, [...at, 'regex', 'matches', mi, 'pattern']));
      rules.push({ pattern: m.pattern, ...(m.name ? { name: m.name } : {}) });
    });
    for (const b of r.builtins ?? []) rules.push({ builtin: BUILTINS[b] });
    return rules;
  };
  /** A guard service's tls: {backendTLS} ({} without one); null: its material is missing. */
  const serviceTls = (f: string, t: BackendTlsSpec | undefined): { backendTLS?: unknown } | null => {
    if (!t) return {};
    const r = refs.tls(`${f}.policies.tls`, t);
    return r === undefined ? null : { backendTLS: r };
  };
  /** A guard service's tcp and http blocks as its proxy policies. */
  const serviceConnection = (p: { tcp?: BackendSpec['tcp']; http?: BackendSpec['http'] } | undefined) => {
    const tcp = p?.tcp && tcpPolicy(p.tcp);
    const http = p?.http && httpPolicy(p.http);
    return { ...(tcp ? { tcp } : {}), ...(http ? { http } : {}) };
  };
  /** A guard service's tunnel: {backendTunnel} ({} without one); null: no proxy to go through. */
  const serviceTunnel = (
    f: string,
    t: BackendSpec['tunnel'] | undefined,
  ): { backendTunnel?: unknown } | null => {
    if (!t) return {};
    const r = refs.tunnel(`${f}.policies.tunnel`, t);
    return r === undefined ? null : { backendTunnel: r };
  };
  const g = spec.promptGuard;
  if (g) {
    const guard = (s: GuardSpec, phase: 'request' | 'response', i: number) => {
      const at = `${field}.promptGuard.${phase}[${i}]`;
      const kind = Object.keys(s).find(
        (k) =>
          k !== 'contentScopes' &&
          k !== 'scope' &&
          k !== 'response' &&
          (s as Record<string, unknown>)[k] !== undefined,
      );
      if (!kind || !SERVED_GUARDS.includes(kind)) {
        out.unsupported.push(`${at}.${kind ?? '(none)'}`);
        return undefined;
      }
      const entry: Record<string, unknown> = {};
      // A guard whose service or credentials cannot be resolved would check nothing: the caller
      // leaves the whole provider out (refs mark it), and the guard is not built.
      if (s.openAIModeration) {
        const m = s.openAIModeration;
        const auth = m.policies?.auth;
        if (auth?.location) out.unsupported.push(`${at}.openAIModeration.policies.auth.location`);
        const key = auth ? refs.key(`${at}.openAIModeration.policies.auth`, auth) : undefined;
        if (auth && key === undefined) return undefined;
        const backendTLS = serviceTls(`${at}.openAIModeration`, m.policies?.tls);
        const backendTunnel = serviceTunnel(`${at}.openAIModeration`, m.policies?.tunnel);
        if (backendTLS === null || backendTunnel === null) return undefined;
        const policies = {
          ...(key !== undefined ? { backendAuth: { key } } : {}),
          ...backendTLS,
          ...backendTunnel,
          ...serviceConnection(m.policies),
        };
        entry.openAIModeration = {
          ...(m.model ? { model: m.model } : {}),
          ...(Object.keys(policies).length > 0 ? { policies } : {}),
        };
      } else if (s.bedrockGuardrails) {
        const b = s.bedrockGuardrails;
        const bf = `${at}.bedrockGuardrails`;
        const auth = b.policies?.auth;
        let backendAuth: Record<string, unknown> | undefined;
        if (auth?.location) out.unsupported.push(`${bf}.policies.auth.location`);
        if (auth?.aws) {
          if (auth.aws.region || auth.aws.service || auth.aws.serviceName)
            out.unsupported.push(`${bf}.policies.auth.aws.region/serviceName`);
          const ref = auth.aws.secretRef;
          if (auth.aws.assumeRole) {
            const r = translateAssumeRole(auth.aws.assumeRole, [
              'promptGuard',
              phase,
              i,
              'bedrockGuardrails',
              'policies',
              'auth',
              'aws',
              'assumeRole',
            ]);
            if (r.invalid.length > 0) {
              out.invalid.push(...r.invalid);
              return undefined;
            }
            backendAuth = { aws: { assumeRole: r.assumeRole } };
          } else if (ref) {
            const id = refs.secretKey(`${bf}.policies.auth.aws.secretRef`, ref.name, 'accessKey');
            const secret = refs.secretKey(`${bf}.policies.auth.aws.secretRef`, ref.name, 'secretKey');
            const token = refs.secretKey(`${bf}.policies.auth.aws.secretRef`, ref.name, 'sessionToken', true);
            if (id === undefined || secret === undefined) return undefined;
            backendAuth = {
              aws: { accessKeyId: id, secretAccessKey: secret, ...(token ? { sessionToken: token } : {}) },
            };
          } else backendAuth = { aws: {} };
        } else if (auth) {
          const key = refs.key(`${bf}.policies.auth`, auth);
          if (key === undefined) return undefined;
          backendAuth = { key };
        }
        const backendTLS = serviceTls(bf, b.policies?.tls);
        const backendTunnel = serviceTunnel(bf, b.policies?.tunnel);
        if (backendTLS === null || backendTunnel === null) return undefined;
        const policies = {
          ...(backendAuth ? { backendAuth } : {}),
          ...backendTLS,
          ...backendTunnel,
          ...serviceConnection(b.policies),
        };
        entry.bedrockGuardrails = {
          guardrailIdentifier: b.identifier,
          guardrailVersion: b.version,
          region: b.region,
          ...(b.action === 'Audit' ? { action: 'Audit' } : {}),
          ...(Object.keys(policies).length > 0 ? { policies } : {}),
        };
      } else if (s.googleModelArmor) {
        const a = s.googleModelArmor;
        const backendTLS = serviceTls(`${at}.googleModelArmor`, a.policies?.tls);
        const backendTunnel = serviceTunnel(`${at}.googleModelArmor`, a.policies?.tunnel);
        if (backendTLS === null || backendTunnel === null) return undefined;
        // credentials: the proxy's Application Default Credentials (gcp: {} says the same)
        const gcp = a.policies?.auth?.gcp;
        if (gcp?.secretRef) out.unsupported.push(`${at}.googleModelArmor.policies.auth.gcp.secretRef`);
        if (gcp?.type === 'IdToken' || gcp?.audience !== undefined)
          out.unsupported.push(`${at}.googleModelArmor.policies.auth.gcp.type IdToken`);
        entry.googleModelArmor = {
          templateId: a.templateId,
          projectId: a.projectId,
          location: a.location,
          ...(backendTLS.backendTLS || backendTunnel.backendTunnel || a.policies?.tcp || a.policies?.http
            ? { policies: { ...backendTLS, ...backendTunnel, ...serviceConnection(a.policies) } }
            : {}),
        };
      } else if (s.webhook) {
        const w = s.webhook;
        const host = refs.service(`${at}.webhook.backendRef`, w.backendRef);
        if (host === undefined) return undefined;
        entry.webhook = {
          target: { host },
          ...(w.headers ? { headers: w.headers } : {}),
          ...(w.forwardHeaderMatches
            ? {
                forwardHeaderMatches: w.forwardHeaderMatches.map((h) => ({
                  name: h.name,
                  value: h.type === 'RegularExpression' ? { regex: h.value } : { exact: h.value },
                })),
              }
            : {}),
          ...(w.failureMode ? { failureMode: w.failureMode === 'FailOpen' ? 'failOpen' : 'failClosed' } : {}),
          ...(w.action === 'Audit' ? { action: 'audit' } : {}),
          ...(w.messageFormat === 'Raw' ? { messageFormat: 'raw' } : {}),
          ...(w.path !== undefined ? { path: w.path } : {}),
          ...(w.minSizeBytes !== undefined ? { minSizeBytes: w.minSizeBytes } : {}),
        };
      } else if ('promptInjection' in s && s.promptInjection) {
        const p = s.promptInjection;
        entry.promptInjection = {
          ...(p.threshold !== undefined ? { threshold: Number(p.threshold) } : {}),
          action: p.action === 'Audit' ? 'audit' : 'reject',
        };
      } else {
        const r = s.regex as NonNullable<GuardSpec['regex']>;
        entry.regex = { action: r.action.toLowerCase(), rules: regexRules(r, ['promptGuard', phase, i]) };
      }
      if (s.response) {
        entry.rejection = {
          ...(s.response.message !== undefined ? { body: s.response.message } : {}),
          ...(s.response.statusCode !== undefined ? { status: s.response.statusCode } : {}),
        };
      }
      const scopes = s.scope ?? s.contentScopes;
      if (scopes) {
        if (phase === 'request') entry.scope = scopes.map((c) => SCOPES[c]);
        else out.unsupported.push(`${at}.${s.scope ? 'scope' : 'contentScopes'}`);
      }
      return entry;
    };
    const promptGuard: Record<string, unknown> = {};
    if (g.streaming === 'Enabled') promptGuard.streaming = true;
    for (const phase of ['request', 'response'] as const) {
      const list = (g[phase] ?? []).map((s, i) => guard(s, phase, i)).filter((x) => x !== undefined);
      if (list.length > 0) promptGuard[phase] = list;
    }
    if (promptGuard.request || promptGuard.response) out.policy.promptGuard = promptGuard;
  }
  // `prompt` is agentgateway's name of the same block
  if (spec.promptEnrichment && spec.prompt)
    out.invalid.push({
      path: ['prompt'],
      message: "set promptEnrichment or prompt (agentgateway's name of it), not both",
    });
  const enrichment = spec.promptEnrichment ?? spec.prompt;
  if (enrichment) {
    const msg = (m: { role: string; content: string }) => ({
      role: m.role.toLowerCase(),
      content: m.content,
    });
    out.policy.prompts = {
      ...(enrichment.prepend ? { prepend: enrichment.prepend.map(msg) } : {}),
      ...(enrichment.append ? { append: enrichment.append.map(msg) } : {}),
    };
  }
  // a list of {field, value} in the CRD, a map of field → value in the standalone
  const fieldMap = (l: readonly { field: string; value?: unknown }[]) =>
    Object.fromEntries(l.map((f) => [f.field, f.value]));
  if (spec.defaults) out.policy.defaults = fieldMap(spec.defaults);
  if (spec.overrides) out.policy.overrides = fieldMap(spec.overrides);
  // {field, expression} lists in the CRD, maps of field → CEL in the standalone; an expression that
  // does not compile is named at its entry
  for (const k of ['transformations', 'finalTransformations'] as const) {
    const list = spec[k];
    if (!list) continue;
    list.forEach((f, i) => {
      out.invalid.push(...checkCel(f.expression, [k, i, 'expression']));
    });
    out.policy[k] = Object.fromEntries(list.map((f) => [f.field, f.expression]));
  }
  if (spec.modelAliases) {
    // the proxy's check: an alias names the model sent, not a pattern
    Object.entries(spec.modelAliases).forEach(([from, to]) => {
      if (to.includes('*'))
        out.invalid.push({
          path: ['modelAliases', from],
          message: `the model an alias sends is a name, not a pattern: ${JSON.stringify(to)}`,
        });
    });
    out.policy.modelAliases = { ...spec.modelAliases };
  }
  if (spec.promptCaching) out.policy.promptCaching = spec.promptCaching;
  if (spec.routes) {
    // Completions → completions, AnthropicTokenCount → anthropicTokenCount, …; a type the proxy does
    // not serve leaves the whole table out (its path would otherwise be read as another API)
    const table: Record<string, string> = {};
    let served = true;
    for (const [suffix, type] of Object.entries(spec.routes)) {
      const t = type.charAt(0).toLowerCase() + type.slice(1);
      if ((SERVED_AI_ROUTE_TYPES as readonly string[]).includes(t)) table[suffix] = t;
      else {
        out.unsupported.push(`${field}.routes[${JSON.stringify(suffix)}] ${type}`);
        served = false;
      }
    }
    if (served) out.policy.routes = table;
  }
  return out;
}

/** The Secret key a guard's API key is read from when its secretRef names none. */
const DEFAULT_KEY = 'Authorization';

/**
 * GuardRefs over a MapContext: what cannot be resolved is a problem at its field, and marks the
 * context fail-closed (the owner of the policy is then not used rather than left unguarded).
 */
export function guardRefs(ctx: MapContext): GuardRefs {
  const failed = <T>(v: T | undefined): T | undefined => {
    if (v === undefined) ctx.failClosed = true;
    return v;
  };
  return {
    service: (f, ref) => {
      const a = serviceAddress(ctx, f, {
        group: ref.group ?? '',
        kind: ref.kind ?? 'Service',
        name: ref.name,
        port: ref.port,
      });
      return failed(a?.resolved ? a.hostPort : undefined);
    },
    key: (f, auth) => {
      if (auth.key !== undefined) return auth.key;
      const ref = auth.secretRef;
      if (!ref || !isSecretRef(ctx, `${f}.secretRef`, ref)) return failed(undefined);
      const v = readKey(ctx, `${f}.secretRef`, 'Secret', ref.name, ref.key ?? DEFAULT_KEY)?.trim();
      return failed(v === '' ? undefined : v);
    },
    secretKey: (f, name, key, optional) => {
      const secret = ctx.lookup.get('Secret', ctx.namespace, name);
      if (optional && secret && secret.data?.[key] === undefined) return undefined;
      return failed(readKey(ctx, f, 'Secret', name, key)?.trim());
    },
    tls: (f, spec) => {
      const r = backendTls(ctx, f, spec);
      return failed(r.failClosed ? undefined : (r.policy as Record<string, unknown>));
    },
    tunnel: (f, spec) => {
      const out: BackendPolicies = {};
      const before = ctx.failClosed;
      tunnelMapper.map(spec, ctx, out, { field: f, path: [] });
      if (ctx.failClosed && !before) return undefined;
      return failed(out.backendTunnel as Record<string, unknown> | undefined);
    },
  };
}
