// Regular expressions in route matches are JavaScript RegExps in the proxy; this is the same engine.
import type { FieldPath } from '../config/source.ts';
import type { Problem } from './problem.ts';

export function checkRegex(pattern: string, path: FieldPath): Problem[] {
  try {
    new RegExp(pattern);
    return [];
  } catch (err) {
    return [{ path, message: `invalid regular expression: ${(err as Error).message}` }];
  }
}
