// The published JSON Schema of the standalone config (schema/config.json), for editors: files that
// start with `# yaml-language-server: $schema=…` get completion and validation as you type.
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
    ...(forEditors(schema) as Record<string, unknown>),
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
