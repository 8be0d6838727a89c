// schema/config.json as an editor reads it: a JSON Schema validator (ajv, draft 2020-12) compiles the
// committed file, every example config passes it as written (environment variable references
// included), and a mistake fails at the field a user made it in.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { parse } from 'yaml';
import { parseSource } from './source.ts';

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
    // as an editor sees it: `port: ${PORT:-3000}` unexpanded
    const doc = parse(readFileSync(join(root, 'examples', f), 'utf8')) as unknown;
    assert.ok(validate(doc), `${f}: ${JSON.stringify(validate.errors?.slice(0, 3))}`);
  }
});

test('a whole environment variable reference passes where the loader would expand one, nothing else does', () => {
  const port = (port: unknown) => validate({ binds: [{ port, listeners: [] }] });
  for (const ok of [3000, '${PORT}', '${PORT:-3000}', '${port:-3000}', '$PORT', '${PORT:-8080}'])
    assert.equal(port(ok), true, `${ok}: ${JSON.stringify(validate.errors)}`);
  // not a reference, not one whole reference, a lower-case bare name (kept as written), a default
  // that cannot be a port, and `$$` (a literal $)
  for (const bad of ['abc', '3000', '${PORT}0', 'x${PORT}', '$port', '${PORT:-abc}', '${PORT:-}', '$$PORT'])
    assert.equal(port(bad), false, bad);
  assert.ok(
    validate.errors?.some((e) => e.instancePath === '/binds/0/port'),
    JSON.stringify(validate.errors),
  );

  // a string held to a pattern (host:port) takes a reference with any default
  const host = (host: string) =>
    validate({ binds: [{ port: 1, listeners: [{ routes: [{ backends: [{ host }] }] }] }] });
  assert.equal(host('${UPSTREAM:-127.0.0.1:8080}'), true, JSON.stringify(validate.errors));
  assert.equal(host('$UPSTREAM'), true, JSON.stringify(validate.errors));
  assert.equal(host('not a host'), false);
  // a boolean
  const config = (config: unknown) => validate({ config });
  assert.equal(config({ enableIpv6: '${IPV6:-false}' }), true, JSON.stringify(validate.errors));
  assert.equal(config({ enableIpv6: '${IPV6:-no}' }), false);
  assert.equal(config({ enableIpv6: 'yes' }), false);
  // a list of values is left as it is (its values tell union branches apart)
  assert.equal(config({ logging: { format: '${LOG_FORMAT:-json}' } }), false);
  // keys are never expanded, objects and lists cannot come from a reference
  assert.equal(validate({ binds: '${BINDS}' }), false);
  assert.equal(validate({ '${KEY}': 1 }), false);
});

test("the schema's reference pattern is what the loader expands as a whole value", () => {
  const defs = schema['$defs'] as Record<string, { pattern?: string }>;
  const pattern = new RegExp(defs['envReference']?.pattern ?? '(?!)');
  const env = (n: string) => ({ PORT: 'expanded', port: 'expanded', X_1: 'expanded' })[n];
  for (const value of [
    '${PORT}',
    '${port}',
    '${PORT:-1}',
    '${NOPE:-expanded}',
    '$PORT',
    '$X_1',
    '$port',
    '$$PORT',
    '${PORT}x',
    '$PORT$PORT',
    '${1X}',
    '$PORT-x',
    'PORT',
    '${PORT:-a}b}',
  ]) {
    const src = parseSource('t.yaml', `v: ${JSON.stringify(value)}\n`, env);
    const expanded = (src.data as { v: unknown }).v === 'expanded';
    assert.equal(pattern.test(value), expanded, value);
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
