// Golden tests of the translator: testdata/<case>.yaml holds the input objects and the expected
// output (resources per Gateway and statuses); ../../test/golden-cases.ts reads them, with the base
// objects every case shares. `REFRESH_GOLDEN=1 node hack/test.ts <this file>` rewrites every expected
// output from the current translator; review the diff before committing.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { test } from 'node:test';
import { parseDocument, stringify } from 'yaml';
import { goldenCases } from '../../test/golden-cases.ts';
import { translate } from './translate.ts';

const refresh = process.env['REFRESH_GOLDEN'] === '1';
const cases = goldenCases();

test('there are at least 60 golden cases', () => {
  assert.ok(cases.length >= 60, `${cases.length} cases`);
});

for (const c of cases) {
  test(c.file.replace(/\.yaml$/, ''), () => {
    const actual = translate({
      objects: c.objects,
      controllerName: 'gw.dev/gw',
      ...(c.options?.modelsEnabled ? { modelsEnabled: true } : {}),
      ...(c.options?.inferenceEnabled ? { inferenceEnabled: true } : {}),
    });
    // a round trip through YAML, so the comparison sees what the file can hold
    const normalized = parseDocument(stringify(actual)).toJS();
    if (refresh) {
      const header = c.text.slice(0, c.text.search(/\n(base|input):/) + 1);
      const body = stringify(
        {
          ...(c.base ? { base: c.base } : {}),
          input: c.input,
          ...(c.options ? { options: c.options } : {}),
          output: normalized,
        },
        { lineWidth: 120 },
      );
      writeFileSync(c.path, header + body);
      return;
    }
    assert.ok(c.output !== undefined, `${c.file} has no output: run with REFRESH_GOLDEN=1`);
    assert.deepEqual(normalized, c.output);
  });
}
