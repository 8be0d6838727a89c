// Property tests of the standalone loader, bounded so they run with every `make test`: whatever the
// input, loading either returns a config or throws a ConfigError whose every issue is located; a
// valid file written back out (as YAML) loads to the same config.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { ConfigError, parseSource } from '@gw/api';
import fc from 'fast-check';
import { stringify } from 'yaml';
import { type LoadedConfig, loadConfigText } from './load.ts';

const examplesDir = join(import.meta.dirname, '../../../../examples');
const examples = readdirSync(examplesDir)
  .filter((f) => f.endsWith('.yaml'))
  .map((f) => ({ name: f, text: readFileSync(join(examplesDir, f), 'utf8') }));
const noEnv = () => undefined;
// Bounded: each property runs a fixed number of cases with a fixed time cap, so the suite stays fast.
const budget = { numRuns: 300, interruptAfterTimeLimit: 4000 } as const;

type Outcome = { ok: LoadedConfig } | { issues: ConfigError['issues'] };

/** Loads `text`; anything thrown that is not a ConfigError fails the property. */
function attempt(text: string, file = 'fuzz.yaml'): Outcome {
  try {
    return { ok: loadConfigText(file, text, examplesDir, noEnv) };
  } catch (err) {
    if (!(err instanceof ConfigError)) {
      throw new Error(
        `loader threw ${(err as Error)?.name}: ${(err as Error)?.message}\n--- input ---\n${text}`,
        {
          cause: err,
        },
      );
    }
    return { issues: err.issues };
  }
}

/**
 * Every issue names its file and either a field path or a place in the file; only a file with no
 * content at all has a problem that is nowhere ("no listeners").
 */
function assertLocated(o: Outcome, file: string, text: string): void {
  if ('ok' in o) return;
  assert.ok(o.issues.length > 0, 'a ConfigError without issues');
  for (const i of o.issues) {
    assert.equal(i.file, file);
    assert.ok(
      i.path !== '' || i.line > 0 || /^no listeners/.test(i.message),
      `issue without a place: ${JSON.stringify(i)}\n--- input ---\n${text}`,
    );
    assert.equal(typeof i.message, 'string');
    assert.ok(i.message.length > 0);
  }
}

// Text that looks like YAML: indentation, keys, flow collections, anchors, tags, env references.
const yamlish = fc
  .array(
    fc.oneof(
      fc.constantFrom(
        '\n',
        '  ',
        '- ',
        ': ',
        '{',
        '}',
        '[',
        ']',
        ',',
        '"',
        "'",
        '&a ',
        '*a',
        '!!str ',
        '<<: ',
        '#',
        '|\n',
        '$',
        '${X}',
        '${X:-1}',
        '$$',
        'binds',
        'port',
        'listeners',
        'routes',
        'policies',
        'apiKey',
        'keys',
        'gateways',
        'backends',
        'host',
        '0',
        '-1',
        'true',
        'null',
        '~',
      ),
      fc.string({ maxLength: 8 }),
    ),
    { maxLength: 60 },
  )
  .map((parts) => parts.join(''));

// Config-shaped objects: known keys at the top with arbitrary JSON under them.
const topKeys = ['config', 'binds', 'gateways', 'routes', 'backends', 'policies', 'frontendPolicies', 'llm'];
const configish = fc.dictionary(fc.constantFrom(...topKeys), fc.jsonValue({ maxDepth: 4 }), { maxKeys: 4 });

/** The data of each example after environment expansion (defaults apply), as plain JSON. */
const exampleData = examples.map((e) => ({
  name: e.name,
  data: JSON.parse(JSON.stringify(parseSource(e.name, e.text, noEnv).data)) as unknown,
}));

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** Every path to a value inside `v` (the root is []). */
function paths(v: Json, at: (string | number)[] = []): (string | number)[][] {
  const out = [at];
  if (Array.isArray(v)) {
    for (const [i, x] of v.entries()) out.push(...paths(x, [...at, i]));
  } else if (v && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) out.push(...paths(x, [...at, k]));
  }
  return out;
}

