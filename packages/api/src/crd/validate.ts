// Runtime validation of gw.dev resources with the same schemas and CEL rules the CRDs carry, worded
// the way the API server words them (`spec.x: Too long: may not be more than 256 bytes`), so the
// controller, the standalone loader and `kubectl apply` tell a user the same thing.
import type { z } from 'zod';
import { DUPLICATE_ISSUE, RULE_ISSUE } from './kube.ts';

export interface FieldError {
  /** Dotted field path as the API server prints it, e.g. `spec.targetRefs[0].kind`. */
  field: string;
  /** The API server's wording after the path, e.g. `Required value`. */
  detail: string;
}

export function formatPath(prefix: string, path: readonly PropertyKey[]): string {
  let out = prefix;
  for (const p of path) {
    if (typeof p === 'number') out += `[${p}]`;
    else if (typeof p === 'string' && /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(p)) out += out ? `.${p}` : p;
    else out += `[${String(p)}]`;
  }
  return out;
}

const quote = (v: unknown) => JSON.stringify(v);
function kubeType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}
function shown(v: unknown): string {
  if (typeof v === 'string') return quote(v);
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return quote(kubeType(v));
}

export type Issue = z.core.$ZodIssue & { input?: unknown };

/** The API server's wording of one zod issue at `field` (what follows `field: ` in its message). */
export function describeIssue(issue: Issue, field: string): string[] {
  const input = issue.input;
  switch (issue.code) {
    case 'invalid_type': {
      if (input === undefined) return ['Required value'];
      // CRD numbers are all integers (openapi.ts refuses `type: number`), as the API server names them
      const expected =
        issue.expected === 'number' ? 'integer' : issue.expected === 'record' ? 'object' : issue.expected;
      return [
        `Invalid value: ${quote(kubeType(input))}: ${field} in body must be of type ${expected}: ${quote(kubeType(input))}`,
      ];
    }
    case 'too_big': {
      const max = Number(issue.maximum);
      if (issue.origin === 'string') return [`Too long: may not be more than ${max} bytes`];
      if (issue.origin === 'array' || issue.origin === 'map') {
        const n = Array.isArray(input)
          ? input.length
          : input && typeof input === 'object'
            ? Object.keys(input).length
            : 0;
        return [`Too many: ${n}: must have at most ${max} ${max === 1 ? 'item' : 'items'}`];
      }
      return [`Invalid value: ${shown(input)}: ${field} in body should be less than or equal to ${max}`];
    }
    case 'too_small': {
      const min = Number(issue.minimum);
      if (issue.origin === 'string')
        return [`Invalid value: ${shown(input)}: ${field} in body should be at least ${min} chars long`];
      if (issue.origin === 'array') {
        const n = Array.isArray(input) ? input.length : 0;
        return [`Invalid value: ${n}: ${field} in body should have at least ${min} items`];
      }
      return [`Invalid value: ${shown(input)}: ${field} in body should be greater than or equal to ${min}`];
    }
    case 'invalid_value':
      if (input === undefined) return ['Required value'];
      // the API server checks an enum's type before its values
      if (issue.values.every((v) => typeof v === 'string') && typeof input !== 'string')
        return [
          `Invalid value: ${quote(kubeType(input))}: ${field} in body must be of type string: ${quote(kubeType(input))}`,
        ];
      return [
        `Unsupported value: ${shown(input)}: supported values: ${issue.values.map((v) => quote(v)).join(', ')}`,
      ];
    case 'invalid_format':
      if (issue.format === 'regex' && 'pattern' in issue) {
        const pattern = issue.pattern as unknown;
        let source = pattern instanceof RegExp ? pattern.source : String(pattern);
        if (source.length > 1 && source.startsWith('/') && source.endsWith('/')) source = source.slice(1, -1);
        return [`Invalid value: ${shown(input)}: ${field} in body should match '${source}'`];
      }
      return [`Invalid value: ${shown(input)}: ${field} in body must be of type ${issue.format}`];
    case 'unrecognized_keys':
      return issue.keys.map((k) => `unknown field ${quote(formatPath(field, [k]))}`);
    case 'custom':
      if (issue.params?.[DUPLICATE_ISSUE]) return [`Duplicate value: ${shown(input)}`];
      if (issue.params?.[RULE_ISSUE]) {
        return typeof input === 'object' && input !== null
          ? [`Invalid value: ${issue.message}`]
          : [`Invalid value: ${shown(input)}: ${issue.message}`];
      }
      return [`Invalid value: ${shown(input)}: ${issue.message}`];
    default:
      return [`Invalid value: ${shown(input)}: ${issue.message}`];
  }
}

/** Checks `value` against `schema`; errors are ordered as zod found them, paths prefixed by `prefix`. */
export function validateAgainst<T extends z.ZodType>(
  schema: T,
  value: unknown,
  prefix: string,
): { ok: true; value: z.output<T> } | { ok: false; errors: FieldError[] } {
  const r = schema.safeParse(value, { reportInput: true });
  if (r.success) return { ok: true, value: r.data };
  const errors: FieldError[] = [];
  for (const issue of r.error.issues as Issue[]) {
    const field = formatPath(prefix, issue.path);
    for (const d of describeIssue(issue, field)) {
      // an unknown field is reported by the decoder, without a path prefix of its own
      errors.push(issue.code === 'unrecognized_keys' ? { field: '', detail: d } : { field, detail: d });
    }
  }
  return { ok: false, errors };
}

export function formatError(e: FieldError): string {
  return e.field ? `${e.field}: ${e.detail}` : e.detail;
}
