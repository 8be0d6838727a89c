// The CEL libraries under comparison, each behind one small adapter: a conformance runner (parse, check
// where the library has a checker, evaluate, convert the result) and a policy compiler like the gateway's.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as buf from '@bufbuild/cel';
import { strings as bufStrings } from '@bufbuild/cel/ext';
import type { Type } from '@bufbuild/cel-spec/cel/expr/checked_pb.js';
import type { Value } from '@bufbuild/cel-spec/cel/expr/value_pb.js';
import type { Registry } from '@bufbuild/protobuf';
import { isReflectMessage } from '@bufbuild/protobuf/reflect';
import * as marc from '@marcbachmann/cel-js';
import { Duration as MarcDuration, UnsignedInt as MarcUint } from '@marcbachmann/cel-js/evaluator';
import * as celjs from 'cel-js';
import { CEL_VARIABLES } from '../../packages/api/src/cel/values.ts';
import { type Canon, canonFromMessage, typeName, unpack } from './values.ts';

/** One conformance test, reduced to what an adapter needs. */
export interface ConformanceCase {
  readonly expr: string;
  readonly container: string;
  readonly disableCheck: boolean;
  readonly checkOnly: boolean;
  /** The test compares the type the checker deduces. */
  readonly wantType: boolean;
  readonly decls: ReadonlyArray<{ readonly name: string; readonly type: Type | undefined }>;
  readonly functionDecls: readonly string[];
  readonly bindings: Readonly<Record<string, Value>>;
  /** Bindings given as errors or unknowns rather than values (none in the current suite). */
  readonly nonValueBindings: readonly string[];
}

export type Phase = 'parse' | 'check' | 'eval';
export type Outcome =
  | { readonly kind: 'unsupported'; readonly reason: string }
  | { readonly kind: 'error'; readonly phase: Phase; readonly message: string }
  | { readonly kind: 'ok'; readonly value?: Canon; readonly type?: string };

/** A compiled policy expression, evaluated against a request context. */
export type PolicyEval = (ctx: Record<string, unknown>) => unknown;

export interface Candidate {
  /** The npm package name. */
  readonly name: string;
  readonly version: string;
  /** What the adapter enables beyond the library's defaults, for the report. */
  readonly setup: string;
  runCase(c: ConformanceCase, registry: Registry): Outcome;
  /** Compiles once, as the gateway does per config; throws when the library rejects the expression. */
  compilePolicy(expr: string): PolicyEval;
  /**
   * The request context in the input form the library reads fastest, when that differs from the plain
   * objects the gateway builds now; a gateway on this library would build that form instead.
   */
  nativeContext?(ctx: Record<string, unknown>): { form: string; ctx: Record<string, unknown> };
}

/** Variables the gateway declares, all dyn: its own list, so each candidate compiles what gw would. */
export const POLICY_VARIABLES = CEL_VARIABLES;

/** Thrown by value converters for inputs a library has no way to represent. */
class Unsupported extends Error {}

const here = dirname(fileURLToPath(import.meta.url));
function installedVersion(pkg: string): string {
  const json = JSON.parse(readFileSync(join(here, 'node_modules', pkg, 'package.json'), 'utf8')) as {
    version: string;
  };
  return json.version;
}

function message(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split('\n')[0] ?? '';
}

