// GwModels (behind the models flag) → the models each listener or HTTPRoute rule serves.
//
// A provider GwModel becomes one entry of a `llmModels` backend: its provider in the ai backend's
// shape (translated by ai.ts, so Secrets, connection policies and unsupported settings read as they
// do for an `ai` GwBackend), matched on `match.model`. A virtual GwModel becomes a virtual model whose
// targets name those entries. Where a model is served follows its parentRefs:
// - a Gateway or ListenerSet: every matching listener gets a route for the LLM API paths whose backend
//   is `models:<gateway>/<listener>`, holding the models attached there;
// - an HTTPRoute: the rule (by sectionName, or the only rule) whose one backendRef is GwModel `*` uses
//   the backend `models:<namespace>/httproute/<route>/<rule index>` (routes.ts points the rule at it).
// A virtual model brings the models it routes to along, as internal ones when not attached there.
import { checkCel } from '@gw/api/checks/cel';
import { checkAuthorization } from '@gw/api/checks/traffic';
import { validateResource } from '@gw/api/crd/crds';
import type { GwModelSpec } from '@gw/api/crd/gwmodel';
import { formatError } from '@gw/api/crd/validate';
import { LLM_API_PATH_PREFIXES, LLM_API_PATH_REGEXES, LLM_API_PATHS } from '@gw/api/llm/api-paths';
import { LLM_PRESET_BY_CRD_NAME, type LlmPreset, llmPreset } from '@gw/api/llm/presets';
import { type ProviderSpec, translateAi } from './ai.ts';
import { bad, ok } from './conditions.ts';
import { GATEWAY_GROUP, type GatewayInfo, type ListenerInfo } from './gateways.ts';
import { defined } from './policy/context.ts';
import { describeProblems } from './problems.ts';
import { type RouteResult, routeModelsBackend } from './routes.ts';
import {
  type Condition,
  GW_GROUP,
  type KubeObject,
  type Lookup,
  type NamedResource,
  olderFirst,
  type StatusUpdate,
} from './types.ts';

const listenerModelsBackend = (l: ListenerInfo) => `models:${l.gateway}/${l.name}`;
/** The route name of the LLM API route on a listener: not a Kubernetes name, so no HTTPRoute has it. */
const LISTENER_ROUTE = 'gw:models';

type ModelSpec = GwModelSpec;
type VirtualSpec = NonNullable<ModelSpec['virtualModel']>;
type TargetSpec = {
  modelRef: { name: string };
  model?: string | undefined;
  weight?: number;
  when?: string;
  priority?: number;
};

interface ModelInfo {
  object: KubeObject;
  key: string;
  spec?: ModelSpec;
  /** A provider model's entry of a `llmModels` backend. */
  entry?: Record<string, unknown>;
  /** A virtual model's entry, with its targets as model keys. */
  virtual?: { routing: Record<string, Record<string, unknown>[]>; targets: string[] };
  /** Why it is not served at all (Accepted False on every parent). */
  problem?: Condition;
  /** Said in the Accepted message of a served model. */
  notes: string[];
}

interface ParentRefSpec {
  group?: string;
  kind?: string;
  namespace?: string;
  name: string;
  sectionName?: string;
  port?: number;
}

interface RuleSpec {
  name?: string;
  matches?: { path?: { type?: string } }[];
  backendRefs?: { group?: string; kind?: string; name: string }[];
}

export interface ModelsResult {
  statuses: StatusUpdate[];
  /** Gateway key → its model routes and `llmModels` backends. */
  resources: Map<string, NamedResource[]>;
}

export interface ModelsContext {
  lookup: Lookup;
  controllerName: string;
}

