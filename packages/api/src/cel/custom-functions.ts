// config.customFunctions (agentgateway's): named CEL expressions every policy expression may call, so
// a rule written once is not copied into every policy that needs it.
//
//   isInternal() { request.headers["x-env"] == "internal" }
//   this.joined(prefix, parts...) { prefix + this + parts.join("") }
//
// Each function is an ordinary CEL function of the environment the config's expressions compile in.
// Its arguments are evaluated once, as values, and its body runs with the parameters bound (`this` is
// the receiver, a `name...` parameter the list of the remaining arguments) over the calling
// expression's variables (`request`, `jwt`, `llm`, …). Bodies are compiled and type-checked when the
// block is read, so a typo, an unknown function or a call with the wrong number of arguments is a
// config error at load, not a failed evaluation on every request. A function may call another, in any
// order, but not itself, directly or through others.
import type { ASTNode, Environment } from '@marcbachmann/cel-js';
import { countCall, rootVariables, withVariables } from './views.ts';

export interface CustomFunctionDef {
  readonly name: string;
  /** `this.name(…)`: called as a method, `x.name(…)`, with `this` bound to `x`. */
  readonly receiver: boolean;
  /** The parameters after `this`, in order. */
  readonly params: readonly string[];
  /** The last parameter was written `name...`: it holds the remaining arguments as a list. */
  readonly variadic: boolean;
  readonly body: string;
  /** The line of the block the definition starts on, from 1. */
  readonly line: number;
  /** The line of the block its body's first character is on. */
  readonly bodyLine: number;
}

/** A problem with the block, and the line of the block it is on. */
export interface CustomFunctionProblem {
  readonly message: string;
  readonly line: number;
}

class BlockError extends Error {
  readonly line: number;
  constructor(line: number, message: string) {
    super(message);
    this.line = line;
  }
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** CEL's reserved words: no function or parameter may be named so. */
const RESERVED = new Set(
  'as break const continue else false for function if import in let loop namespace null package return true var void while'.split(
    ' ',
  ),
);

/** Arguments a variadic parameter takes beyond the fixed ones (one overload per count). */
export const MAX_VARIADIC_ARGUMENTS = 16;
/** Custom function calls one evaluation may make: nested calls can multiply (2^depth). */
export const MAX_CALLS_PER_EVALUATION = 10_000;

/**
 * The index of the `}` closing the `{` at `open`, or -1: braces in CEL string literals (quoted with
 * ' or ", triple-quoted, raw with an r prefix) and in `//` comments do not count.
 */
function closingBrace(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (c === '/' && text[i + 1] === '/') {
      const nl = text.indexOf('\n', i);
      if (nl === -1) return -1;
      i = nl;
    } else if (c === '"' || c === "'") {
      const raw = i > 0 && /[rR]/.test(text[i - 1] as string) && !/[A-Za-z0-9_]/.test(text[i - 2] ?? ' ');
      const quote = text.startsWith(c.repeat(3), i) ? c.repeat(3) : c;
      let j = i + quote.length;
      for (; j < text.length; j++) {
        if (text[j] === '\\' && !raw) j++;
        else if (text.startsWith(quote, j)) break;
        // a single-quoted string ends at its line: an unclosed one must not swallow the block
        else if (quote.length === 1 && text[j] === '\n') break;
      }
      if (j >= text.length) return -1;
      i = j + quote.length - 1;
    } else if (c === '{') depth++;
    else if (c === '}' && --depth === 0) return i;
  }
  return -1;
}

function identifier(name: string, what: string, line: number): string {
  if (name === '') throw new BlockError(line, `${what} is empty`);
  if (!IDENTIFIER.test(name))
    throw new BlockError(
      line,
      `${what} ${JSON.stringify(name)} is not a name: letters, digits and _, not first a digit`,
    );
  if (name === 'this') throw new BlockError(line, `${what} cannot be 'this'`);
  if (RESERVED.has(name)) throw new BlockError(line, `${what} cannot be ${name}: a reserved word in CEL`);
  return name;
}

