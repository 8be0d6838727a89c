// agentgateway's conditional form of a policy (LocalConditionalPolicies_*): `{conditional: [...]}`,
// each entry the policy's own fields plus a CEL `condition`. The first entry whose condition holds
// applies; an entry without one is the fallback (the last only); when none applies, neither does the
// policy. One definition for every policy that has the form (directResponse, localRateLimit,
// remoteRateLimit, extAuthz, extProc, transformations), and one check of its conditions.
import { z } from 'zod';
import { CELExpression } from '../crd/types.ts';

/** An entry's condition: CEL over the request; unset (or null) makes the entry the fallback. */
export const Condition = CELExpression.nullable().optional().meta({
  description:
    'CEL over the request; the first entry whose condition is true applies (unset: the fallback, last only)',
});

/** One entry of the conditional form as loaded: the policy's own form plus its condition. */
export type ConditionalEntry<T> = T & { condition?: string };
export interface Conditional<T> {
  conditional: ConditionalEntry<T>[];
}
/** A policy written plainly or in the conditional form. */
export type ExplicitOrConditional<T> = T | Conditional<T>;

export function isConditional<T>(p: ExplicitOrConditional<T>): p is Conditional<T> {
  return typeof p === 'object' && p !== null && !Array.isArray(p) && 'conditional' in p;
}

type Finish<S extends z.ZodObject, O> = (value: z.output<S>, ctx: z.core.$RefinementCtx<unknown>) => O;

/**
 * The entry of `base` (an object schema, its refinements kept) with `condition` beside its fields;
 * `finish` turns the policy's fields into what the loader hands on, as the plain form does.
 */
export function conditionalEntry<S extends z.ZodObject, O = z.output<S>>(base: S, finish?: Finish<S, O>) {
  return (base.safeExtend({ condition: Condition }) as unknown as z.ZodObject).transform(
    (entry, ctx): ConditionalEntry<O> => {
      const { condition, ...rest } = entry as { condition?: string | null };
      const out = (finish ? finish(rest as z.output<S>, ctx as never) : rest) as O;
      // a refused entry (finish reported an issue) is dropped with the whole parse
      return condition == null ? (out as ConditionalEntry<O>) : { ...out, condition };
    },
  );
}

/** `{conditional: [entries]}`. */
export function conditionalForm<E extends z.ZodType>(entry: E) {
  return z.strictObject({
    conditional: z.array(entry).meta({
      description:
        'entries tried in order: the first whose condition is true applies; an entry without condition is the fallback (last only); none true: the policy does not apply',
    }),
  });
}

/** A policy written plainly (`base`, then `finish`) or in the conditional form of the same fields. */
export function explicitOrConditional<S extends z.ZodObject, O = z.output<S>>(
  base: S,
  finish?: Finish<S, O>,
) {
  const plain = finish ? base.transform((v, ctx) => finish(v as z.output<S>, ctx as never)) : base;
  return z.union([conditionalForm(conditionalEntry(base, finish)), plain]) as unknown as z.ZodType<
    ExplicitOrConditional<O>,
    unknown
  >;
}
