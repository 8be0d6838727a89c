// Checks of prompt guards beyond their schema, for the standalone loader and the controller alike:
// every pattern compiles (as the proxy compiles it), and what a guard cannot do where it is set.
import type { AiPolicy, PromptGuard } from '../config/schema.ts';
import type { FieldPath } from '../config/source.ts';
import type { Problem } from './problem.ts';

/** How the proxy compiles a guard's pattern: JavaScript syntax, every match found. */
export const GUARD_REGEX_FLAGS = 'g';

export function checkGuardPattern(pattern: string, path: FieldPath): Problem[] {
  let re: RegExp;
  try {
    re = new RegExp(pattern, GUARD_REGEX_FLAGS);
  } catch (err) {
    return [{ path, message: `invalid regular expression: ${(err as Error).message}` }];
  }
  // A pattern matching the empty string would match everywhere (and mask nothing).
  if (re.test('')) return [{ path, message: 'the pattern matches the empty string' }];
  return [];
}

export function checkPromptGuard(g: PromptGuard, path: FieldPath): Problem[] {
  const out: Problem[] = [];
  for (const phase of ['request', 'response'] as const) {
    (g[phase] ?? []).forEach((guard, i) => {
      const rules = guard.regex?.rules ?? [];
      rules.forEach((r, ri) => {
        if ('pattern' in r)
          out.push(...checkGuardPattern(r.pattern, [...path, phase, i, 'regex', 'rules', ri, 'pattern']));
      });
    });
  }
  return out;
}

export function checkAiPolicy(p: AiPolicy, path: FieldPath): Problem[] {
  return p.promptGuard ? checkPromptGuard(p.promptGuard, [...path, 'promptGuard']) : [];
}
