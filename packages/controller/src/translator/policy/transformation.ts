// GwPolicy spec.traffic.transformation and spec.backend.transformation (and GwBackend
// spec.policies.transformation) → the standalone `transformations`: the CRD's set/add lists of
// {name, value} become maps; @gw/api's checkTransformations runs at the CRD's own paths
// (`…request.set[0].value`), so a CEL expression that does not compile makes the policy Invalid.
import { checkTransformations, type FieldPath, type Transformations, type TransformEntryPath } from '@gw/api';
import { type At, defined, type MapContext, nameMap } from './context.ts';
import type { TrafficSpec } from './spec.ts';

type TransformationSpec = Omit<NonNullable<TrafficSpec['transformation']>, 'conditional'>;
type SideSpec = NonNullable<TransformationSpec['request']>;

/** The CRD lists its entries: a name problem is at `set[i].name`, an expression's at `set[i].value`. */
const crdEntry: TransformEntryPath = (side, field, key, index, part) =>
  field === 'metadata'
    ? [...side, 'metadata', key]
    : field === 'remove'
      ? [...side, 'remove', index]
      : [...side, field, index, part];

export function transformation(spec: TransformationSpec, ctx: MapContext, at: At): Transformations {
  const side = (s: SideSpec | undefined, name: 'request' | 'response') =>
    s &&
    defined({
      add: s.add ? nameMap(ctx, `${at.field}.${name}.add`, s.add, 'header') : undefined,
      set: s.set ? nameMap(ctx, `${at.field}.${name}.set`, s.set, 'header') : undefined,
      remove: s.remove ? [...s.remove] : undefined,
      body: s.body,
      metadata: s.metadata && { ...s.metadata },
    });
  const out = defined({ request: side(spec.request, 'request'), response: side(spec.response, 'response') });
  // Checked on the CRD's lists (not the maps), so each problem names the entry the user wrote.
  const listed = (s: SideSpec | undefined) =>
    s &&
    defined({
      add: s.add && Object.fromEntries(s.add.map((h) => [h.name, h.value])),
      set: s.set && Object.fromEntries(s.set.map((h) => [h.name, h.value])),
      remove: s.remove,
      body: s.body,
      metadata: s.metadata,
    });
  ctx.check(
    checkTransformations(
      defined({ request: listed(spec.request), response: listed(spec.response) }),
      at.path as FieldPath,
      crdEntry,
    ),
  );
  return out as Transformations;
}
