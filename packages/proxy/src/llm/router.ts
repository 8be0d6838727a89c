// Which model serves a request: the requested name against the virtual models and the public models
// (@gw/api's ModelNameMatcher: exact, then the longest `prefix*`, then `*`; a virtual model before a
// model of the same pattern), then among entries of one pattern by their header `matches`. Virtual models route to model entries by weight, by priority
// (failover to the next group on an error, a 429 or a 5xx) or by the first CEL condition that holds.

import { ModelNameMatcher } from '@gw/api/runtime';
import { type CelProgram, celTrue, compileCel } from '../cel/cel.ts';
import type { AiTarget, LlmModelIR, LlmRoutingIR, LlmTargetIR } from '../config/ir.ts';
import { GwError } from '../errors.ts';
import type { Handler } from '../pipeline/layer.ts';
import { compileMatch } from '../routing/match.ts';
import { type Choice, failover, weighted } from '../upstream/backends/select.ts';
import type { BackendEnv } from '../upstream/backends/types.ts';
import { type CompiledModel, compileModel } from './model.ts';

export interface CompiledAi {
  models: CompiledModel[];
  /** The handler serving a requested model name; undefined when nothing serves it. */
  route(name: string): Handler | undefined;
  /** Public model names, for /v1/models: models without wildcards, then virtual models. */
  listed: { id: string; ownedBy: string }[];
}

export function compileAi(t: AiTarget, env: BackendEnv, bufferLimit: number): CompiledAi {
  const models = t.models.map((m) => compileModel(m, env));
  const matcher = new ModelNameMatcher<Handler>();
  // A virtual model's target reaches every entry of its name, internal ones too; a client's request
  // reaches the public ones.
  const entries = byPattern(models);
  for (const v of t.virtualModels)
    matcher.add(
      v.name,
      compileRouting(
        v.routing,
        models,
        entries,
        bufferLimit,
        v.sessionAffinity === undefined ? undefined : compileCel(v.sessionAffinity),
      ),
    );
  for (const [pattern, handler] of byPattern(models.filter((m) => m.ir.visibility === 'public')))
    matcher.add(pattern, handler);
  matcher.freeze();
  const listed: CompiledAi['listed'] = [];
  const seen = new Set<string>();
  const list = (id: string, ownedBy: string) => {
    if (id.includes('*') || seen.has(id)) return;
    seen.add(id);
    listed.push({ id, ownedBy });
  };
  for (const m of models) if (m.ir.visibility === 'public') list(m.ir.name, m.ir.provider.name);
  for (const v of t.virtualModels) list(v.name, 'gw');
  return { models, route: (name) => matcher.match(name), listed };
}

/**
 * One handler per model name pattern, in config order. Entries sharing a pattern are told apart by
 * their `matches` (request headers): the first entry whose matches hold serves, else the first entry
 * of the pattern without any; when neither is there the model is unknown to this request.
 */
function byPattern(models: readonly CompiledModel[]): Map<string, Handler> {
  const groups = new Map<string, CompiledModel[]>();
  for (const m of models) {
    const g = groups.get(m.ir.name);
    if (g) g.push(m);
    else groups.set(m.ir.name, [m]);
  }
  const out = new Map<string, Handler>();
  for (const [pattern, group] of groups) {
    const fallback = group.find((m) => !m.ir.matches)?.call;
    const conditional = group.flatMap((m) =>
      m.ir.matches ? [{ tests: m.ir.matches.map(headerTest), call: m.call }] : [],
    );
    if (conditional.length === 0 && fallback) {
      out.set(pattern, fallback);
      continue;
    }
    out.set(pattern, (ctx) => {
      const input = { method: ctx.method, path: ctx.path, query: ctx.query, headers: ctx.headers };
      for (const c of conditional) if (c.tests.some((t) => t.test(input))) return c.call(ctx);
      if (fallback) return fallback(ctx);
      throw new GwError(
        'GW_ERR_LLM_UNKNOWN_MODEL',
        `no entry of model ${pattern} matches this request's headers`,
      );
    });
  }
  return out;
}

/** A model entry's header match, tested as a route match's headers are (routing/match.ts). */
function headerTest(m: NonNullable<LlmModelIR['matches']>[number]) {
  return compileMatch(undefined, m.headers ? { headers: m.headers } : {}, 0);
}

function compileRouting(
  r: LlmRoutingIR,
  models: CompiledModel[],
  entries: ReadonlyMap<string, Handler>,
  bufferLimit: number,
  affinity: CelProgram | undefined,
): Handler {
  const to = (t: LlmTargetIR): Handler => {
    const m = models[t.model];
    if (!m) throw new Error(`virtual model target ${t.model} is not a model`);
    // The target is its entry, unless entries of its name are told apart by headers: then they are.
    // (A route ai backend's providers, priority groups, are all `*` entries without matches.)
    const told = models.some((o) => o.ir.name === m.ir.name && o.ir.matches);
    const serve = (told && entries.get(m.ir.name)) || m.call;
    const as = t.as;
    return (ctx) => {
      const state = ctx.ext.llm;
      if (state) state.routedModel = as ?? state.requestModel;
      return serve(ctx);
    };
  };
  // a model with a health policy is passed by while ejected (select.ts's balancing set)
  const choice = (t: LlmTargetIR, i: number, weight: number): Choice => ({
    name: models[t.model]?.ir.entry ?? models[t.model]?.ir.name ?? String(i),
    weight,
    handler: to(t),
    health: models[t.model]?.health,
  });
  if ('weighted' in r)
    return weighted(
      r.weighted.map((t, i) => choice(t, i, t.weight)),
      affinity,
    );
  if ('failover' in r) {
    const byPriority = new Map<number, Choice[]>();
    r.failover.forEach((t, i) => {
      const group = byPriority.get(t.priority) ?? [];
      group.push(choice(t, i, 1));
      byPriority.set(t.priority, group);
    });
    const sorted = [...byPriority].sort((a, b) => a[0] - b[0]).map(([, g]) => g);
    return failover(
      sorted.map((g) => weighted(g, affinity)),
      {
        bufferLimit,
        // a priority group whose every model is ejected is passed by for the next
        available: sorted.map((g) => () => {
          const now = Date.now();
          return g.some((c) => c.health === undefined || c.health.available(now));
        }),
      },
    );
  }
  const targets = r.conditional.map((t) => ({
    when: t.when === undefined ? undefined : compileCel(t.when),
    handler: to(t),
  }));
  return (ctx) => {
    const cel = ctx.celContext();
    for (const t of targets) if (!t.when || celTrue(t.when, cel)) return t.handler(ctx);
    throw new GwError('GW_ERR_LLM_UNKNOWN_MODEL', 'no condition of the virtual model holds for this request');
  };
}
