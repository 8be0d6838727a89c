// Checks of a policy's conditional form (agentgateway's `{conditional: [...]}`), for every policy that
// has one: each condition compiles, only the last entry goes without one, and each entry passes the
// checks of the plain form at its own path (`<policy>.conditional[1].…`).
import { type ExplicitOrConditional, isConditional } from '../config/conditional.ts';
import type { FieldPath } from '../config/source.ts';
import { checkCel } from './cel.ts';
import type { Problem } from './problem.ts';

export function checkExplicitOrConditional<T, E = T>(
  p: T | { conditional: (E & { condition?: string })[] },
  path: FieldPath,
  check: (entry: E, path: FieldPath) => Problem[],
): Problem[] {
  if (!isConditional(p as ExplicitOrConditional<E>)) return check(p as unknown as E, path);
  const entries = (p as { conditional: (E & { condition?: string })[] }).conditional;
  const last = entries.length - 1;
  return entries.flatMap((c, i) => {
    const at = [...path, 'conditional', i];
    const out: Problem[] = [];
    if (c.condition !== undefined) out.push(...checkCel(c.condition, [...at, 'condition']));
    else if (i !== last)
      out.push({ path: at, message: 'only the last entry may leave out condition (it is the fallback)' });
    out.push(...check(c, at));
    return out;
  });
}