type Mutation = { kind: 'replace'; value: Json } | { kind: 'delete' } | { kind: 'rename'; key: string };

/** `doc` with one change at `path`: a new value, the field removed, or the key renamed. */
function mutate(doc: Json, path: (string | number)[], m: Mutation): Json {
  const copy = structuredClone(doc);
  if (path.length === 0) return m.kind === 'replace' ? m.value : {};
  let parent: Json = copy;
  for (const seg of path.slice(0, -1)) parent = (parent as Record<string | number, Json>)[seg] as Json;
  const last = path[path.length - 1] as string | number;
  if (Array.isArray(parent)) {
    if (m.kind === 'delete') parent.splice(last as number, 1);
    else if (m.kind === 'replace') parent[last as number] = m.value;
    else parent.push(parent[last as number] as Json);
  } else if (parent && typeof parent === 'object') {
    const obj = parent as Record<string, Json>;
    if (m.kind === 'delete') delete obj[last];
    else if (m.kind === 'replace') obj[last] = m.value;
    else {
      obj[m.key] = obj[last] as Json;
      delete obj[last];
    }
  }
  return copy;
}

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({
    kind: fc.constant('replace' as const),
    value: fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<Json>,
  }),
  fc.record({
    kind: fc.constant('replace' as const),
    value: fc.constantFrom<Json>('', 0, -1, 65536, '$NOPE', '${NOPE}', 'a:1', '/', '(', '1s', [], {}, null),
  }),
  fc.constant({ kind: 'delete' as const }),
  fc.record({
    kind: fc.constant('rename' as const),
    key: fc.constantFrom('name', 'keys', 'typo', 'port', 'regex'),
  }),
);

const mutatedExample = fc
  .record({ e: fc.constantFrom(...exampleData), pick: fc.nat(), m: mutation })
  .map(({ e, pick, m }) => {
    const all = paths(e.data as Json);
    const path = all[pick % all.length] as (string | number)[];
    return { name: e.name, text: stringify(mutate(e.data as Json, path, m)) };
  });

describe('config loader properties (fast-check, bounded)', () => {
  test('arbitrary YAML-ish text: a config or located ConfigError issues, never another exception', () => {
    fc.assert(
      fc.property(yamlish, (text) => {
        assertLocated(attempt(text), 'fuzz.yaml', text);
      }),
      budget,
    );
  });

  test('arbitrary JSON, and config-shaped objects, as YAML: never another exception', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.jsonValue().map((v) => JSON.stringify(v)),
          configish.map((o) => stringify(o)),
        ),
        (text) => {
          assertLocated(attempt(text), 'fuzz.yaml', text);
        },
      ),
      budget,
    );
  });

  test('one mutation of an example config: loads, or every issue names a field path or a line', () => {
    fc.assert(
      fc.property(mutatedExample, ({ name, text }) => {
        const o = attempt(text, name);
        assertLocated(o, name, text);
        if ('issues' in o)
          for (const i of o.issues) assert.ok(i.line > 0, `no line for ${JSON.stringify(i)}`);
      }),
      budget,
    );
  });

  test('a valid file written back out as YAML loads to the same config (examples and valid mutations)', () => {
    for (const e of examples) {
      const first = attempt(e.text, e.name);
      assert.ok('ok' in first, `${e.name} does not load`);
    }
    fc.assert(
      fc.property(mutatedExample, ({ name, text }) => {
        const first = attempt(text, name);
        if (!('ok' in first)) return;
        const again = attempt(stringify(parseSource(name, text, noEnv).data), name);
        assert.ok('ok' in again, `valid before the round-trip, not after:\n${text}`);
        assert.equal(again.ok.ir.version, first.ok.ir.version);
        assert.deepEqual(again.ok.startup, first.ok.startup);
      }),
      budget,
    );
  });
});
