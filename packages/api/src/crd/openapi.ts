// zod → the structural OpenAPI v3 schema a CustomResourceDefinition needs. zod writes JSON Schema; the
// API server wants a structural subset of it, so this pass removes what Kubernetes rejects
// (additionalProperties: false, propertyNames, const) and fails loudly on what it cannot express
// (unions, $ref), so a CRD definition that would not be structural never reaches crds/.
import { z } from 'zod';

type Schema = Record<string, unknown>;
const SAFE = Number.MAX_SAFE_INTEGER;

function structural(node: Schema, path: string): Schema {
  if (node['x-kubernetes-int-or-string'] === true) {
    const { anyOf: _, ...rest } = node;
    return rest;
  }
  for (const bad of ['anyOf', 'oneOf', 'allOf', 'not', '$ref', '$defs']) {
    if (bad in node) {
      throw new Error(
        `${path}: ${bad} is not structural; use an object with optional fields and a rule instead`,
      );
    }
  }
  const out: Schema = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === '$schema' || k === 'propertyNames' || k === 'id') continue;
    if (k === 'additionalProperties' && v === false) continue;
    // an object kept as written says so with x-kubernetes-preserve-unknown-fields alone
    if (k === 'additionalProperties' && node['x-kubernetes-preserve-unknown-fields'] === true) continue;
    if (k === 'const') {
      out['enum'] = [v];
      continue;
    }
    // zod bounds every integer by the safe range; only a bound a field asked for belongs in the CRD.
    if ((k === 'minimum' && v === -SAFE) || (k === 'maximum' && v === SAFE)) continue;
    if (k === 'properties' && v && typeof v === 'object') {
      out[k] = Object.fromEntries(
        Object.entries(v as Record<string, Schema>).map(([name, s]) => [
          name,
          structural(s, `${path}.${name}`),
        ]),
      );
      continue;
    }
    if ((k === 'items' || k === 'additionalProperties') && v && typeof v === 'object') {
      out[k] = structural(v as Schema, `${path}[]`);
      continue;
    }
    out[k] = v;
  }
  if (out['type'] === 'number') {
    throw new Error(`${path}: use z.int(): CRD numbers are integers (validate.ts words type errors so)`);
  }
  if (out['x-kubernetes-preserve-unknown-fields'] === true && out['type'] === undefined) {
    // arbitrary JSON: no type, no further keywords
    return out;
  }
  if (out['type'] === undefined && out['x-kubernetes-int-or-string'] !== true)
    throw new Error(`${path}: no type (structural schemas need one on every node)`);
  return out;
}

/** The OpenAPI v3 schema of one CRD version: `spec` and `status` under a typed root. */
export function crdSchema(spec: z.ZodType, status: z.ZodType, description: string): Schema {
  const convert = (s: z.ZodType, path: string) =>
    structural(
      z.toJSONSchema(s, { target: 'openapi-3.0', io: 'input', unrepresentable: 'throw', reused: 'inline' }),
      path,
    );
  return {
    type: 'object',
    description,
    properties: {
      apiVersion: { type: 'string' },
      kind: { type: 'string' },
      metadata: { type: 'object' },
      spec: convert(spec, 'spec'),
      status: convert(status, 'status'),
    },
    required: ['spec'],
  };
}
