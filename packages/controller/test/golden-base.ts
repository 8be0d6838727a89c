// Usage: node packages/controller/test/golden-base.ts <case.yaml...>
//
// Strips the shared base objects (testdata/_base.yaml) from golden cases whose input is written in
// full (every object the translator gets, no `base:` key), so each case shows only what it tests. An
// input object equal to a base object is removed; a base kind the case has no object for (neither
// equal nor replacing it) is excluded with `base:`. A case is rewritten only when the input it then
// yields (base objects first, then its own) is exactly the input it had, in the same order; expected
// outputs are never touched. Run the golden test afterwards: it must pass unchanged.

import { readFileSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { parseDocument, stringify } from 'yaml';
import type { KubeObject } from '../src/translator/types.ts';
import { baseObjects, withBase } from './golden-cases.ts';

const base = baseObjects();
const identity = (o: KubeObject) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error('usage: node packages/controller/test/golden-base.ts <case.yaml...>');
  process.exit(2);
}
let changed = 0;
for (const path of files) {
  const file = basename(path);
  const text = readFileSync(path, 'utf8');
  const data = parseDocument(text).toJS() as { base?: string[]; input: KubeObject[] } & Record<
    string,
    unknown
  >;
  if (data.base !== undefined) {
    console.log(`${file}: has base: already, left as is`);
    continue;
  }
  const full = data.input;
  const input = full.filter((o) => !base.some((b) => isDeepStrictEqual(b, o)));
  const ownIds = new Set(input.map(identity));
  // a base object neither present nor replaced must be left out explicitly
  const kinds = base
    .filter((b) => full.some((o) => isDeepStrictEqual(b, o)) || ownIds.has(identity(b)))
    .map((b) => b.kind);
  const baseKey = kinds.length === base.length ? undefined : kinds;
  if (!isDeepStrictEqual(withBase(input, baseKey, base), full)) {
    console.log(`${file}: left as is (the base objects are not first in its input)`);
    continue;
  }
  if (input.length === data.input.length && baseKey === undefined) continue;
  const { base: _b, input: _i, ...rest } = data;
  const header = text.slice(0, text.search(/\n(base|input):/) + 1);
  const body = stringify({ ...(baseKey ? { base: baseKey } : {}), input, ...rest }, { lineWidth: 120 });
  writeFileSync(path, header + body);
  changed++;
}
console.log(`${changed} case(s) rewritten`);
