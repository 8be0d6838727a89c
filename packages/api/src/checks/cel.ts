// CEL expressions compile in the environment the proxy evaluates them in (../cel/environment.ts).
import type { ASTNode } from '@marcbachmann/cel-js';
import { customFunctionsOf, nodes } from '../cel/custom-functions.ts';
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

/** Variables the expressions checked meanwhile have no value for, and why (withUnavailable). */
let unavailable:
  | { names: ReadonlySet<string>; why: string; applies: (path: FieldPath) => boolean }
  | undefined;

/**
 * Runs `run` with `names` refused in every expression checked meanwhile whose path `applies` takes
 * (directly or through a custom function's body), the problem saying `why`: the gateway phase runs
 * before a route is chosen, so `route.*` there would never have a value.
 */
export function withUnavailable<T>(
  names: readonly string[],
  why: string,
  applies: (path: FieldPath) => boolean,
  run: () => T,
): T {
  const outer = unavailable;
  unavailable = { names: new Set(names), why, applies };
  try {
    return run();
  } finally {
    unavailable = outer;
  }
}

/** Whether `expr` compiles as a policy expression; the problem says why not. */
export function checkCel(expr: string, path: FieldPath): Problem[] {
  const r = compileCelWith(env, expr);
  if (!r.ok) return [{ path, message: `invalid CEL expression: ${r.message}` }];
  if (unavailable?.applies(path)) {
    const name = firstVariable(r.evaluate.ast as ASTNode, unavailable.names);
    if (name !== undefined) return [{ path, message: `${name} has no value here: ${unavailable.why}` }];
  }
  return [];
}

/** The first of `names` the expression reads, itself or in the body of a custom function it calls. */
function firstVariable(ast: ASTNode, names: ReadonlySet<string>): string | undefined {
  const bodies = customFunctionsOf(env)?.bodies;
  const pending: ASTNode[] = [ast];
  const seen = new Set<string>();
  for (let next = pending.pop(); next !== undefined; next = pending.pop())
    for (const n of nodes(next)) {
      if (n.op === 'id' && names.has(n.args as string)) return n.args as string;
      // a custom function's body reads for its callers
      const fn = n.op === 'call' || n.op === 'rcall' ? ((n.args as unknown[])[0] as string) : undefined;
      const body = fn === undefined ? undefined : bodies?.get(fn);
      if (fn !== undefined && body !== undefined && !seen.has(fn)) {
        seen.add(fn);
        pending.push(body);
      }
    }
  return undefined;
}

/** Every value of a name → expression map, each at `path.<name>`. */
export function checkCelMap(map: Record<string, string> | undefined, path: FieldPath): Problem[] {
  return Object.entries(map ?? {}).flatMap(([k, v]) => checkCel(v, [...path, k]));
}
