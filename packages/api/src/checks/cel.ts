// CEL expressions compile in the environment the proxy evaluates them in (../cel/environment.ts).
import { type CelRuntime, celEnvironment, compileCelWith } from '../cel/environment.ts';
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
const env = celEnvironment(standIns);

/** Whether `expr` compiles as a policy expression; the problem says why not. */
export function checkCel(expr: string, path: FieldPath): Problem[] {
  const r = compileCelWith(env, expr);
  return r.ok ? [] : [{ path, message: `invalid CEL expression: ${r.message}` }];
}

/** Every value of a name → expression map, each at `path.<name>`. */
export function checkCelMap(map: Record<string, string> | undefined, path: FieldPath): Problem[] {
  return Object.entries(map ?? {}).flatMap(([k, v]) => checkCel(v, [...path, k]));
}
