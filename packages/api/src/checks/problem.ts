// What a check returns: where the problem is (a field path in the shape that was checked, under the
// caller's prefix) and what is wrong, in words a user can act on. Checks never throw.
import type { FieldPath } from '../config/source.ts';

export interface Problem {
  path: FieldPath;
  message: string;
}
