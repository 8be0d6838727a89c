// The building blocks of the gw.dev CRDs. A CRD field is a zod schema; a rule the OpenAPI keywords
// cannot say is a Kubernetes CEL rule attached with `rules()`. From one definition come:
//   - the TypeScript types (z.output),
//   - the structural OpenAPI v3 schema in crds/*.yaml (openapi.ts; rules become x-kubernetes-validations),
//   - the runtime validation of the controller and the standalone loader (validate.ts), which evaluates
//     the very same CEL rules with the CEL library the proxy uses, and words its errors as the API
//     server does, so a user reads one message whichever path caught the mistake.
import { Environment } from '@marcbachmann/cel-js';
import { z } from 'zod';

/** One `x-kubernetes-validations` entry. */
export interface Rule {
  /** Kubernetes CEL over `self` (the value of the field the rule is on). */
  rule: string;
  /** What the user reads when the rule is false. */
  message: string;
  /** Where the error points, relative to the field (e.g. `.port`); default the field itself. */
  fieldPath?: string;
}

/** Marks the issues raised by a rule so validate.ts can word them as the API server does. */
export const RULE_ISSUE = 'gw.dev/cel-rule';
export const DUPLICATE_ISSUE = 'gw.dev/duplicate';

// The Kubernetes CEL libraries our rules use, implemented for the runtime path. Only what a rule in
// this package calls: isQuantity/quantity comparison (ByteSize).
const QUANTITY_RE =
  /^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$/;
const QUANTITY_SCALE: Record<string, number> = {
  '': 1,
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};
export class Quantity {
  readonly value: number;
  constructor(text: string) {
    const m = QUANTITY_RE.exec(text);
    if (!m) throw new Error(`invalid quantity ${JSON.stringify(text)}`);
    const suffix = m[3] ?? '';
    const scale = /^[eE]/.test(suffix) ? 10 ** Number(suffix.slice(1)) : (QUANTITY_SCALE[suffix] ?? 1);
    this.value = Number(text.slice(0, text.length - suffix.length)) * scale;
  }
}

const celEnv = (() => {
  const e = new Environment({ homogeneousAggregateLiterals: false });
  e.registerVariable('self', 'dyn');
  e.registerType('Quantity', Quantity);
  e.registerFunction('isQuantity(string): bool', (s: string) => QUANTITY_RE.test(s));
  e.registerFunction('quantity(string): Quantity', (s: string) => new Quantity(s));
  e.registerFunction(
    'Quantity.isGreaterThan(Quantity): bool',
    (a: Quantity, b: Quantity) => a.value > b.value,
  );
  e.registerFunction('Quantity.isLessThan(Quantity): bool', (a: Quantity, b: Quantity) => a.value < b.value);
  return e;
})();

type Compiled = (ctx: { self: unknown }) => unknown;
const compiled = new Map<string, Compiled>();
function compile(rule: string): Compiled {
  let fn = compiled.get(rule);
  if (!fn) {
    fn = celEnv.parse(rule) as unknown as Compiled;
    compiled.set(rule, fn);
  }
  return fn;
}

/** Evaluates a rule the way the API server would; an evaluation error counts as a failed rule. */
export function holds(rule: string, self: unknown): boolean {
  try {
    return compile(rule)({ self }) === true;
  } catch {
    return false;
  }
}

/** Attaches CEL rules to a schema: they go into the CRD and are checked at runtime. */
export function rules<T extends z.ZodType>(schema: T, ...list: Rule[]): T {
  for (const r of list) compile(r.rule); // a typo in a rule fails at import, not at the first request
  const checked = schema.superRefine((value, ctx) => {
    for (const r of list) {
      if (holds(r.rule, value)) continue;
      const path = r.fieldPath ? r.fieldPath.replace(/^\./, '').split('.') : [];
      ctx.addIssue({
        code: 'custom',
        message: r.message,
        path,
        input: value,
        params: { [RULE_ISSUE]: true },
      });
    }
  });
  const meta = schema.meta() ?? {};
  const existing = (meta['x-kubernetes-validations'] as Rule[] | undefined) ?? [];
  return checked.meta({ ...meta, 'x-kubernetes-validations': [...existing, ...list] }) as T;
}