export function translateModels(
  objects: KubeObject[],
  gateways: GatewayInfo[],
  routes: RouteResult,
  ctx: ModelsContext,
): ModelsResult {
  const models = new Map<string, ModelInfo>();
  const sorted = objects.filter((o) => o.kind === 'GwModel').sort(olderFirst);
  for (const o of sorted) models.set(keyOf(o), readModel(o, ctx.lookup));
  for (const m of models.values()) if (m.spec?.virtualModel) resolveVirtual(m, models);

  // where each usable model is served: a listener or an HTTPRoute rule → model keys in age order
  const served = new Map<string, { listener?: ListenerInfo; keys: Set<string> }>();
  const serve = (backend: string, key: string, listener?: ListenerInfo) => {
    const s = served.get(backend) ?? { ...(listener ? { listener } : {}), keys: new Set<string>() };
    served.set(backend, s);
    s.keys.add(key);
  };
  const statuses: StatusUpdate[] = [];
  for (const m of models.values()) {
    const ns = m.object.metadata.namespace ?? 'default';
    const gen = m.object.metadata.generation;
    const refs = ((m.spec ?? (m.object.spec as ModelSpec | undefined))?.parentRefs ?? []) as ParentRefSpec[];
    const parents: Record<string, unknown>[] = [];
    for (const ref of refs.slice(0, 16)) {
      const parentRef = {
        group: ref.group ?? GATEWAY_GROUP,
        kind: ref.kind ?? 'Gateway',
        namespace: ref.namespace ?? ns,
        name: ref.name,
        ...(ref.sectionName ? { sectionName: ref.sectionName } : {}),
        ...(ref.port ? { port: ref.port } : {}),
      };
      const attach = m.problem ? undefined : attachment(parentRef, gateways, routes, ctx.lookup);
      if (attach === null) continue; // a parent that is not ours: another controller writes that status
      let condition: Condition;
      if (m.problem) condition = m.problem;
      else if (!attach || 'problem' in attach) {
        const p = attach?.problem ?? { reason: 'NoMatchingParent' as const, message: 'no such parent' };
        condition = bad('Accepted', p.reason, p.message, gen);
      } else {
        for (const b of attach.backends) serve(b.name, m.key, b.listener);
        const where = `served on ${attach.backends.map((b) => b.where).join(', ')}`;
        condition = ok('Accepted', 'Accepted', [where, ...m.notes].join('; '), gen);
      }
      parents.push({ parentRef, controllerName: ctx.controllerName, conditions: [condition] });
    }
    if (parents.length > 0)
      statuses.push({ kind: 'GwModel', namespace: ns, name: m.object.metadata.name, status: { parents } });
  }

  const resources = new Map<string, NamedResource[]>();
  const add = (gateway: string, r: NamedResource) => {
    const list = resources.get(gateway);
    if (list) list.push(r);
    else resources.set(gateway, [r]);
  };
  for (const [name, s] of served) {
    if (!s.listener) continue;
    const l = s.listener;
    add(l.gateway, {
      name: `route/${l.port}/${l.name}/${l.owner.namespace}/${LISTENER_ROUTE}/0`,
      resource: {
        route: {
          port: l.port,
          listener: `${l.gateway}/${l.name}`,
          namespace: l.owner.namespace,
          name: LISTENER_ROUTE,
          ...(l.hostname ? { hostnames: [l.hostname] } : {}),
          matches: [
            ...LLM_API_PATHS.map((p) => ({ path: { exact: p } })),
            ...LLM_API_PATH_PREFIXES.map((p) => ({ path: { pathPrefix: p } })),
            ...Object.values(LLM_API_PATH_REGEXES).map((r) => ({ path: { regex: r } })),
          ],
          backends: [{ weight: 1, backend: name }],
        },
      },
    });
    add(l.gateway, backendResource(name, s.keys, models));
  }
  // an HTTPRoute rule pointing at GwModel `*` gets its backend on every Gateway it is attached to,
  // even with no model attached yet (then every request is an unknown model, in the client's format)
  const emitted = new Set<string>();
  for (const r of routes.rules) {
    for (const name of r.modelBackends) {
      if (emitted.has(`${r.gateway}\0${name}`)) continue;
      emitted.add(`${r.gateway}\0${name}`);
      add(r.gateway, backendResource(name, served.get(name)?.keys ?? new Set(), models));
    }
  }
  return { statuses, resources };
}

