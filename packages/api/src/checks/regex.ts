// Regular expressions in route matches are JavaScript RegExps in the proxy; this is the same engine.
import type { FieldPath } from '../config/source.ts';
import type { Problem } from './problem.ts';

/** How the proxy compiles a guard's pattern: JavaScript syntax, every match found. */
export const GUARD_REGEX_FLAGS = 'g';

export function checkRegex(pattern: string, path: FieldPath): Problem[] {
  try {
    new RegExp(pattern);
    return [];
  } catch (err) {
    return [{ path, message: `invalid regular expression: ${(err as Error).message}` }];
  }
}
