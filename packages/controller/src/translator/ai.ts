// A GwBackend's `spec.ai` → the standalone route-level `ai` backend (agentgateway's LocalAIBackend):
// one named provider, or priority groups of them. Each provider's key comes from its `policies.auth`
// (inline or a Secret), else from the GwBackend's `spec.policies.auth`.
import type { AiNamedProvider, BackendPolicies } from '@gw/api';
import { type GwBackendSpec, PROVIDER_VARIANTS } from '@gw/api/crd/gwbackend';
import { guardRefs, translateAiPolicy } from './ai-policy.ts';
import { backendPolicy } from './policy/backend.ts';
import { defined, isSecretRef, MapContext, quote, readKey, serviceAddress } from './policy/context.ts';
import type { GwBackendPoliciesSpec } from './policy/spec.ts';
import { describeProblems } from './problems.ts';
import type { Lookup } from './types.ts';

export type AiSpec = NonNullable<GwBackendSpec['ai']>;
export type ProviderSpec = NonNullable<AiSpec['provider']>;
type AuthSpec = NonNullable<GwBackendPoliciesSpec['auth']>;

/**
 * The provider variants the proxy serves (its llm/providers registry; the controller may not import
 * the proxy). A variant missing here makes the GwBackend Unsupported, naming it.
 */
export const AI_PROVIDERS_SERVED: readonly (typeof PROVIDER_VARIANTS)[number][] = [
  'openai',
  'azureopenai',
  'azureOpenAI',
  'azure',
  'anthropic',
  'gemini',
  'vertexai',
  'vertexAI',
  'bedrock',
  'mistral',
  'custom',
] as const;

/** The CRD's custom formats as the standalone names them; a format without one is Unsupported. */
const CUSTOM_FORMATS: Record<string, string | undefined> = {
  Completions: 'completions',
  Messages: 'messages',
  Responses: 'responses',
  Embeddings: 'embeddings',
  AnthropicTokenCount: 'anthropicTokenCount',
  GenerateContent: 'generateContent',
  Realtime: undefined,
  Rerank: undefined,
};

/** The Secret key holding a provider's API key when secretRef names none. */
export const DEFAULT_API_KEY_KEY = 'Authorization';

export type AiResult =
  | { ok: true; ai: Record<string, unknown>; problems: string[] }
  /** `reason`: Unsupported (a variant or format this build lacks), InvalidReference (a Secret, a
   * Service), Invalid (what @gw/api's checks refused). */
  | { ok: false; reason: 'Unsupported' | 'InvalidReference' | 'Invalid'; message: string };

class Unsupported extends Error {}