const keyOf = (o: KubeObject) => `${o.metadata.namespace ?? 'default'}/${o.metadata.name}`;

/** Validates a GwModel and, for a provider model, translates its provider. */
function readModel(o: KubeObject, lookup: Lookup): ModelInfo {
  const ns = o.metadata.namespace ?? 'default';
  const gen = o.metadata.generation;
  const info: ModelInfo = { object: o, key: keyOf(o), notes: [] };
  const v = validateResource(o);
  if (!v.ok) {
    info.problem = bad('Accepted', 'Invalid', v.errors.map(formatError).join('; '), gen);
    return info;
  }
  const spec = v.spec as ModelSpec;
  info.spec = spec;
  const match = spec.match.model;
  if (match.slice(0, -1).includes('*')) {
    info.problem = bad(
      'Accepted',
      'Unsupported',
      `spec.match.model: ${match}: this gw build matches exact names, prefix* and * only`,
      gen,
    );
    return info;
  }
  if (spec.virtualModel) return info;
  const authorization = spec.policies?.authorization;
  // checked here, at the GwModel's own fields: the transformations move into the ai policy below
  const policyProblems = [
    ...(authorization ? checkAuthorization(authorization, ['spec', 'policies', 'authorization']) : []),
    ...(['transformations', 'finalTransformations'] as const).flatMap((k) =>
      (spec.policies?.[k] ?? []).flatMap((f, i) =>
        checkCel(f.expression, ['spec', 'policies', k, i, 'expression']),
      ),
    ),
  ];
  if (policyProblems.length > 0) {
    info.problem = bad('Accepted', 'Invalid', describeProblems(policyProblems), gen);
    return info;
  }
  const provider = providerSpec(spec, info.notes);
  const r = translateAi({ provider }, info.key, ns, lookup, undefined, 'spec', 'GwModel');
  if (!r.ok) {
    info.problem = bad('Accepted', r.reason, r.message, gen);
    return info;
  }
  info.notes.push(...r.problems);
  const entry: Record<string, unknown> = { ...r.ai, match };
  if (authorization) entry.authorization = authorization;
  // {name, value} lists in the CRD, maps of name → value in the standalone
  const headers = spec.policies?.headers;
  const modifier = (m: NonNullable<NonNullable<typeof headers>['request']>) => ({
    ...(m.set ? { set: Object.fromEntries(m.set.map((h) => [h.name, h.value])) } : {}),
    ...(m.add ? { add: Object.fromEntries(m.add.map((h) => [h.name, h.value])) } : {}),
    ...(m.remove ? { remove: m.remove } : {}),
  });
  if (headers?.request) entry.requestHeaders = modifier(headers.request);
  if (headers?.response) entry.responseHeaders = modifier(headers.response);
  if (spec.visibility === 'Internal') entry.visibility = 'internal';
  const preset = presetOf(spec.provider);
  if (spec.baseURL) applyBaseUrl(entry, spec.baseURL);
  else if (preset) {
    applyBaseUrl(entry, `${preset.tls ? 'https' : 'http'}://${preset.host}:${preset.port}`);
    entry.pathPrefix = preset.pathPrefix;
  }
  info.entry = entry;
  return info;
}

