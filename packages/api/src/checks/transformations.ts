// Checks of a transformations policy (the standalone shape): every expression compiles, header names
// are header names (set and add also take the pseudo-headers), a pseudo-header is never removed, and
// in the conditional form only the last entry may go without a condition.

import type { FieldPath } from '../config/source.ts';
import {
  type LocalTransform,
  TRANSFORM_PSEUDO_HEADERS,
  type Transformations,
  type TransformationsPolicy,
} from '../config/transformations.ts';
import { HEADER_NAME_PATTERN } from '../crd/types.ts';
import { checkCel } from './cel.ts';
import { checkExplicitOrConditional } from './conditional.ts';
import type { Problem } from './problem.ts';

const headerName = new RegExp(HEADER_NAME_PATTERN);
const PSEUDO: ReadonlySet<string> = new Set(TRANSFORM_PSEUDO_HEADERS);

/**
 * Where an entry of a map field is, and its name or value part: in the standalone file a map key
 * (`set.x-user`); a caller whose shape lists entries (the CRD's `set[0].value`) passes its own.
 */
export type TransformEntryPath = (
  side: FieldPath,
  field: 'add' | 'set' | 'metadata' | 'remove',
  key: string,
  index: number,
  part: 'name' | 'value',
) => FieldPath;

const mapKeys: TransformEntryPath = (side, field, key, index) =>
  field === 'remove' ? [...side, 'remove', index] : [...side, field, key];

export function checkTransformations(
  t: TransformationsPolicy,
  path: FieldPath,
  entry: TransformEntryPath = mapKeys,
): Problem[] {
  return checkExplicitOrConditional<TransformationsPolicy, Transformations>(t, path, (c, at) =>
    checkTransformation(c, at, entry),
  );
}

function checkTransformation(t: Transformations, path: FieldPath, entry: TransformEntryPath): Problem[] {
  return (['request', 'response'] as const).flatMap((s) => {
    const side = t[s];
    return side ? checkSide(side, [...path, s], entry) : [];
  });
}

function checkSide(t: LocalTransform, side: FieldPath, entry: TransformEntryPath): Problem[] {
  const out: Problem[] = [];
  for (const field of ['add', 'set'] as const) {
    Object.entries(t[field] ?? {}).forEach(([name, expr], i) => {
      if (!PSEUDO.has(name) && (name.startsWith(':') || !headerName.test(name)))
        out.push({
          path: entry(side, field, name, i, 'name'),
          message: `invalid header name ${JSON.stringify(name)} (a header name, or one of ${TRANSFORM_PSEUDO_HEADERS.join(', ')})`,
        });
      out.push(...checkCel(expr, entry(side, field, name, i, 'value')));
    });
  }
  (t.remove ?? []).forEach((name, i) => {
    if (name.startsWith(':'))
      out.push({
        path: entry(side, 'remove', name, i, 'name'),
        message: `pseudo-header ${name} cannot be removed`,
      });
    else if (!headerName.test(name))
      out.push({
        path: entry(side, 'remove', name, i, 'name'),
        message: `invalid header name ${JSON.stringify(name)}`,
      });
  });
  if (t.replace !== undefined) out.push(...checkCel(t.replace, [...side, 'replace']));
  if (t.body !== undefined) out.push(...checkCel(t.body, [...side, 'body']));
  Object.entries(t.metadata ?? {}).forEach(([name, expr], i) => {
    out.push(...checkCel(expr, entry(side, 'metadata', name, i, 'value')));
  });
  return out;
}
