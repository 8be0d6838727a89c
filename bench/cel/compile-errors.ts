// Which configuration mistakes each CEL library rejects when a policy is compiled (config load) rather
// than at request time: the gateway compiles once per config, so a mistake caught here never reaches traffic.
import { CANDIDATES, type Candidate } from './candidates.ts';

export const MISTAKES = [
  { expr: 'requst.path == "/admin"', what: 'misspelled variable' },
  { expr: 'request.path.startWith("/admin")', what: 'misspelled function' },
  { expr: 'size(1) > 0', what: 'no overload for literal argument' },
  { expr: 'request.path == 1 + "a"', what: 'no overload for literal operands' },
  { expr: 'request.path.startsWith(1)', what: 'wrong argument type on a dyn receiver' },
  { expr: 'jwt.sub = "u1"', what: 'syntax error' },
] as const;

export interface CompileErrorResult {
  name: string;
  version: string;
  /** Per mistake: the compile error's first line, or null when it compiled. */
  rejected: Array<string | null>;
}

export function runCompileErrors(candidates: readonly Candidate[] = CANDIDATES): CompileErrorResult[] {
  return candidates.map((c) => ({
    name: c.name,
    version: c.version,
    rejected: MISTAKES.map(({ expr }) => {
      try {
        c.compilePolicy(expr);
        return null;
      } catch (err) {
        return (err instanceof Error ? err.message : String(err)).split('\n')[0] ?? 'error';
      }
    }),
  }));
}
