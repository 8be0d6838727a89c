// CEL expressions compile in the environment the proxy evaluates them in (../cel/environment.ts).
import { type CelRuntime, celEnvironment, compileCelWith, withCustomFunctions } from '../cel/environment.ts';
import type { FieldPath } from '../config/source.ts';
import type { Problem } from './problem.ts';

// Declarations only: a check compiles and type-checks, it never evaluates.
class CidrStandIn {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}
const standIns: CelRuntime<CidrStandIn> = { Cidr: CidrStandIn, containsIP: () => false, random: () => 0 };
const base = celEnvironment(standIns);
/** The environment expressions are checked in: base, or base with the config's custom functions. */
let env = base;

/**
 * Runs `run` with config.customFunctions callable from every expression checked meanwhile; `run` is
 * handed the problems with the block itself (at `path`, naming the block's line).
 */
export function withCelFunctions<T>(
  block: string | undefined,
  path: FieldPath,
  run: (blockProblems: Problem[]) => T,
): T {
  if (block === undefined || block.trim() === '') return run([]);
  const custom = withCustomFunctions(base, block);
  const problems = custom.problems.map((p) => ({
    path,
    message: `line ${p.line} of the block: ${p.message}`,
  }));
  const outer = env;
  env = custom.env;
  try {
    return run(problems);
  } finally {
    env = outer;
  }
}

/** Whether `expr` compiles as a policy expression; the problem says why not. */
export function checkCel(expr: string, path: FieldPath): Problem[] {
  const r = compileCelWith(env, expr);
  return r.ok ? [] : [{ path, message: `invalid CEL expression: ${r.message}` }];
}

/** Every value of a name → expression map, each at `path.<name>`. */
export function checkCelMap(map: Record<string, string> | undefined, path: FieldPath): Problem[] {
  return Object.entries(map ?? {}).flatMap(([k, v]) => checkCel(v, [...path, k]));
}
