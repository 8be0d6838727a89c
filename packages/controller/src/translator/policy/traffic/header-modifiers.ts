// spec.traffic.headerModifiers → requestHeaderModifier / responseHeaderModifier (lists become maps).
import { defined, type MapContext, nameMap } from '../context.ts';
import type { TrafficMapper, TrafficPolicies, TrafficSpec } from '../spec.ts';

type HeaderModifierSpec = NonNullable<NonNullable<TrafficSpec['headerModifiers']>['request']>;
type HeaderModifier = NonNullable<TrafficPolicies['requestHeaderModifier']>;

export const headerModifiers: TrafficMapper<'headerModifiers'> = {
  map({ request, response }, ctx, out, at) {
    if (request) out.requestHeaderModifier = headerModifier(ctx, `${at.field}.request`, request);
    if (response) out.responseHeaderModifier = headerModifier(ctx, `${at.field}.response`, response);
  },
};

export function headerModifier(ctx: MapContext, field: string, m: HeaderModifierSpec): HeaderModifier {
  return defined({
    add: m.add ? nameMap(ctx, `${field}.add`, m.add, 'header') : undefined,
    set: m.set ? nameMap(ctx, `${field}.set`, m.set, 'header') : undefined,
    remove: m.remove ? [...m.remove] : undefined,
  });
}
