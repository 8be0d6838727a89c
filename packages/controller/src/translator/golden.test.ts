// Golden tests of the translator: testdata/<case>.yaml holds the input objects and the expected
// output (resources per Gateway and statuses). `REFRESH_GOLDEN=1 node hack/test.ts <this file>`
// rewrites every expected output from the current translator; review the diff before committing.
//
// Every case starts from testdata/_base.yaml (GatewayClass gw, Gateway default/edge with one HTTP
// listener), so a case file shows only what it tests. A case object with the kind, namespace and name
// of a base object replaces it; `base: [GatewayClass]` keeps only the listed base kinds (`base: []`
// none). packages/controller/test/golden-base.ts strips base objects from cases written in full.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseDocument, stringify } from 'yaml';
import { translate } from './translate.ts';
import type { KubeObject } from './types.ts';

const dir = join(dirname(fileURLToPath(import.meta.url)), 'testdata');
const refresh = process.env['REFRESH_GOLDEN'] === '1';
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.yaml') && !f.startsWith('_'))
  .sort();
const baseObjects = parseDocument(readFileSync(join(dir, '_base.yaml'), 'utf8')).toJS() as KubeObject[];

const identity = (o: KubeObject) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;

/** The base objects the case keeps and does not replace, then the case's own. */
function withBase(input: KubeObject[], base: string[] | undefined): KubeObject[] {
  const own = new Set(input.map(identity));
  const kept = baseObjects.filter(
    (b) => (base === undefined || base.includes(b.kind)) && !own.has(identity(b)),
  );
  return [...kept, ...input];
}

test('there are at least 60 golden cases', () => {
  assert.ok(files.length >= 60, `${files.length} cases`);
});

for (const file of files) {
  test(file.replace(/\.yaml$/, ''), () => {
    const path = join(dir, file);
    const text = readFileSync(path, 'utf8');
    const doc = parseDocument(text);
    const data = doc.toJS() as {
      base?: string[];
      input: KubeObject[];
      options?: { modelsEnabled?: boolean };
      output?: unknown;
    };
    const actual = translate({
      objects: withBase(data.input, data.base),
      controllerName: 'gw.dev/gw',
      ...(data.options?.modelsEnabled ? { modelsEnabled: true } : {}),
    });
    // a round trip through YAML, so the comparison sees what the file can hold
    const normalized = parseDocument(stringify(actual)).toJS();
    if (refresh) {
      const header = text.slice(0, text.search(/\n(base|input):/) + 1);
      const body = stringify(
        {
          ...(data.base ? { base: data.base } : {}),
          input: data.input,
          ...(data.options ? { options: data.options } : {}),
          output: normalized,
        },
        { lineWidth: 120 },
      );
      writeFileSync(path, header + body);
      return;
    }
    assert.ok(data.output !== undefined, `${file} has no output: run with REFRESH_GOLDEN=1`);
    assert.deepEqual(normalized, data.output);
  });
}
