// The CEL environment policy expressions are written against: the variables, the CIDR type and the
// functions gw adds. The proxy builds it with handlers that run; the config checks build it with
// stand-ins that never run. Both compile through `compileCelWith`, so an expression the checks accept
// is one the proxy compiles, with the same error message when it is not.
import { type ASTNode, Environment } from '@marcbachmann/cel-js';
import { customFunctionsOf, withCustomHint } from './custom-functions.ts';
import { CelIp, cidrParts, maskedText, registerExtensions } from './extensions.ts';
import { CEL_MAX_LENGTH, CEL_VARIABLES, type CelVariable, celToJson, parseJson } from './values.ts';
import { registerViews, withVariables } from './views.ts';

export {
  type CustomFunctionProblem,
  type CustomFunctions,
  customFunctionsOf,
  parseCustomFunctions,
  withCustomFunctions,
} from './custom-functions.ts';
export { CEL_MAX_LENGTH, CEL_VARIABLES, type CelVariable, celToJson, parseJson } from './values.ts';

/**
 * What evaluating needs beyond the declarations: the CIDR class and `random()`. (String helpers such
 * as `stripPrefix` are pure, so both environments run the same code.)
 */
export interface CelRuntime<C extends object> {
  Cidr: new (text: string) => C;
  containsIP(cidr: C, ip: string): boolean;
  random(): number;
}

/** A fresh environment with gw's declarations and the given runtime behind them. */
export function celEnvironment<C extends object>(rt: CelRuntime<C>): Environment {
  const e = new Environment({ homogeneousAggregateLiterals: false });
  for (const v of CEL_VARIABLES) e.registerVariable(v, 'dyn');
  e.registerFunction('random(): double', () => rt.random());
  // 'openai/gpt-4o'.stripPrefix('openai/') == 'gpt-4o'; a string without the prefix is kept.
  e.registerFunction('string.stripPrefix(string): string', (s: string, p: string) =>
    s.startsWith(p) ? s.slice(p.length) : s,
  );
  e.registerFunction('string.stripSuffix(string): string', (s: string, p: string) =>
    p !== '' && s.endsWith(p) ? s.slice(0, -p.length) : s,
  );
  // agentgateway's JSON functions: json() parses a string or bytes (a request body), toJson() writes.
  e.registerFunction('json(string): dyn', (s: string) => parseJson(s));
  e.registerFunction('json(bytes): dyn', (b: Uint8Array) => parseJson(new TextDecoder().decode(b)));
  e.registerFunction('toJson(dyn): string', (v: unknown) => JSON.stringify(celToJson(v)));
  e.registerFunction('to_json(dyn): string', (v: unknown) => JSON.stringify(celToJson(v)));
  // agentgateway's default(value, fallback): the fallback where the value cannot be evaluated (a
  // missing key or field) or is null. A macro, so the first argument's error is caught.
  e.registerFunction('default(ast, ast): dyn', ({ args }: { args: unknown[] }) => ({
    args,
    async: false,
    typeCheck(checker: MacroChecker, macro: { args: unknown[] }, ctx: unknown) {
      for (const a of macro.args) checker.check(a, ctx);
      return checker.getType('dyn');
    },
    evaluate(ev: MacroEvaluator, macro: { args: unknown[] }, ctx: unknown) {
      const v = ev.tryEval(macro.args[0], ctx);
      return v instanceof Error || v === null || v === undefined ? ev.run(macro.args[1], ctx) : v;
    },
  }));
  registerExtensions(e);
  registerViews(e);
  e.registerType('CIDR', rt.Cidr);
  e.registerFunction('cidr(string): CIDR', (text: string) => new rt.Cidr(text));
  // Kubernetes CEL's CIDR methods (agentgateway's), read from the CIDR's text
  const text = (c: C) => (c as unknown as { text: string }).text;
  e.registerFunction('CIDR.prefixLength(): int', (c: C) => BigInt(cidrParts(text(c)).bits));
  e.registerFunction('CIDR.ip(): IP', (c: C) => cidrParts(text(c)).ip);
  e.registerFunction('CIDR.masked(): CIDR', (c: C) => {
    const { ip, bits } = cidrParts(text(c));
    return new rt.Cidr(`${maskedText(ip, bits)}/${bits}`);
  });
  const containsCidr = (c: C, other: string) => {
    const mine = cidrParts(text(c));
    const theirs = cidrParts(other);
    return (
      theirs.ip.family === mine.ip.family &&
      theirs.bits >= mine.bits &&
      maskedText(theirs.ip, mine.bits) === maskedText(mine.ip, mine.bits)
    );
  };
  e.registerFunction('CIDR.containsCIDR(string): bool', (c: C, o: string) => containsCidr(c, o));
  e.registerFunction('CIDR.containsCIDR(CIDR): bool', (c: C, o: C) => containsCidr(c, text(o)));
  e.registerFunction('string(CIDR): string', (c: C) => text(c));
  e.registerFunction({
    name: 'containsIP',
    receiverType: 'CIDR',
    returnType: 'bool',
    handler: (c: C, ip: unknown) => {
      const text = typeof ip === 'string' ? ip : ip instanceof CelIp ? ip.text : undefined;
      return text !== undefined && rt.containsIP(c, text);
    },
    params: [{ name: 'ip', type: 'dyn' }],
  });
  return e;
}

/** What a macro's type check is handed (the library does not export these types). */
interface MacroChecker {
  check(node: unknown, ctx: unknown): unknown;
  getType(name: string): unknown;
}
interface MacroEvaluator {
  run(node: unknown, ctx: unknown): unknown;
  tryEval(node: unknown, ctx: unknown): unknown;
}

export type CelEvaluator = ((ctx: Partial<Record<CelVariable, unknown>>) => unknown) & {
  /** The syntax tree, for what the expression reads. */
  readonly ast: ASTNode;
};

/** Parses and type-checks `source`; the message is the library's (it shows where) or the length limit. */
export function compileCelWith(
  env: Environment,
  source: string,
): { ok: true; evaluate: CelEvaluator } | { ok: false; message: string } {
  if (source.length > CEL_MAX_LENGTH)
    return { ok: false, message: `expression is longer than ${CEL_MAX_LENGTH} characters` };
  let evaluate: CelEvaluator;
  try {
    evaluate = env.parse(source) as unknown as CelEvaluator;
  } catch (err) {
    return { ok: false, message: (err as Error).message };
  }
  const checked = env.check(source) as { valid: boolean; error?: Error };
  if (!checked.valid) return { ok: false, message: withCustomHint(env, checked.error?.message) };
  if (/\bvariables\s*\(/.test(source) || customFunctionsOf(env) !== undefined) {
    // variables() returns the evaluation's variables, which CEL functions are not handed; custom
    // functions run their bodies over them
    const inner = evaluate;
    evaluate = Object.assign(
      (ctx: Partial<Record<CelVariable, unknown>>) => withVariables(ctx, () => inner(ctx), true),
      {
        ast: inner.ast,
      },
    );
  }
  return { ok: true, evaluate };
}