function definition(header: string, body: string, line: number, bodyLine: number): CustomFunctionDef {
  const paren = header.indexOf('(');
  if (paren === -1)
    throw new BlockError(
      line,
      `${JSON.stringify(header)} has no parameter list: write name(params) { body }`,
    );
  if (!header.endsWith(')'))
    throw new BlockError(line, `${JSON.stringify(header)}: the parameter list has no closing ')'`);
  let name = header.slice(0, paren).trim();
  const receiver = name.startsWith('this.');
  if (receiver) name = name.slice('this.'.length).trim();
  identifier(name, 'the function name', line);
  const inside = header.slice(paren + 1, -1).trim();
  const params: string[] = [];
  let variadic = false;
  for (const raw of inside === '' ? [] : inside.split(',')) {
    if (variadic)
      throw new BlockError(line, `${name}: a parameter after the variadic one (name...) must be last`);
    let p = raw.trim();
    if (p.endsWith('...')) {
      variadic = true;
      p = p.slice(0, -3).trim();
    }
    identifier(p, `${name}: a parameter name`, line);
    if (params.includes(p)) throw new BlockError(line, `${name}: the parameter ${p} is named twice`);
    params.push(p);
  }
  if (body === '') throw new BlockError(line, `${name}: the body is empty`);
  return { name, receiver, params, variadic, body, line, bodyLine };
}

/**
 * The definitions of a block, in order. Definitions follow one another (any whitespace between, none
 * needed); a line starting with `#` is a comment. Throws with the line at fault.
 */
export function parseCustomFunctions(block: string): CustomFunctionDef[] {
  const lineAt = (pos: number) => {
    let n = 1;
    for (let i = block.indexOf('\n'); i !== -1 && i < pos; i = block.indexOf('\n', i + 1)) n++;
    return n;
  };
  const defs: CustomFunctionDef[] = [];
  let i = 0;
  for (;;) {
    while (i < block.length && /\s/.test(block[i] as string)) i++;
    if (i >= block.length) return defs;
    if (block[i] === '#') {
      const nl = block.indexOf('\n', i);
      i = nl === -1 ? block.length : nl + 1;
      continue;
    }
    const line = lineAt(i);
    const open = block.indexOf('{', i);
    const rest = block.slice(i, open === -1 ? undefined : open).trim();
    if (open === -1) throw new BlockError(line, `${JSON.stringify(rest.slice(0, 60))} has no { body }`);
    const close = closingBrace(block, open);
    if (close === -1) throw new BlockError(line, `${JSON.stringify(rest)}: the body has no closing '}'`);
    const inside = block.slice(open + 1, close);
    const lead = inside.length - inside.trimStart().length;
    defs.push(definition(rest, inside.trim(), line, lineAt(open + 1 + lead)));
    i = close + 1;
  }
}

/** The functions an environment was given, for what an expression reads through its calls. */
export interface CustomFunctions {
  readonly defs: readonly CustomFunctionDef[];
  /** Each function's body, by name (those that compiled). */
  readonly bodies: ReadonlyMap<string, ASTNode>;
}

const given = new WeakMap<Environment, CustomFunctions>();

/** The custom functions registered in `env`, if any. */
export function customFunctionsOf(env: Environment): CustomFunctions | undefined {
  return given.get(env);
}

/** The signature of a definition, as written: `x.joined(prefix, parts...)`. */
export function signatureOf(d: CustomFunctionDef): string {
  const params = d.params.map((p, i) => (d.variadic && i === d.params.length - 1 ? `${p}...` : p));
  return `${d.receiver ? 'x.' : ''}${d.name}(${params.join(', ')})`;
}

/** Every syntax node below `n`, `n` included (comprehensions hold theirs in an object). */
export function* nodes(n: unknown): Generator<ASTNode> {
  if (Array.isArray(n)) {
    for (const x of n) yield* nodes(x);
  } else if (n !== null && typeof n === 'object') {
    if ('op' in n && 'args' in n) {
      yield n as ASTNode;
      yield* nodes((n as { args: unknown }).args);
    } else if (Object.getPrototypeOf(n) === Object.prototype) {
      for (const x of Object.values(n)) yield* nodes(x);
    }
  }
}