/** The parts of a case that no adapter here can express (declared functions need implementations). */
function commonUnsupported(c: ConformanceCase): Outcome | undefined {
  if (c.functionDecls.length > 0) {
    return { kind: 'unsupported', reason: `declares functions ${c.functionDecls.join(', ')}` };
  }
  if (c.nonValueBindings.length > 0) {
    return { kind: 'unsupported', reason: `non-value bindings ${c.nonValueBindings.join(', ')}` };
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------------
// @marcbachmann/cel-js: Environment with declared variables, parse + check + evaluate (as the gateway).
// Values: int → bigint, uint → UnsignedInt, double → number, map → Map (results may come back as plain
// objects, read with string keys), timestamp → Date (millisecond precision), duration → Duration.

function marcType(t: Type | undefined): string {
  const name = typeName(t);
  if (name === undefined || t?.typeKind.case === 'messageType' || name.includes('wrapper(')) {
    throw new Unsupported(`declared type ${name ?? t?.typeKind.case} has no equivalent`);
  }
  return name;
}

function toMarc(v: Value, registry: Registry): unknown {
  const kind = v.kind;
  switch (kind.case) {
    case 'nullValue':
      return null;
    case 'boolValue':
    case 'int64Value':
    case 'doubleValue':
    case 'stringValue':
    case 'bytesValue':
      return kind.value;
    case 'uint64Value':
      return new MarcUint(kind.value);
    case 'enumValue':
      return BigInt(kind.value.value);
    case 'listValue':
      return kind.value.values.map((e) => toMarc(e, registry));
    case 'mapValue':
      return new Map(kind.value.entries.map((e) => [toMarc(e.key!, registry), toMarc(e.value!, registry)]));
    case 'objectValue':
      return canonToMarc(canonFromMessage(unpack(kind.value, registry), registry));
    default:
      throw new Unsupported(`binding of kind ${kind.case}`);
  }
}

function canonToMarc(c: Canon): unknown {
  switch (c.k) {
    case 'null':
      return null;
    case 'bool':
    case 'int':
    case 'double':
    case 'string':
    case 'bytes':
      return c.v;
    case 'uint':
      return new MarcUint(c.v);
    case 'list':
      return c.v.map(canonToMarc);
    case 'map':
      return new Map(c.v.map(([k, v]) => [canonToMarc(k), canonToMarc(v)]));
    case 'timestamp':
      return new Date(Number(c.seconds) * 1000 + Math.floor(c.nanos / 1e6));
    case 'duration':
      return new MarcDuration(c.seconds, c.nanos);
    default:
      throw new Unsupported(`binding of a ${c.k === 'message' ? c.type : c.k}`);
  }
}

function fromMarc(v: unknown): Canon {
  if (v === null) return { k: 'null' };
  switch (typeof v) {
    case 'boolean':
      return { k: 'bool', v };
    case 'bigint':
      return { k: 'int', v };
    case 'number':
      return { k: 'double', v };
    case 'string':
      return { k: 'string', v };
  }
  if (v instanceof MarcUint) return { k: 'uint', v: v.value };
  if (v instanceof Uint8Array) return { k: 'bytes', v };
  if (v instanceof Date) {
    const ms = v.getTime();
    return {
      k: 'timestamp',
      seconds: BigInt(Math.floor(ms / 1000)),
      nanos: (((ms % 1000) + 1000) % 1000) * 1e6,
    };
  }
  if (v instanceof MarcDuration) return { k: 'duration', seconds: v.seconds, nanos: v.nanos };
  if (Array.isArray(v)) return { k: 'list', v: v.map(fromMarc) };
  if (v instanceof Map) return { k: 'map', v: [...v].map(([k, x]) => [fromMarc(k), fromMarc(x)]) };
  // The library's Type values carry a `Type<name>` string tag; its Type class is not exported.
  const tag = Object.prototype.toString.call(v);
  if (tag.startsWith('[object Type<')) return { k: 'type', v: (v as { name: string }).name };
  if (v instanceof marc.Optional) return { k: 'opaque', v: 'optional' };
  if (typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
    return { k: 'map', v: Object.entries(v).map(([k, x]) => [{ k: 'string', v: k }, fromMarc(x)]) };
  }
  return { k: 'opaque', v: tag };
}

const marcAdapter: Candidate = {
  name: '@marcbachmann/cel-js',
  version: installedVersion('@marcbachmann/cel-js'),
  setup: 'Environment({homogeneousAggregateLiterals: false, enableOptionalTypes: true}); declared types',
  runCase(c, registry) {
    const common = commonUnsupported(c);
    if (common) return common;
    let env: marc.Environment;
    const ctx: Record<string, unknown> = {};
    try {
      env = new marc.Environment({ homogeneousAggregateLiterals: false, enableOptionalTypes: true });
      for (const d of c.decls) env.registerVariable(d.name, marcType(d.type));
      for (const [name, v] of Object.entries(c.bindings)) {
        if (!env.hasVariable(name)) env.registerVariable(name, 'dyn');
        ctx[name] = toMarc(v, registry);
      }
    } catch (err) {
      return { kind: 'unsupported', reason: message(err) };
    }
    let fn: marc.ParseResult;
    try {
      fn = env.parse(c.expr);
    } catch (err) {
      return { kind: 'error', phase: 'parse', message: message(err) };
    }
    let type: string | undefined;
    if (!c.disableCheck || c.wantType) {
      const checked = env.check(c.expr);
      if (!checked.valid) return { kind: 'error', phase: 'check', message: message(checked.error) };
      type = checked.type;
    }
    if (c.checkOnly) return type === undefined ? { kind: 'ok' } : { kind: 'ok', type };
    try {
      const value = fromMarc(fn(ctx));
      return type === undefined ? { kind: 'ok', value } : { kind: 'ok', value, type };
    } catch (err) {
      return { kind: 'error', phase: 'eval', message: message(err) };
    }
  },
  compilePolicy(expr) {
    const fn = marcPolicyEnv.parse(expr);
    const checked = marcPolicyEnv.check(expr);
    if (!checked.valid) throw checked.error ?? new Error('invalid expression');
    return fn;
  },
};

/** The gateway's environment (packages/proxy/src/cel/cel.ts), built once. */
const marcPolicyEnv = (() => {
  const e = new marc.Environment({ homogeneousAggregateLiterals: false });
  for (const v of POLICY_VARIABLES) e.registerVariable(v, 'dyn');
  e.registerFunction('random(): double', () => Math.random());
  return e;
})();

// ---------------------------------------------------------------------------------------------------
// @bufbuild/cel: parse → plan → call; no type checker in its public API (check phase skipped).
// Values: int → bigint, uint → CelUint, map → Map, messages (incl. Timestamp, Duration, wrappers, JSON
// types) passed as protobuf messages from the test registry; results are CelValue / CelError.

function toBuf(v: Value, registry: Registry): buf.CelInput {
  const kind = v.kind;
  switch (kind.case) {
    case 'nullValue':
      return null;
    case 'boolValue':
    case 'int64Value':
    case 'doubleValue':
    case 'stringValue':
    case 'bytesValue':
      return kind.value;
    case 'uint64Value':
      return buf.celUint(kind.value);
    case 'enumValue':
      return BigInt(kind.value.value);
    case 'listValue':
      return kind.value.values.map((e) => toBuf(e, registry));
    case 'mapValue':
      return new Map(
        kind.value.entries.map(
          (e) => [toBuf(e.key!, registry) as string, toBuf(e.value!, registry)] as const,
        ),
      );
    case 'objectValue':
      return unpack(kind.value, registry);
    default:
      throw new Unsupported(`binding of kind ${kind.case}`);
  }
}

function fromBuf(v: unknown, registry: Registry): Canon {
  if (v === null) return { k: 'null' };
  switch (typeof v) {
    case 'boolean':
      return { k: 'bool', v };
    case 'bigint':
      return { k: 'int', v };
    case 'number':
      return { k: 'double', v };
    case 'string':
      return { k: 'string', v };
  }
  if (v instanceof Uint8Array) return { k: 'bytes', v };
  if (buf.isCelUint(v)) return { k: 'uint', v: v.value };
  if (buf.isCelType(v)) return { k: 'type', v: v.name };
  if (buf.isCelList(v)) return { k: 'list', v: [...v].map((e) => fromBuf(e, registry)) };
  if (buf.isCelMap(v))
    return { k: 'map', v: [...v.entries()].map(([k, x]) => [fromBuf(k, registry), fromBuf(x, registry)]) };
  if (isReflectMessage(v)) return canonFromMessage(v.message, registry);
  return { k: 'opaque', v: Object.prototype.toString.call(v) };
}

const bufAdapter: Candidate = {
  name: '@bufbuild/cel',
  version: installedVersion('@bufbuild/cel'),
  setup: 'celEnv({registry: conformance types, namespace: container, funcs: strings ext})',
  runCase(c, registry) {
    const common = commonUnsupported(c);
    if (common) return common;
    if (c.wantType || c.checkOnly)
      return { kind: 'unsupported', reason: 'no type checker in the public API' };
    const bindings: Record<string, buf.CelInput> = {};
    try {
      for (const [name, v] of Object.entries(c.bindings)) {
        bindings[name] = toBuf(v, registry);
      }
    } catch (err) {
      return { kind: 'unsupported', reason: message(err) };
    }
    let parsed: ReturnType<typeof buf.parse>;
    try {
      parsed = buf.parse(c.expr);
    } catch (err) {
      return { kind: 'error', phase: 'parse', message: message(err) };
    }
    let run: (ctx: Record<string, buf.CelInput>) => unknown;
    try {
      const env = buf.celEnv({ registry, namespace: c.container, funcs: bufStrings });
      run = buf.plan(env, parsed);
    } catch (err) {
      return { kind: 'error', phase: 'check', message: message(err) };
    }
    try {
      const result = run(bindings);
      if (buf.isCelError(result)) return { kind: 'error', phase: 'eval', message: result.message };
      return { kind: 'ok', value: fromBuf(result, registry) };
    } catch (err) {
      return { kind: 'error', phase: 'eval', message: `threw: ${message(err)}` };
    }
  },
  compilePolicy(expr) {
    return buf.plan(bufPolicyEnv, buf.parse(expr)) as PolicyEval;
  },
  // Plain objects are accepted but read through a slower path; Maps are its documented map input.
  nativeContext(ctx) {
    const toMaps = (v: unknown): unknown => {
      if (Array.isArray(v)) return v.map(toMaps);
      if (v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
        return new Map(Object.entries(v).map(([k, x]) => [k, toMaps(x)]));
      }
      return v;
    };
    return { form: 'Map', ctx: Object.fromEntries(Object.entries(ctx).map(([k, v]) => [k, toMaps(v)])) };
  },
};

const bufPolicyEnv = buf.celEnv({
  variables: Object.fromEntries(POLICY_VARIABLES.map((v) => [v, buf.CelScalar.DYN])),
  funcs: [...bufStrings, buf.celFunc('random', [], buf.CelScalar.DOUBLE, () => Math.random())],
});

// ---------------------------------------------------------------------------------------------------
// cel-js: parse to a CST, evaluate with a plain-object context; no checker, one JS number type.
// Values: int/uint/double → number (ints beyond 2^53 unsupported), map → plain object (string keys only);
// a number result matches an expected int, uint or double of the same numeric value.

function toCelJs(v: Value, registry: Registry): unknown {
  const kind = v.kind;
  switch (kind.case) {
    case 'nullValue':
      return null;
    case 'boolValue':
    case 'doubleValue':
    case 'stringValue':
      return kind.value;
    case 'int64Value':
    case 'uint64Value':
      return safeNumber(kind.value);
    case 'enumValue':
      return kind.value.value;
    case 'listValue':
      return kind.value.values.map((e) => toCelJs(e, registry));
    case 'mapValue':
      return Object.fromEntries(
        kind.value.entries.map((e) => {
          if (e.key?.kind.case !== 'stringValue') throw new Unsupported('map with non-string keys');
          return [e.key.kind.value, toCelJs(e.value!, registry)];
        }),
      );
    case 'objectValue':
      return canonToCelJs(canonFromMessage(unpack(kind.value, registry), registry));
    default:
      throw new Unsupported(`binding of kind ${kind.case}`);
  }
}

function safeNumber(v: bigint): number {
  if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < BigInt(Number.MIN_SAFE_INTEGER)) {
    throw new Unsupported('integer beyond 2^53');
  }
  return Number(v);
}

function canonToCelJs(c: Canon): unknown {
  switch (c.k) {
    case 'null':
      return null;
    case 'bool':
    case 'double':
    case 'string':
      return c.v;
    case 'int':
    case 'uint':
      return safeNumber(c.v);
    case 'list':
      return c.v.map(canonToCelJs);
    case 'map':
      return Object.fromEntries(
        c.v.map(([k, v]) => {
          if (k.k !== 'string') throw new Unsupported('map with non-string keys');
          return [k.v, canonToCelJs(v)];
        }),
      );
    default:
      throw new Unsupported(`binding of a ${c.k === 'message' ? c.type : c.k}`);
  }
}

function fromCelJs(v: unknown): Canon {
  if (v === null) return { k: 'null' };
  switch (typeof v) {
    case 'boolean':
      return { k: 'bool', v };
    case 'number':
      return { k: 'number', v };
    case 'bigint':
      return { k: 'int', v };
    case 'string':
      return { k: 'string', v };
  }
  if (v instanceof Uint8Array) return { k: 'bytes', v };
  if (Array.isArray(v)) return { k: 'list', v: v.map(fromCelJs) };
  if (typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
    return { k: 'map', v: Object.entries(v).map(([k, x]) => [{ k: 'string', v: k }, fromCelJs(x)]) };
  }
  return { k: 'opaque', v: Object.prototype.toString.call(v) };
}

const celJsAdapter: Candidate = {
  name: 'cel-js',
  version: installedVersion('cel-js'),
  setup: 'parse() once, evaluate(cst, context)',
  runCase(c, registry) {
    const common = commonUnsupported(c);
    if (common) return common;
    if (c.wantType || c.checkOnly) return { kind: 'unsupported', reason: 'no type checker' };
    const ctx: Record<string, unknown> = {};
    try {
      for (const [name, v] of Object.entries(c.bindings)) {
        ctx[name] = toCelJs(v, registry);
      }
    } catch (err) {
      return { kind: 'unsupported', reason: message(err) };
    }
    let parsed: celjs.ParseResult;
    try {
      parsed = celjs.parse(c.expr);
    } catch (err) {
      return { kind: 'error', phase: 'parse', message: message(err) };
    }
    if (!parsed.isSuccess) return { kind: 'error', phase: 'parse', message: parsed.errors.join('; ') };
    try {
      return { kind: 'ok', value: fromCelJs(celjs.evaluate(parsed.cst, ctx)) };
    } catch (err) {
      return { kind: 'error', phase: 'eval', message: message(err) };
    }
  },
  compilePolicy(expr) {
    const parsed = celjs.parse(expr);
    if (!parsed.isSuccess) throw new Error(parsed.errors.join('; '));
    const cst = parsed.cst;
    return (ctx) => celjs.evaluate(cst, ctx, celJsFunctions);
  },
};

const celJsFunctions = { random: () => Math.random() };

export const CANDIDATES: readonly Candidate[] = [marcAdapter, bufAdapter, celJsAdapter];