export function translateAi(
  spec: AiSpec,
  backendName: string,
  namespace: string,
  lookup: Lookup,
  backendPolicies: GwBackendPoliciesSpec | undefined,
  /** How status messages name the single provider's field (a GwModel's is its spec). */
  providerField = 'spec.ai.provider',
  /** The kind being translated, for ReferenceGrants. */
  owner = 'GwBackend',
): AiResult {
  const ctx = new MapContext(namespace, lookup, owner);
  const problems: string[] = [];
  const invalid: string[] = [];
  /** Each provider's routes (translated) and the field they came from. */
  const routeTables: { field: string; routes: unknown }[] = [];
  const fallbackAuth = backendPolicies?.auth;
  const provider = (p: ProviderSpec, field: string): AiNamedProvider => {
    const out: Record<string, unknown> = { name: p.name ?? backendName };
    out.provider = variant(p, field);
    let tls: BackendPolicies['backendTLS'] | undefined;
    const azureOpenAI = p.azureopenai ?? p.azureOpenAI;
    if (azureOpenAI && !p.host && !azureResource(azureOpenAI.endpoint)) {
      // an endpoint that is not <resource>.openai.azure.com: reached by name, over TLS
      out.hostOverride = `${azureOpenAI.endpoint}:443`;
      tls = {};
    }
    if (p.custom?.backendRef) {
      const r = p.custom.backendRef;
      const a = serviceAddress(ctx, `${field}.custom.backendRef`, {
        group: r.group ?? '',
        kind: r.kind ?? 'Service',
        name: r.name,
        port: r.port,
      });
      if (!a?.resolved) ctx.failClosed = true;
      else {
        out.hostOverride = a.hostPort;
        if (a.https) tls = {};
      }
    }
    if (p.host !== undefined && p.port !== undefined) out.hostOverride = `${p.host}:${p.port}`;
    if (p.path !== undefined) out.pathOverride = p.path;
    if (p.pathPrefix !== undefined) out.pathPrefix = p.pathPrefix;
    const policies = providerPolicies(p.policies, field);
    if (tls && !policies.backendTLS) policies.backendTLS = tls;
    if (Object.keys(policies).length > 0) out.policies = policies;
    return out as AiNamedProvider;
  };

  const providerPolicies = (spec: ProviderSpec['policies'], field: string) => {
    // the GwBackend's own connection settings apply to each provider, the provider's win
    const { auth: _a, ai: sharedAi, ...shared } = backendPolicies ?? {};
    const { auth, ai: ownAi, ...own } = spec ?? {};
    const out: BackendPolicies & { ai?: Record<string, unknown> } = {};
    for (const [s, f] of [
      [shared, 'spec.policies'],
      [own, `${field}.policies`],
    ] as const) {
      if (Object.keys(s).length === 0) continue;
      const r = backendPolicy(s as GwBackendPoliciesSpec, namespace, lookup, f, f.split('.'), owner);
      if (r.invalid.length > 0) invalid.push(describeProblems(r.invalid));
      problems.push(...r.problems);
      if (r.failClosed) ctx.failClosed = true;
      Object.assign(out, r.policies);
    }
    // the provider's own ai policy replaces the GwBackend's, except for routes: which API a path is
    // holds for the whole backend, so a provider's own policy without routes keeps the GwBackend's
    const aiSpec =
      ownAi && !ownAi.routes && sharedAi?.routes
        ? { ...ownAi, routes: sharedAi.routes }
        : (ownAi ?? sharedAi);
    if (aiSpec) {
      const r = translateAiPolicy(
        aiSpec,
        ownAi ? `${field}.policies.ai` : 'spec.policies.ai',
        guardRefs(ctx),
      );
      const at = ownAi ? [...field.split('.'), 'policies', 'ai'] : ['spec', 'policies', 'ai'];
      if (r.invalid.length > 0)
        invalid.push(describeProblems(r.invalid.map((p) => ({ ...p, path: [...at, ...p.path] }))));
      for (const u of r.unsupported) ctx.unsupported(u);
      if (Object.keys(r.policy).length > 0) out.ai = r.policy;
    }
    routeTables.push({
      field: ownAi?.routes ? `${field}.policies.ai.routes` : 'spec.policies.ai.routes',
      routes: out.ai?.routes,
    });
    const authSpec = auth ?? fallbackAuth;
    const authAt = auth ? `${field}.policies` : 'spec.policies';
    // an auth block translated as a GwBackend's is, its Secrets read, its findings collected here
    const translatedAuth = (a: AuthSpec) => {
      const r = backendPolicy(
        { auth: a } as GwBackendPoliciesSpec,
        namespace,
        lookup,
        authAt,
        ['spec', authAt],
        owner,
      );
      if (r.invalid.length > 0) invalid.push(describeProblems(r.invalid));
      problems.push(...r.problems);
      if (r.failClosed) ctx.failClosed = true;
      return r.policies.backendAuth;
    };
    if (authSpec && !isKeyForm(authSpec)) {
      // a token or a signature (azure, gcp, aws, oauthTokenExchange, jwtSign): the proxy writes it
      // once the provider's request is ready
      const r = translatedAuth(authSpec);
      if (r) out.backendAuth = r as typeof out.backendAuth;
      return out;
    }
    const key = authSpec ? apiKey(authSpec, `${authAt}.auth`) : undefined;
    if (key !== undefined) out.backendAuth = { key };
    if (authSpec?.credentials) {
      // the extra credentials beside the provider's key: the gateway writes them
      const extra = translatedAuth({ credentials: authSpec.credentials });
      if (extra && typeof extra === 'object' && 'credentials' in extra)
        out.backendAuth = (
          key !== undefined ? { key, credentials: extra.credentials } : { credentials: extra.credentials }
        ) as typeof out.backendAuth;
    }
    return out;
  };

  /** The forms that are the provider's own key (or the client's): sent the provider's way. */
  const isKeyForm = (a: AuthSpec) =>
    a.key !== undefined || a.secretRef !== undefined || a.passthrough !== undefined;

  const apiKey = (auth: AuthSpec, field: string): string | undefined => {
    if (auth.key !== undefined) return auth.key;
    if (auth.secretRef) {
      const ref = auth.secretRef;
      if (!isSecretRef(ctx, `${field}.secretRef`, ref)) {
        ctx.failClosed = true;
        return undefined;
      }
      const v = readKey(ctx, `${field}.secretRef`, 'Secret', ref.name, ref.key ?? DEFAULT_API_KEY_KEY);
      if (v === undefined || v.trim() === '') {
        if (v !== undefined) ctx.problem(`${field}.secretRef`, `secret ${quote(ref.name)} key is empty`);
        // without its key the provider would be sent the client's credentials: not used at all
        ctx.failClosed = true;
        return undefined;
      }
      return v.trim();
    }
    // passthrough: the client's own credential goes on
    return undefined;
  };

  let ai: Record<string, unknown>;
  try {
    if (spec.groups) {
      ai = {
        groups: spec.groups.map((g, gi) => ({
          providers: g.providers.map((p, pi) => provider(p, `spec.ai.groups[${gi}].providers[${pi}]`)),
        })),
      };
    } else ai = provider(spec.provider as ProviderSpec, providerField) as Record<string, unknown>;
  } catch (err) {
    if (err instanceof Unsupported) return { ok: false, reason: 'Unsupported', message: err.message };
    throw err;
  }
  // the proxy reads which API a request is before it picks a provider: one table for all of them
  const tables = new Set(routeTables.map((t) => JSON.stringify(Object.entries(t.routes ?? {}).sort())));
  if (tables.size > 1) {
    const fields = [...new Set(routeTables.map((t) => t.field))];
    invalid.push(
      `${fields.join(', ')}: every provider of an ai backend has the same routes (a request's API is read before a provider is chosen)`,
    );
  }
  // the GwBackend's own policies are read once per provider: say each finding once
  const once = (l: string[]) => [...new Set(l)];
  if (invalid.length > 0) return { ok: false, reason: 'Invalid', message: once(invalid).join('; ') };
  const all = once([...problems, ...ctx.problems]);
  if (ctx.failClosed) return { ok: false, reason: 'InvalidReference', message: all.join('; ') };
  return { ok: true, ai, problems: all };
}