/** The names of the custom functions `ast` calls. */
function callsIn(ast: ASTNode, names: ReadonlySet<string>): Set<string> {
  const out = new Set<string>();
  for (const n of nodes(ast)) {
    if ((n.op === 'call' || n.op === 'rcall') && names.has((n.args as unknown[])[0] as string))
      out.add((n.args as unknown[])[0] as string);
  }
  return out;
}

/** A call chain that comes back to where it started, as `a → b → a`; undefined when there is none. */
function cycleFrom(start: string, calls: ReadonlyMap<string, ReadonlySet<string>>): string | undefined {
  const path: string[] = [];
  const done = new Set<string>();
  const visit = (name: string): string | undefined => {
    const at = path.indexOf(name);
    if (at !== -1) return [...path.slice(at), name].join(' → ');
    if (done.has(name)) return undefined;
    path.push(name);
    for (const next of calls.get(name) ?? []) {
      const found = visit(next);
      if (found) return found;
    }
    path.pop();
    done.add(name);
    return undefined;
  };
  return visit(start);
}

export interface WithCustomFunctions {
  /** `base` with the functions; `base` itself when the block defines none. */
  readonly env: Environment;
  /** What is wrong with the block; functions at fault are still declared, and fail when called. */
  readonly problems: readonly CustomFunctionProblem[];
}

const built = new WeakMap<Environment, Map<string, WithCustomFunctions>>();

/**
 * `base` with the block's functions added (a new environment; `base` is not changed). The result is
 * kept per base and block, so every reload of an unchanged config reuses it.
 */
export function withCustomFunctions(base: Environment, block: string): WithCustomFunctions {
  let cache = built.get(base);
  if (cache === undefined) {
    cache = new Map();
    built.set(base, cache);
  }
  const hit = cache.get(block);
  if (hit !== undefined) return hit;
  const result = build(base, block);
  // a handful of recent blocks: a config being edited, and the one it replaces
  if (cache.size >= 8) cache.delete(cache.keys().next().value as string);
  cache.set(block, result);
  return result;
}

interface Compiled {
  readonly def: CustomFunctionDef;
  evaluate?: ((vars: object) => unknown) | undefined;
  ast?: ASTNode;
}