/** A GwModel's provider as a GwBackend's LLMProvider, so ai.ts translates both alike. */
function providerSpec(spec: ModelSpec, notes: string[]): ProviderSpec {
  // agentgateway's policies.promptGuard is gw's policies.ai.promptGuard
  // and its transformations and finalTransformations are the ai policy's
  const {
    promptGuard,
    authorization: _a,
    headers: _h,
    transformations,
    finalTransformations,
    ...rest
  } = spec.policies ?? {};
  const moved = {
    ...(promptGuard ? { promptGuard } : {}),
    ...(transformations ? { transformations } : {}),
    ...(finalTransformations ? { finalTransformations } : {}),
  };
  const own = Object.keys(moved).length > 0 ? { ...rest, ai: { ...rest.ai, ...moved } } : rest;
  const policies = spec.policies ? { policies: own } : {};
  switch (spec.provider) {
    case 'Azure': {
      const a = spec.azure as NonNullable<ModelSpec['azure']>;
      return {
        azure: defined({
          resourceName: a.resourceName,
          resourceType: a.resourceType,
          projectName: a.projectName,
          apiVersion: a.apiVersion,
        }),
        ...policies,
      } as ProviderSpec;
    }
    case 'AzureOpenAI': {
      const a = spec.azure;
      const endpoint = a?.endpoint ?? new URL(spec.baseURL as string).hostname;
      return {
        azureOpenAI: defined({ endpoint, deploymentName: a?.deploymentName, apiVersion: a?.apiVersion }),
        ...policies,
      } as ProviderSpec;
    }
    case 'VertexAI': {
      const v = spec.vertexai as NonNullable<ModelSpec['vertexai']>;
      if (v.publisher)
        notes.push('spec.vertexai.publisher is not used: the publisher follows from the model name');
      return { vertexAI: { projectId: v.projectId, region: v.region }, ...policies } as ProviderSpec;
    }
    case 'Bedrock':
      return { bedrock: spec.bedrock ?? { region: 'us-east-1' }, ...policies } as ProviderSpec;
    case 'Custom':
      return { custom: spec.custom, ...policies } as ProviderSpec;
    case 'Anthropic':
      return { anthropic: {}, ...policies } as ProviderSpec;
    case 'Gemini':
      return { gemini: {}, ...policies } as ProviderSpec;
    case 'Mistral':
      return { mistral: {}, ...policies } as ProviderSpec;
    case 'OpenAI':
    case undefined:
      break;
    default: {
      // a named OpenAI-compatible provider: a custom one with its formats (its address: modelEntry)
      const name = LLM_PRESET_BY_CRD_NAME[spec.provider] as string;
      const formats = (presetOf(spec.provider) as LlmPreset).formats.map((f) => ({
        type: `${f.type[0]?.toUpperCase()}${f.type.slice(1)}`,
        ...(f.path !== undefined ? { path: f.path } : {}),
      }));
      return { custom: { providerOverride: name, formats }, ...policies } as ProviderSpec;
    }
  }
  return { openai: {}, ...policies } as ProviderSpec;
}

/** The named provider a GwModel's provider is, if it is one. */
const presetOf = (provider: string | undefined): LlmPreset | undefined =>
  provider === undefined ? undefined : llmPreset(LLM_PRESET_BY_CRD_NAME[provider]);

/** baseURL: the provider is reached at its host and port (TLS for https), under its path. */
function applyBaseUrl(entry: Record<string, unknown>, baseURL: string): void {
  const u = new URL(baseURL);
  const https = u.protocol === 'https:';
  entry.hostOverride = `${u.hostname}:${u.port || (https ? 443 : 80)}`;
  const prefix = u.pathname.replace(/\/+$/, '');
  if (prefix) entry.pathPrefix = prefix;
  const policies = { ...((entry.policies as Record<string, unknown> | undefined) ?? {}) };
  if (https && !policies.backendTLS) policies.backendTLS = {};
  if (!https) delete policies.backendTLS;
  if (Object.keys(policies).length > 0) entry.policies = policies;
  else delete entry.policies;
}

