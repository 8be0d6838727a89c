// CEL for policies: one environment with the request variables, expressions compiled once per config
// (never per request), and evaluation errors turned into "no value" instead of exceptions. The CEL
// library and gw's environment load with the first expression compiled, not before: a config without
// CEL never loads them (about 1 MiB of heap a data plane).
import { BlockList, isIP } from 'node:net';
import type { JsonValue } from '@bufbuild/protobuf';
import type * as CelLibrary from '@gw/api/cel/environment';
import { CEL_VARIABLES, celToJson } from '@gw/api/runtime';
import type { Environment } from '@marcbachmann/cel-js';
import { requireEntry } from '../lazy.ts';
import { readsField } from './references.ts';

export { CEL_VARIABLES };
export type CelContext = Partial<Record<(typeof CEL_VARIABLES)[number], unknown>>;

/** A CIDR range: `cidr('10.0.0.0/8').containsIP(source.address)`. */
export class Cidr {
  readonly #list = new BlockList();
  readonly text: string;
  constructor(text: string) {
    const slash = text.indexOf('/');
    const addr = slash === -1 ? text : text.slice(0, slash);
    const family = isIP(addr);
    if (family === 0) throw new Error(`invalid CIDR ${JSON.stringify(text)}`);
    const bits = slash === -1 ? (family === 4 ? 32 : 128) : Number(text.slice(slash + 1));
    if (!Number.isInteger(bits) || bits < 0 || bits > (family === 4 ? 32 : 128)) {
      throw new Error(`invalid CIDR prefix length in ${JSON.stringify(text)}`);
    }
    this.#list.addSubnet(addr, bits, family === 4 ? 'ipv4' : 'ipv6');
    this.text = text;
  }
  containsIP(ip: string): boolean {
    const a = ip.startsWith('::ffff:') ? ip.slice(7) : ip;
    const family = isIP(a);
    return family !== 0 && this.#list.check(a, family === 4 ? 'ipv4' : 'ipv6');
  }
}

let library:
  | {
      env: Environment;
      compileCelWith: typeof CelLibrary.compileCelWith;
      withCustomFunctions: typeof CelLibrary.withCustomFunctions;
      customFunctionsOf: typeof CelLibrary.customFunctionsOf;
    }
  | undefined;

/** The CEL environment, loaded on first use. The declarations are @gw/api's, so the config checks
 * accept exactly what compiles here. */
function celLibrary(): NonNullable<typeof library> {
  if (library === undefined) {
    // The bundle's gw-cel entry; loaded while a config compiles, so synchronously.
    const m = requireEntry<typeof CelLibrary>(import.meta.url, '@gw/api/cel/environment', 'gw-cel');
    library = {
      env: m.celEnvironment({ Cidr, containsIP: (c, ip) => c.containsIP(ip), random: Math.random }),
      compileCelWith: m.compileCelWith,
      withCustomFunctions: m.withCustomFunctions,
      customFunctionsOf: m.customFunctionsOf,
    };
  }
  return library;
}

/** The config's custom functions (config.customFunctions), compiled; unset: none. */
let functions: { block: string; env: Environment } | undefined;

/**
 * Makes the block of custom functions callable from every expression compiled from now on (those of
 * the config being applied); returns what puts back the ones before, for a config that fails to
 * apply. The block was checked at load, so a problem here is a bug: it throws.
 */
export function useCelFunctions(block: string | undefined): () => void {
  const before = functions;
  if (block === undefined || block.trim() === '') functions = undefined;
  else if (block !== functions?.block) {
    const lib = celLibrary();
    const custom = lib.withCustomFunctions(lib.env, block);
    const problem = custom.problems[0];
    if (problem) throw new Error(`config.customFunctions, line ${problem.line}: ${problem.message}`);
    functions = { block, env: custom.env };
  }
  return () => {
    functions = before;
  };
}

export class CelCompileError extends Error {
  readonly expression: string;
  constructor(expression: string, message: string) {
    super(message);
    this.name = 'CelCompileError';
    this.expression = expression;
  }
}

export interface CelProgram {
  readonly source: string;
  /** The value, or `undefined` when evaluation fails (e.g. a missing variable or field). */
  eval(ctx: CelContext): unknown;
  /** Why evaluation in `ctx` fails (evaluating again: for a log, after eval gave undefined). */
  failure(ctx: CelContext): string | undefined;
  /** Whether it reads `variable.field` (e.g. `request.body`), or the whole variable. */
  reads(variable: (typeof CEL_VARIABLES)[number], field: string): boolean;
}

/** Compiles and type-checks; throws CelCompileError with the library's message (which shows where). */
export function compileCel(source: string): CelProgram {
  const lib = celLibrary();
  const env = functions?.env ?? lib.env;
  const compiled = lib.compileCelWith(env, source);
  if (!compiled.ok) throw new CelCompileError(source, compiled.message);
  const fn = compiled.evaluate;
  return {
    source,
    eval(ctx) {
      try {
        return fn(ctx);
      } catch {
        return undefined;
      }
    },
    failure(ctx) {
      try {
        fn(ctx);
        return undefined;
      } catch (err) {
        return err instanceof Error ? err.message : String(err);
      }
    },
    reads: (variable, field) => readsField(fn.ast, variable, field, lib.customFunctionsOf(env)?.bodies),
  };
}

/** True only for a boolean `true`; errors and non-booleans count as false. */
export function celTrue(p: CelProgram, ctx: CelContext): boolean {
  return p.eval(ctx) === true;
}

/** Milliseconds from a CEL value: a google.protobuf.Duration, or a number of milliseconds. */
export function celDurationMs(value: unknown): number | undefined {
  if (typeof value === 'bigint') return Number(value);
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (value && typeof value === 'object' && 'seconds' in value) {
    const d = value as { seconds: number | bigint; nanos?: number | bigint };
    return Number(d.seconds) * 1000 + Number(d.nanos ?? 0) / 1e6;
  }
  return undefined;
}

/** Plain JS for CEL results that leave the engine (access log fields, headers, bodies). */
export { celToJson };

/** A CEL value as JSON data for a protobuf Struct or Value; undefined when it failed or has no JSON form. */
export function celJsonValue(v: unknown): JsonValue | undefined {
  if (v === undefined) return undefined;
  const text = JSON.stringify(celToJson(v));
  return text === undefined ? undefined : (JSON.parse(text) as JsonValue);
}
