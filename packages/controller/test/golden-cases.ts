// Reads the translator's golden cases (src/translator/testdata/<case>.yaml) with the shared base
// objects merged in: the golden test checks them, an e2e test feeds their output to the proxy.
//
// Every case starts from testdata/_base.yaml (GatewayClass gw, Gateway default/edge with one HTTP
// listener), so a case file shows only what it tests. A case object with the kind, namespace and name
// of a base object replaces it; `base: [GatewayClass]` keeps only the listed base kinds (`base: []`
// none). golden-base.ts strips base objects from cases written in full.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Document, parseDocument } from 'yaml';
import type { KubeObject } from '../src/translator/types.ts';

export const TESTDATA = join(import.meta.dirname, '../src/translator/testdata');

export interface GoldenCase {
  file: string;
  path: string;
  text: string;
  doc: Document;
  base?: string[];
  /** The case's own objects, as written. */
  input: KubeObject[];
  /** What the translator gets: the kept base objects, then the case's own. */
  objects: KubeObject[];
  options?: { modelsEnabled?: boolean; inferenceEnabled?: boolean };
  output?: unknown;
}

const identity = (o: KubeObject) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;

export function baseObjects(): KubeObject[] {
  return parseDocument(readFileSync(join(TESTDATA, '_base.yaml'), 'utf8')).toJS() as KubeObject[];
}

/** The base objects `base` keeps and `input` does not replace, then `input`. */
export function withBase(input: KubeObject[], base: string[] | undefined, all = baseObjects()): KubeObject[] {
  const own = new Set(input.map(identity));
  const kept = all.filter((b) => (base === undefined || base.includes(b.kind)) && !own.has(identity(b)));
  return [...kept, ...input];
}

export function goldenCases(): GoldenCase[] {
  const all = baseObjects();
  return readdirSync(TESTDATA)
    .filter((f) => f.endsWith('.yaml') && !f.startsWith('_'))
    .sort()
    .map((file) => {
      const path = join(TESTDATA, file);
      const text = readFileSync(path, 'utf8');
      const doc = parseDocument(text);
      const data = doc.toJS() as Pick<GoldenCase, 'base' | 'input' | 'options' | 'output'>;
      return { file, path, text, doc, ...data, objects: withBase(data.input, data.base, all) };
    });
}