/** A virtual model's targets: provider models of its namespace, each usable and asked a model name. */
function resolveVirtual(m: ModelInfo, models: Map<string, ModelInfo>): void {
  const spec = m.spec as ModelSpec;
  const ns = m.object.metadata.namespace ?? 'default';
  const gen = m.object.metadata.generation;
  const vm = spec.virtualModel as VirtualSpec;
  const kind = vm.weighted ? 'weighted' : vm.failover ? 'failover' : 'conditional';
  const listed = (vm[kind] as { targets: TargetSpec[] }).targets.map((t, i) => ({ t, i }));
  // failover: lower priority first, then as listed (a target without one after those with one)
  const targets =
    kind === 'failover'
      ? listed.sort((a, b) => (a.t.priority ?? Infinity) - (b.t.priority ?? Infinity) || a.i - b.i)
      : listed;
  const invalid: string[] = [];
  const unresolved: string[] = [];
  const out: Record<string, unknown>[] = [];
  const keys: string[] = [];
  for (const { t, i } of targets) {
    const field = `spec.virtualModel.${kind}.targets[${i}]`;
    const target = models.get(`${ns}/${t.modelRef.name}`);
    if (!target) {
      unresolved.push(`${field}.modelRef: GwModel ${ns}/${t.modelRef.name} not found`);
      continue;
    }
    if (target.spec?.virtualModel) {
      invalid.push(
        `${field}.modelRef: ${t.modelRef.name} is a virtual model; targets must name provider models`,
      );
      continue;
    }
    if (!target.entry) {
      const why = target.problem?.message ?? 'invalid';
      unresolved.push(`${field}.modelRef: GwModel ${target.key} is not usable: ${why}`);
      continue;
    }
    const match = target.spec?.match.model as string;
    const as = t.model ?? (match.endsWith('*') ? undefined : match);
    if (as === undefined) {
      invalid.push(`${field}.model: required, because GwModel ${t.modelRef.name} matches ${match}`);
      continue;
    }
    const celProblems =
      t.when === undefined ? [] : checkCel(t.when, ['spec', 'virtualModel', kind, 'targets', i, 'when']);
    if (celProblems.length > 0) {
      invalid.push(describeProblems(celProblems));
      continue;
    }
    const entry: Record<string, unknown> = { model: target.key, as };
    if (kind === 'weighted') entry.weight = t.weight ?? 1;
    if (t.when !== undefined) entry.when = t.when;
    out.push(entry);
    keys.push(target.key);
  }
  if (invalid.length > 0) m.problem = bad('Accepted', 'Invalid', invalid.join('; '), gen);
  else if (unresolved.length > 0) m.problem = bad('Accepted', 'InvalidReference', unresolved.join('; '), gen);
  else m.virtual = { routing: { [kind]: out }, targets: keys };
}

type Attachment =
  | { backends: { name: string; listener?: ListenerInfo; where: string }[] }
  | { problem: { reason: 'NoMatchingParent' | 'Invalid'; message: string } };

/**
 * Where a parentRef serves the model: null when the parent is not one of ours (not our Gateway, or
 * an HTTPRoute attached to none of them).
 */
function attachment(
  ref: Required<Pick<ParentRefSpec, 'group' | 'kind' | 'namespace' | 'name'>> & ParentRefSpec,
  gateways: GatewayInfo[],
  routes: RouteResult,
  lookup: Lookup,
): Attachment | null {
  if (ref.group !== GATEWAY_GROUP) return null;
  if (ref.kind === 'HTTPRoute') return routeAttachment(ref, routes, lookup);
  let candidates: ListenerInfo[] | undefined;
  for (const g of gateways) {
    if (ref.kind === 'Gateway' && g.key === `${ref.namespace}/${ref.name}`) candidates = g.listeners;
    if (ref.kind === 'ListenerSet') {
      const set = g.listenerSets.find(
        (s) =>
          s.object.metadata.name === ref.name && (s.object.metadata.namespace ?? 'default') === ref.namespace,
      );
      if (set) candidates = set.listeners;
    }
  }
  if (!candidates) return null;
  const named = candidates.filter(
    (l) => (!ref.sectionName || l.name === ref.sectionName) && (!ref.port || l.port === ref.port),
  );
  const ready = named.filter((l) => l.ready);
  if (named.length === 0) {
    const which = [ref.sectionName && `sectionName ${ref.sectionName}`, ref.port && `port ${ref.port}`];
    return {
      problem: {
        reason: 'NoMatchingParent',
        message: `no listener matches ${which.filter(Boolean).join(' and ')}`,
      },
    };
  }
  if (ready.length === 0)
    return { problem: { reason: 'NoMatchingParent', message: 'the matching listeners are not programmed' } };
  return {
    backends: ready.map((l) => ({
      name: listenerModelsBackend(l),
      listener: l,
      where: `listener ${l.name} of ${l.gateway}`,
    })),
  };
}

