// Does `matches()` run in linear time? A policy regex meets client-controlled input (headers, paths), so
// a backtracking engine turns one bad pattern into a CPU denial of service. Bounded probe: input sizes stay
// small enough that even exponential time ends within about 0.1 s.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { CANDIDATES, type Candidate } from './candidates.ts';

export const REDOS_EXPR = 'request.headers["x-user"].matches("^(a+)+$")';
export const REDOS_SIZES = [16, 20, 24] as const;

export interface RegexSafetyResult {
  name: string;
  version: string;
  /** Milliseconds for one evaluation per input size ('a' × n + '!'), or the reason it could not run. */
  ms: number[] | null;
  reason?: string;
}

export function runRegexSafety(candidates: readonly Candidate[] = CANDIDATES): RegexSafetyResult[] {
  return candidates.map((c) => {
    try {
      const fn = c.compilePolicy(REDOS_EXPR);
      fn({ request: { headers: { 'x-user': 'aaaa!' } } }); // warm-up: first-call costs are not the point
      const ms = REDOS_SIZES.map((n) => {
        const ctx = { request: { headers: { 'x-user': `${'a'.repeat(n)}!` } } };
        const t0 = process.hrtime.bigint();
        const got = fn(ctx);
        const elapsed = Number(process.hrtime.bigint() - t0) / 1e6;
        if (got !== false) throw new Error(`returned ${String(got)} instead of false`);
        return elapsed;
      });
      return { name: c.name, version: c.version, ms };
    } catch (err) {
      const reason = (err instanceof Error ? err.message : String(err)).split('\n')[0] ?? '';
      return { name: c.name, version: c.version, ms: null, reason };
    }
  });
}

/** The same probe in a child Node with V8's linear-time fallback for runaway backtracking switched on. */
export function runRegexSafetyWithLinearFallback(): RegexSafetyResult[] {
  const out = execFileSync(
    process.execPath,
    [LINEAR_FALLBACK_FLAG, '--disable-warning=ExperimentalWarning', fileURLToPath(import.meta.url)],
    { encoding: 'utf8', timeout: 60_000 },
  );
  return JSON.parse(out) as RegexSafetyResult[];
}

export const LINEAR_FALLBACK_FLAG = '--enable-experimental-regexp-engine-on-excessive-backtracks';

if (import.meta.main) console.log(JSON.stringify(runRegexSafety()));
