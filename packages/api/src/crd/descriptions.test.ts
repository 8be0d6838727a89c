// Every field of the generated CRDs down to spec.a.b.c has a description, so `kubectl explain` never
// shows <no description> for it. Array items do not count as a level: spec.targetRefs[].name is depth 2.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

const crdDir = join(dirname(fileURLToPath(import.meta.url)), '../../../../crds');
const MAX_DEPTH = 3;

interface Schema {
  description?: string;
  properties?: Record<string, Schema>;
  items?: Schema;
  additionalProperties?: Schema | boolean;
}

/** The paths under `spec`, at most MAX_DEPTH fields deep, whose property has no description. */
function undescribed(spec: Schema): { missing: string[]; checked: number } {
  const missing: string[] = [];
  let checked = 0;
  const walk = (s: Schema, path: string, depth: number) => {
    if (s.items) walk(s.items, `${path}[]`, depth);
    if (s.additionalProperties && typeof s.additionalProperties === 'object')
      walk(s.additionalProperties, `${path}{}`, depth);
    if (depth >= MAX_DEPTH) return;
    for (const [name, p] of Object.entries(s.properties ?? {})) {
      checked++;
      if (typeof p.description !== 'string' || p.description.trim() === '') missing.push(`${path}.${name}`);
      walk(p, `${path}.${name}`, depth + 1);
    }
  };
  walk(spec, 'spec', 0);
  return { missing, checked };
}

const files = readdirSync(crdDir).filter((f) => /^gw\.dev_.*\.yaml$/.test(f));

test('the gw.dev CRDs are all read', () => {
  assert.deepEqual(files.sort(), [
    'gw.dev_gwbackends.yaml',
    'gw.dev_gwmodels.yaml',
    'gw.dev_gwparameters.yaml',
    'gw.dev_gwpolicies.yaml',
  ]);
});

for (const file of files) {
  test(`${file}: every field down to depth ${MAX_DEPTH} under spec has a description`, () => {
    const crd = parse(readFileSync(join(crdDir, file), 'utf8'));
    for (const version of crd.spec.versions) {
      const spec = version.schema.openAPIV3Schema.properties.spec as Schema;
      const { missing, checked } = undescribed(spec);
      assert.ok(checked > 0, `${file} ${version.name}: no spec fields found`);
      assert.deepEqual(
        missing,
        [],
        `${file} ${version.name}: ${missing.length} of ${checked} fields lack a description:\n  ${missing.join('\n  ')}`,
      );
    }
  });
}