/** An HTTPRoute parent: the rule it names (or the only one) must route to GwModel `*` alone. */
function routeAttachment(
  ref: ParentRefSpec & { namespace: string },
  routes: RouteResult,
  lookup: Lookup,
): Attachment | null {
  const route = lookup.get('HTTPRoute', ref.namespace, ref.name);
  if (!route || !routes.rules.some((r) => r.route === route)) return null;
  const rules = ((route.spec as { rules?: RuleSpec[] })?.rules ?? []) as RuleSpec[];
  let ri: number;
  if (ref.sectionName) {
    ri = rules.findIndex((r) => r.name === ref.sectionName);
    if (ri < 0)
      return {
        problem: {
          reason: 'NoMatchingParent',
          message: `HTTPRoute ${ref.name} has no rule named ${ref.sectionName}`,
        },
      };
  } else if (rules.length !== 1) {
    return {
      problem: {
        reason: 'Invalid',
        message: `HTTPRoute ${ref.name} has ${rules.length} rules: set sectionName to the rule's name`,
      },
    };
  } else ri = 0;
  const rule = rules[ri] as RuleSpec;
  const modelRefs = (rule.backendRefs ?? []).filter((b) => b.group === GW_GROUP && b.kind === 'GwModel');
  const where = `HTTPRoute ${ref.namespace}/${ref.name} rule ${rule.name ?? ri}`;
  if ((rule.backendRefs ?? []).length !== 1 || modelRefs.length !== 1 || modelRefs[0]?.name !== '*') {
    return {
      problem: {
        reason: 'Invalid',
        message: `${where} must have exactly one backendRef: group gw.dev, kind GwModel, name *`,
      },
    };
  }
  if ((rule.matches ?? []).some((m) => m.path && (m.path.type ?? 'PathPrefix') !== 'PathPrefix')) {
    return { problem: { reason: 'Invalid', message: `${where}: path matches must use PathPrefix` } };
  }
  return { backends: [{ name: routeModelsBackend(ref.namespace, ref.name, ri), where }] };
}

/** The `llmModels` backend: the models served there, then the models their virtual models route to. */
function backendResource(name: string, keys: Set<string>, models: Map<string, ModelInfo>): NamedResource {
  const direct = [...keys].map((k) => models.get(k) as ModelInfo);
  const entries: Record<string, unknown>[] = [];
  const virtualModels: Record<string, unknown>[] = [];
  const included = new Set<string>();
  for (const m of direct) {
    if (m.entry) {
      entries.push(m.entry);
      included.add(m.key);
    }
  }
  for (const m of direct) {
    if (!m.virtual) continue;
    virtualModels.push({ name: m.key, match: m.spec?.match.model, routing: m.virtual.routing });
    for (const t of m.virtual.targets) {
      if (included.has(t)) continue;
      included.add(t);
      // reachable only through the virtual model here
      entries.push({ ...(models.get(t)?.entry as Record<string, unknown>), visibility: 'internal' });
    }
  }
  return {
    name: `backend/${name}`,
    resource: {
      backend: {
        name,
        llmModels: { models: entries, ...(virtualModels.length > 0 ? { virtualModels } : {}) },
      },
    },
  };
}
