// Checks of route matches (the standalone RouteMatch shape): regular expressions compile.
import type { RouteMatch } from '../config/schema.ts';
import type { FieldPath } from '../config/source.ts';
import type { Problem } from './problem.ts';
import { checkRegex } from './regex.ts';

export function checkRouteMatch(m: RouteMatch, path: FieldPath): Problem[] {
  const out: Problem[] = [];
  if (m.path && 'regex' in m.path) {
    out.push(
      ...checkRegex(Array.isArray(m.path.regex) ? m.path.regex[0] : m.path.regex, [...path, 'path', 'regex']),
    );
  }
  m.headers?.forEach((h, hi) => {
    if ('regex' in h.value)
      out.push(...checkRegex(h.value.regex, [...path, 'headers', hi, 'value', 'regex']));
  });
  m.query?.forEach((q, qi) => {
    if ('regex' in q.value) out.push(...checkRegex(q.value.regex, [...path, 'query', qi, 'value', 'regex']));
  });
  return out;
}
