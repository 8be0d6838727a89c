// The published JSON Schema of the standalone config (schema/config.json), for editors: files that
// start with `# yaml-language-server: $schema=…` get completion and validation as you type, with the
// file as written (environment variable references unexpanded).
import { z } from 'zod';
import type { Rule } from '../crd/kube.ts';
import { ConfigFile } from './schema.ts';

export const CONFIG_SCHEMA_ID = 'https://gw.dev/schema/config.json';

export function configJsonSchema(): Record<string, unknown> {
  // (ConfigFile's own type is too deep for toJSONSchema's overloads to relate; only the runtime schema counts)
  const schema = z.toJSONSchema(ConfigFile as unknown as z.ZodType, {
    io: 'input',
    unrepresentable: 'any',
    target: 'draft-2020-12',
    // A schema used in several places (backendAuth, backendTLS, header matches …) is written once
    // under $defs and referenced: inlined everywhere, the file was 17 MB.
    reused: 'ref',
  });
  return {
    ...withEnvReferences(forEditors(schema) as Record<string, unknown>),
    $id: CONFIG_SCHEMA_ID,
    title: 'gw standalone configuration',
  };
}

// A rule that is a regular expression over the field: `self.matches('<pattern>')` (no escapes inside).
const MATCHES = /^self\.matches\('([^'\\]*)'\)$/;
// kube.ts exactlyOne(): `[has(self.a), has(self.b)].filter(x, x).size() == 1`.
const EXACTLY_ONE = /^\[((?:has\(self\.\w+\)(?:, )?)+)\]\.filter\(x, x\)\.size\(\) == 1$/;

/**
 * The fields shared with the CRDs carry their Kubernetes annotations (x-kubernetes-*). Editors do
 * not read CEL, so a rule that matches a pattern becomes a JSON Schema `pattern` and an
 * exactly-one-of rule a `oneOf` of `required`; the other rules are checked when the config loads.
 */
function forEditors(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(forEditors);
  if (!node || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) {
    if (!k.startsWith('x-kubernetes-')) out[k] = forEditors(v);
  }
  const rules = ((node as Record<string, unknown>)['x-kubernetes-validations'] ?? []) as Rule[];
  const allOf: Record<string, unknown>[] = [];
  for (const r of rules) {
    const pattern = MATCHES.exec(r.rule)?.[1];
    if (pattern !== undefined) allOf.push({ pattern });
    const fields = EXACTLY_ONE.exec(r.rule)?.[1]?.match(/(?<=self\.)\w+/g);
    if (fields) allOf.push({ oneOf: fields.map((f) => ({ required: [f] })) });
  }
  if (allOf.length === 1 && out['pattern'] === undefined && allOf[0]?.['pattern'] !== undefined) {
    out['pattern'] = allOf[0]['pattern'];
  } else if (allOf.length > 0) {
    out['allOf'] = [...((out['allOf'] as unknown[] | undefined) ?? []), ...allOf];
  }
  return out;
}

// What the default of a reference must read as for the loader to make it a value of the field's type
// (source.ts plainScalar), and how the description says it; a string's default is anything up to `}`.
const REFERENCE_DEFAULT: Record<string, { pattern: string; says: string }> = {
  integer: { pattern: '-?(?:0|[1-9][0-9]*)', says: 'an integer' },
  number: { pattern: '-?(?:0|[1-9][0-9]*)|-?[0-9]+\\.[0-9]+', says: 'a number' },
  boolean: { pattern: 'true|false', says: 'true or false' },
};
const STRING_DEFAULT = { pattern: '[^}]*', says: 'any text' };
const SCALAR_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'null']);
// A string with any of these is held to a shape that a reference to be expanded would fail. Not a
// list of values (enum, const): those tell a union's branches apart, for editors and for
// hack/compat.ts, so they stay as they are and an editor still flags a reference there.
const STRING_CONSTRAINTS = ['pattern', 'format', 'allOf', 'anyOf', 'oneOf', 'not'];
// Kept on the wrapper, where an editor shows them.
const ANNOTATIONS = new Set(['title', 'description', 'default', 'examples', 'deprecated']);
// Keywords whose values are schemas, lists of schemas or maps of them. Not propertyNames: keys are
// never expanded.
const SUBSCHEMA = new Set(['items', 'additionalProperties', 'not', 'if', 'then', 'else', 'contains']);
const SUBSCHEMA_LISTS = new Set(['anyOf', 'oneOf', 'allOf', 'prefixItems']);
const SUBSCHEMA_MAPS = new Set(['properties', 'patternProperties', 'dependentSchemas', '$defs']);
const ENV_REFERENCE = 'envReference';

