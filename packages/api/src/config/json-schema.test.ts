// schema/config.json as an editor reads it: a JSON Schema validator (ajv, draft 2020-12) compiles the
// committed file, every example config passes it, and a mistake fails at the field a user made it in.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { parse } from 'yaml';

const root = join(import.meta.dirname, '../../../..');
const file = join(root, 'schema/config.json');
const schema = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
// zod writes its own annotations beside the standard keywords; editors ignore them, so does this
const validate = new Ajv2020({ strict: false, allErrors: true }).compile(schema);

test('the schema compiles, and stays small enough for an editor to load (shared parts under $defs)', () => {
  assert.equal(typeof validate, 'function');
  const size = statSync(file).size;
  assert.ok(size < 1024 * 1024, `schema/config.json is ${size} bytes`);
  assert.ok(Object.keys((schema['$defs'] as object | undefined) ?? {}).length > 10);
});

test('every example config is valid against it', () => {
  const examples = readdirSync(join(root, 'examples')).filter((f) => f.endsWith('.yaml'));
  assert.ok(examples.length > 5);
  for (const f of examples) {
    // `${VAR:-default}` in a value (a port, say) as the loader would expand it with VAR unset
    const text = readFileSync(join(root, 'examples', f), 'utf8').replace(/\$\{\w+:-([^}]*)\}/g, '$1');
    const doc = parse(text) as unknown;
    assert.ok(validate(doc), `${f}: ${JSON.stringify(validate.errors?.slice(0, 3))}`);
  }
});

test('a field that does not exist, and a value of the wrong kind, are refused where they are', () => {
  const config = (llm: unknown) => ({ llm: { port: 4000, models: [llm] } });
  assert.equal(validate(config({ name: 'm', provider: 'openai', auth: { key: 'k' } })), true);
  assert.equal(validate(config({ name: 'm', provider: 'openai', modle: 'x' })), false);
  assert.ok(
    validate.errors?.some((e) => e.instancePath === '/llm/models/0' && e.keyword === 'additionalProperties'),
    JSON.stringify(validate.errors),
  );
  assert.equal(validate(config({ name: 'm', provider: 'openai', matches: [{ headers: 'x-a' }] })), false);
  assert.ok(
    validate.errors?.some((e) => e.instancePath === '/llm/models/0/matches/0/headers'),
    JSON.stringify(validate.errors),
  );
});
