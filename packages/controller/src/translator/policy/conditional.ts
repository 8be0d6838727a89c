// The conditional form of a traffic field (agentgateway's `conditional: [{condition, policy}]` on
// directResponse, extAuth, extProc, rateLimit, transformation) → the standalone's
// `{conditional: [{...policy, condition}]}` on each policy the field becomes. Every entry's policy goes
// through the mapper of the plain form, at `<field>.conditional[i].policy` (so its problems and checks
// name the entry); the conditions are checked by @gw/api's rule of the conditional form, the
// standalone loader's (CEL that compiles; only the last entry may go without one, the fallback).
//
// One field may become several standalone policies (rateLimit: localRateLimit and remoteRateLimit),
// each with a conditional form of its own, while agentgateway picks one entry for all of them. An entry
// that gives one but not the other (a rate limit entry with local only) must still keep the later
// entries of the other from applying when its condition holds: those later entries get
// `!(<its condition>) && ` in front of theirs. (Where that condition fails to evaluate, agentgateway
// goes on to the next entry; the negation fails too, so the later entry is skipped as well.)
import { checkExplicitOrConditional } from '@gw/api';
import { type At, addDenyAll, defined, type MapContext } from './context.ts';
import type { SectionMapper } from './section.ts';
import type { TrafficPolicies } from './spec.ts';

type Key = keyof TrafficPolicies;
type Plain<S> = Omit<S, 'conditional'>;
interface Entry<P> {
  condition?: string | undefined;
  policy: P;
}

export interface ConditionalOptions {
  /** The standalone policies the plain mapper writes, in the order the output lists them. */
  keys: readonly Key[];
  /**
   * An entry's value of `key` as that policy's conditional form takes it (default: as the plain form
   * wrote it); undefined leaves the entry out of that policy.
   */
  entryOf?: (key: Key, value: unknown, ctx: MapContext, at: At) => object | undefined;
}

/** The mapper of a traffic field written plainly (by `plain`) or in its conditional form. */
export function withConditional<S extends { conditional?: readonly Entry<Plain<S>>[] | undefined }>(
  plain: SectionMapper<Plain<S>, TrafficPolicies>,
  opts: ConditionalOptions,
): SectionMapper<S, TrafficPolicies> {
  return {
    map(spec, ctx, out, at) {
      const { conditional: entries, ...rest } = spec;
      if (entries === undefined) {
        plain.map(rest, ctx, out, at);
        return;
      }
      // the CRD's rule says so; an object that skipped it gets the entries only
      if (Object.values(rest).some((v) => v !== undefined))
        ctx.problem(at.field, 'conditional cannot be set with any other field: only conditional is used');
      ctx.check(
        checkExplicitOrConditional(
          { conditional: entries.map((e) => defined({ condition: e.condition })) },
          at.path,
          () => [],
        ),
      );
      const lists = new Map<Key, object[]>();
      // per policy: the conditions of the entries so far that gave none of it
      const skipped = new Map<Key, string[]>();
      let denyAll = false;
      entries.forEach((e, i) => {
        const eat: At = {
          field: `${at.field}.conditional[${i}].policy`,
          path: [...at.path, 'conditional', i, 'policy'],
        };
        const own: TrafficPolicies = {};
        plain.map(e.policy, ctx, own, eat);
        for (const key of opts.keys) {
          const v: unknown = own[key];
          const value = v == null ? undefined : opts.entryOf ? opts.entryOf(key, v, ctx, eat) : (v as object);
          const earlier = skipped.get(key) ?? [];
          if (value === undefined) {
            if (e.condition !== undefined) skipped.set(key, [...earlier, e.condition]);
            continue;
          }
          const condition = guarded(earlier, e.condition);
          const list = lists.get(key) ?? [];
          list.push(condition === undefined ? value : { ...value, condition });
          lists.set(key, list);
        }
        // The deny-all rule a plain mapper adds when it has nothing to call (an access-control policy
        // that cannot be made) cannot be made conditional: it applies to every request (fail closed).
        if (own.authorization !== undefined) denyAll = true;
      });
      if (denyAll) addDenyAll(out);
      const o = out as Record<string, unknown>;
      for (const key of opts.keys) {
        const list = lists.get(key);
        if (list) o[key] = { conditional: list };
      }
    },
  };
}

/** `condition`, applying only when none of `earlier` holds; undefined: always (the fallback). */
function guarded(earlier: readonly string[], condition: string | undefined): string | undefined {
  if (earlier.length === 0) return condition;
  const parts = earlier.map((c) => `!(${c})`);
  if (condition !== undefined) parts.push(`(${condition})`);
  return parts.join(' && ');
}