/** `<resource>.openai.azure.com` or `<resource>.services.ai.azure.com` → the resource and its type. */
function azureResource(endpoint: string): { name: string; type: 'openAI' | 'aiServices' } | undefined {
  const m = /^([a-z0-9-]+)\.(openai\.azure\.com|services\.ai\.azure\.com)$/i.exec(endpoint);
  if (!m) return undefined;
  return { name: m[1] as string, type: m[2]?.toLowerCase() === 'openai.azure.com' ? 'openAI' : 'aiServices' };
}

/** The provider variant in the standalone shape; throws Unsupported for one this build lacks. */
function variant(p: ProviderSpec, field: string): Record<string, unknown> {
  const kind = PROVIDER_VARIANTS.find((k) => p[k as keyof ProviderSpec] !== undefined);
  if (!kind || !AI_PROVIDERS_SERVED.includes(kind)) {
    throw new Unsupported(
      `${field}: the ${kind ?? 'unknown'} provider is not supported by this build of gw yet`,
    );
  }
  if (p.openai) {
    const m = p.openai.moderation;
    const mode = (r: { mode: 'Block' | 'Score' } | undefined) =>
      r ? { mode: r.mode === 'Block' ? 'block' : 'score' } : undefined;
    const moderation = m
      ? defined({
          model: m.model,
          policy: m.policy
            ? defined({ input: mode(m.policy.input), output: mode(m.policy.output) })
            : undefined,
        })
      : undefined;
    return { openAI: defined({ model: p.openai.model, moderation }) };
  }
  if (p.anthropic) return { anthropic: defined({ model: p.anthropic.model }) };
  if (p.gemini) return { gemini: defined({ model: p.gemini.model }) };
  if (p.mistral) return { mistral: defined({ model: p.mistral.model }) };
  const vertex = p.vertexai ?? p.vertexAI;
  if (vertex) {
    const v = vertex;
    return { vertex: defined({ model: v.model, projectId: v.projectId, region: v.region }) };
  }
  if (p.bedrock) {
    const b = p.bedrock;
    return {
      bedrock: defined({
        model: b.model,
        region: b.region ?? 'us-east-1',
        guardrailIdentifier: b.guardrail?.identifier,
        guardrailVersion: b.guardrail?.version,
      }),
    };
  }
  if (p.azure) {
    const a = p.azure;
    return {
      azure: defined({
        model: a.model,
        resourceName: a.resourceName,
        resourceType: a.resourceType === 'Foundry' ? 'foundry' : 'openAI',
        projectName: a.projectName,
        apiVersion: a.apiVersion,
      }),
    };
  }
  const azureOpenAI = p.azureopenai ?? p.azureOpenAI;
  if (azureOpenAI) {
    const a = azureOpenAI;
    const r = azureResource(a.endpoint) ?? { name: a.endpoint.split('.')[0] ?? a.endpoint, type: 'openAI' };
    return {
      azure: defined({
        model: a.deploymentName,
        resourceName: r.name,
        resourceType: r.type,
        apiVersion: a.apiVersion,
      }),
    };
  }
  const c = p.custom as NonNullable<ProviderSpec['custom']>;
  const formats = c.formats.map((f, i) => {
    const type = CUSTOM_FORMATS[f.type];
    if (!type) {
      throw new Unsupported(
        `${field}.custom.formats[${i}]: the ${f.type} format is not supported by this build of gw yet`,
      );
    }
    return f.path === undefined ? { type } : { type, path: f.path };
  });
  return {
    custom: defined({ model: c.model, providerOverride: c.providerOverride, formats }),
  };
}