/**
 * The loader expands `${NAME}`, `${NAME:-default}` and `$NAME` in every scalar value before it
 * validates (source.ts parseSource), so `port: ${PORT:-3000}` is valid though a port is a number.
 * Each scalar schema that such a value would fail (a number, an integer, a boolean, or a string held
 * to a pattern or format) becomes anyOf [itself, one whole reference]; a free string takes one
 * already, and objects and lists never come from a reference. The reference patterns are
 * written once under $defs (`envReference`, `envReferenceInteger` …).
 */
function withEnvReferences(root: Record<string, unknown>): Record<string, unknown> {
  const defs: Record<string, unknown> = {};
  /** The $ref of the references a scalar schema should also accept, or undefined when it needs none. */
  const referenceFor = (schema: Record<string, unknown>): string | undefined => {
    const type = schema['type'];
    const types = (typeof type === 'string' ? [type] : Array.isArray(type) ? type : []) as string[];
    if (types.length === 0 || !types.every((t) => SCALAR_TYPES.has(t))) return undefined;
    const constrained = STRING_CONSTRAINTS.some((k) => k in schema);
    if (types.includes('string') && !constrained) return undefined;
    const kinds = types.filter((t) => t !== 'null');
    if (kinds.length === 0) return undefined;
    const anyDefault = kinds.includes('string');
    const name = anyDefault
      ? ENV_REFERENCE
      : ENV_REFERENCE + kinds.map((k) => k.charAt(0).toUpperCase() + k.slice(1)).join('Or');
    const defaults = anyDefault ? [STRING_DEFAULT] : kinds.map((k) => REFERENCE_DEFAULT[k] ?? STRING_DEFAULT);
    defs[name] ??= {
      type: 'string',
      pattern: `^(?:\\$\\{[A-Za-z_][A-Za-z0-9_]*(?::-(?:${defaults.map((d) => d.pattern).join('|')}))?\\}|\\$[A-Z_][A-Z0-9_]*)$`,
      description:
        'an environment variable, as ${NAME}, ${NAME:-default} or $NAME (upper case), replaced when the ' +
        `config loads; a default is ${defaults.map((d) => d.says).join(' or ')}`,
    };
    return `#/$defs/${name}`;
  };

  const visit = (node: unknown): unknown => {
    if (!node || typeof node !== 'object' || Array.isArray(node)) return node;
    const schema = node as Record<string, unknown>;
    const ref = referenceFor(schema);
    if (ref !== undefined) {
      const wrapper: Record<string, unknown> = {};
      const original: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(schema)) (ANNOTATIONS.has(k) ? wrapper : original)[k] = v;
      wrapper['anyOf'] = [original, { $ref: ref }];
      return wrapper;
    }
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(schema)) {
      if (k === 'anyOf' && Array.isArray(v)) out[k] = alternatives(v);
      else if (SUBSCHEMA.has(k)) out[k] = visit(v);
      else if (SUBSCHEMA_LISTS.has(k) && Array.isArray(v)) out[k] = v.map(visit);
      else if (SUBSCHEMA_MAPS.has(k) && v && typeof v === 'object')
        out[k] = Object.fromEntries(Object.entries(v).map(([name, sub]) => [name, visit(sub)]));
      else out[k] = v;
    }
    return out;
  };
  // In an anyOf the references are one more alternative rather than an anyOf inside each scalar one
  // (workerThreads: "auto", an integer, digits, or a reference).
  const alternatives = (list: unknown[]): unknown[] => {
    const refs = new Set<string>();
    const out = list.map((alt) => {
      const schema = alt as Record<string, unknown>;
      const ref = alt && typeof alt === 'object' ? referenceFor(schema) : undefined;
      if (ref === undefined) return visit(alt);
      refs.add(ref);
      return alt;
    });
    const any = `#/$defs/${ENV_REFERENCE}`;
    const added = refs.has(any) ? [any] : [...refs];
    return [...out, ...added.map(($ref) => ({ $ref }))];
  };

  const out = visit(root) as Record<string, unknown>;
  return { ...out, $defs: { ...(out['$defs'] as Record<string, unknown> | undefined), ...defs } };
}