function build(base: Environment, block: string): WithCustomFunctions {
  let parsed: CustomFunctionDef[];
  try {
    parsed = parseCustomFunctions(block);
  } catch (err) {
    const e = err as BlockError;
    return { env: base, problems: [{ message: e.message, line: e.line }] };
  }
  if (parsed.length === 0) return { env: base, problems: [] };
  const problems: CustomFunctionProblem[] = [];
  const fail = (d: CustomFunctionDef, message: string) =>
    problems.push({ message: `${signatureOf(d)}: ${message}`, line: d.line });
  const definitions = base.getDefinitions();
  const builtins = new Set(definitions.functions.map((f) => f.name));
  // names an expression already has other than the request variables (dyn): constants, types
  const fixedNames = new Map(
    definitions.variables.filter((v) => v.type !== 'dyn').map((v) => [v.name, v.type]),
  );
  const compiled = new Map<string, Compiled>();
  for (const d of parsed) {
    if (builtins.has(d.name)) fail(d, `${d.name} is a CEL function already; choose another name`);
    else if (compiled.has(d.name)) fail(d, `${d.name} is defined more than once`);
    else compiled.set(d.name, { def: d });
  }

  const call = (c: Compiled, args: unknown[]): unknown => {
    const { def } = c;
    if (c.evaluate === undefined)
      throw new Error(`custom function ${def.name} is not usable: it did not compile`);
    // functions calling functions can multiply the work (a(x) { b(x) + b(x) }, b likewise…)
    if (countCall() > MAX_CALLS_PER_EVALUATION)
      throw new Error(`more than ${MAX_CALLS_PER_EVALUATION} custom function calls in one evaluation`);
    // the expression's variables, never a calling function's parameters
    const caller = rootVariables() ?? {};
    const vars: Record<string, unknown> = {
      ...(caller instanceof Map ? Object.fromEntries(caller) : caller),
    };
    let k = 0;
    if (def.receiver) vars.this = args[k++];
    def.params.forEach((p, i) => {
      vars[p] = def.variadic && i === def.params.length - 1 ? args.slice(k) : args[k++];
    });
    return c.evaluate(vars);
  };
  const declare = (env: Environment) => {
    for (const c of compiled.values()) {
      const { def } = c;
      const fixed = def.params.length - (def.variadic ? 1 : 0);
      const last = def.variadic ? fixed + MAX_VARIADIC_ARGUMENTS : fixed;
      for (let n = fixed; n <= last; n++) {
        const params = Array(n).fill('dyn').join(', ');
        env.registerFunction(
          `${def.receiver ? 'dyn.' : ''}${def.name}(${params}): dyn`,
          (...args: unknown[]) => call(c, args),
        );
      }
    }
  };

  const names = new Set(compiled.keys());
  const calls = new Map<string, Set<string>>();
  for (const c of compiled.values()) {
    const { def } = c;
    const bound = [...(def.receiver ? ['this'] : []), ...def.params];
    const clash = bound.find((p) => fixedNames.has(p));
    if (clash !== undefined) {
      fail(def, `the parameter ${clash} hides CEL's ${clash} (a ${fixedNames.get(clash)}); rename it`);
      continue;
    }
    const env = base.clone();
    for (const p of bound) if (!env.hasVariable(p)) env.registerVariable(p, 'dyn');
    declare(env);
    given.set(env, { defs: parsed, bodies: new Map() });
    // a problem in the body: at the block's line it is on, the snippet numbered so too
    const bodyProblem = (message: string) => {
      const at = /^>\s*(\d+) \|/m.exec(message);
      const line = def.bodyLine + (at ? Number(at[1]) - 1 : 0);
      problems.push({
        message: `${signatureOf(def)}: ${rebase(withCustomHint(env, message), def.bodyLine - 1)}`,
        line,
      });
    };
    let evaluate: ((vars: object) => unknown) & { ast: ASTNode };
    try {
      evaluate = env.parse(def.body) as unknown as typeof evaluate;
    } catch (err) {
      bodyProblem((err as Error).message);
      continue;
    }
    const checked = env.check(def.body) as { valid: boolean; error?: Error };
    if (!checked.valid) {
      bodyProblem(checked.error?.message ?? 'invalid expression');
      continue;
    }
    c.ast = evaluate.ast;
    c.evaluate = (vars) => withVariables(vars, () => evaluate(vars));
    calls.set(def.name, callsIn(evaluate.ast, names));
  }
  for (const c of compiled.values()) {
    const cycle = c.evaluate && cycleFrom(c.def.name, calls);
    if (cycle === undefined) continue;
    fail(
      c.def,
      cycle.startsWith(`${c.def.name} →`)
        ? `a function cannot call itself (${cycle})`
        : `it calls a function that calls itself (${cycle})`,
    );
    c.evaluate = undefined;
  }

  const env = base.clone();
  declare(env);
  const bodies = new Map<string, ASTNode>();
  for (const [name, c] of compiled) if (c.ast && c.evaluate) bodies.set(name, c.ast);
  given.set(env, { defs: parsed, bodies });
  return { env, problems };
}

/** cel-js's snippet line (`>    1 | a +`) numbered as the block's line: `offset` added, its width kept. */
function rebase(message: string, offset: number): string {
  return message.replace(/^>( *)(\d+) \|/m, (_m, pad: string, n: string) => {
    const width = pad.length + n.length;
    return `>${String(Number(n) + offset).padStart(width)} |`;
  });
}

/**
 * A call no overload matched, of a custom function: the message says how the function is declared
 * (cel-js names only the argument types it was given).
 */
export function withCustomHint(env: Environment, message = 'invalid expression'): string {
  const m = /^found no matching overload for '(?:[^'(]*\.)?([A-Za-z_][A-Za-z0-9_]*)\(/.exec(message);
  const def = m && customFunctionsOf(env)?.defs.find((d) => d.name === m[1]);
  if (!def) return message;
  const more = def.variadic
    ? `, at most ${MAX_VARIADIC_ARGUMENTS} arguments for ${def.params.at(-1)}...`
    : '';
  return `${message}\n(custom function, declared ${signatureOf(def)}${more})`;
}