const has = (f: string) => `has(self.${f})`;
const count = (fields: readonly string[]) => `[${fields.map(has).join(', ')}].filter(x, x).size()`;
const list = (fields: readonly string[]) =>
  fields.length === 2
    ? `${fields[0]} or ${fields[1]}`
    : `${fields.slice(0, -1).join(', ')} or ${fields[fields.length - 1]}`;

export function exactlyOne(fields: readonly string[], message?: string): Rule {
  return { rule: `${count(fields)} == 1`, message: message ?? `exactly one of ${list(fields)} must be set` };
}
export function atMostOne(fields: readonly string[], message?: string): Rule {
  return { rule: `${count(fields)} <= 1`, message: message ?? `at most one of ${list(fields)} may be set` };
}
export function atLeastOne(fields: readonly string[], message?: string): Rule {
  return { rule: `${count(fields)} >= 1`, message: message ?? `at least one of ${list(fields)} must be set` };
}

/** A map with at most `max` entries (OpenAPI maxProperties; zod has no keyword for it). */
export function maxEntries<T extends z.ZodType>(schema: T, max: number): T {
  const checked = schema.superRefine((value, ctx) => {
    const n = value && typeof value === 'object' ? Object.keys(value).length : 0;
    if (n > max) {
      ctx.addIssue({
        code: 'too_big',
        origin: 'map' as 'array',
        maximum: max,
        inclusive: true,
        input: value,
      });
    }
  });
  return checked.meta({ ...(schema.meta() ?? {}), maxProperties: max }) as T;
}

/**
 * A list of distinct scalars (x-kubernetes-list-type: set): the API server rejects a repeated item
 * with `Duplicate value`, and so does the runtime check.
 */
export function setList<T extends z.ZodArray<z.ZodType>>(schema: T): T {
  const checked = schema.superRefine((items, ctx) => {
    const seen = new Set<unknown>();
    items.forEach((item, i) => {
      if (seen.has(item)) {
        ctx.addIssue({
          code: 'custom',
          message: 'duplicate',
          path: [i],
          input: item,
          params: { [DUPLICATE_ISSUE]: true },
        });
      }
      seen.add(item);
    });
  });
  return checked.meta({ ...(schema.meta() ?? {}), 'x-kubernetes-list-type': 'set' }) as T;
}

/**
 * A list of objects keyed by some of their fields (x-kubernetes-list-type: map): the API server
 * rejects a second item with the same keys with `Duplicate value`, and so does the runtime check.
 */
export function mapList<T extends z.ZodArray<z.ZodType>>(schema: T, keys: readonly string[]): T {
  const checked = schema.superRefine((items, ctx) => {
    const seen = new Set<string>();
    items.forEach((item, i) => {
      const key = Object.fromEntries(keys.map((k) => [k, (item as Record<string, unknown>)[k]]));
      const id = JSON.stringify(keys.map((k) => key[k]));
      if (seen.has(id)) {
        ctx.addIssue({
          code: 'custom',
          message: 'duplicate',
          path: [i],
          input: key,
          params: { [DUPLICATE_ISSUE]: true },
        });
      }
      seen.add(id);
    });
  });
  return checked.meta({
    ...(schema.meta() ?? {}),
    'x-kubernetes-list-type': 'map',
    'x-kubernetes-list-map-keys': [...keys],
  }) as T;
}

/** Arbitrary JSON kept as written (x-kubernetes-preserve-unknown-fields). */
export const Json = z.unknown().meta({ 'x-kubernetes-preserve-unknown-fields': true });
/** An integer or a string (x-kubernetes-int-or-string). */
export const IntOrString = z.union([z.int(), z.string()]).meta({ 'x-kubernetes-int-or-string': true });
/** A JSON object kept as written. */
export const JsonObject = z
  .record(z.string(), z.unknown())
  .meta({ type: 'object', 'x-kubernetes-preserve-unknown-fields': true });

export const obj = z.strictObject;

/** `conditional` may not be set with any of `others`. */
export function alone(field: string, others: readonly string[]) {
  return {
    rule: `!has(self.${field}) || [${others.map((o) => `has(self.${o})`).join(', ')}].filter(x, x).size() == 0`,
    message: `${field} cannot be set with any other field`,
  };
}
