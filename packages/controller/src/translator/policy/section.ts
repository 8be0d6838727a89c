// The shape of a GwPolicy section map: for every field of a section (spec.traffic, spec.frontend,
// spec.backend / GwBackend spec.policies) either a mapper to the standalone shape or the marker
// `unsupported`. The maps are typed `satisfies SectionMap<Spec, Out>`, so a field added to a CRD
// without a decision here is a type error, not a field silently dropped.
import { type At, below, type MapContext } from './context.ts';

export interface SectionMapper<S, O> {
  /** Maps the field's value (never undefined) into `out`; problems and check results go to `ctx`. */
  map(spec: S, ctx: MapContext, out: O, at: At): void;
}

/** A field this gw build has no data-plane support for: reported as a problem when set. */
export const unsupported = { unsupported: true } as const;

export type Section<S, O> = SectionMapper<S, O> | typeof unsupported;

export type SectionMap<Spec, O> = { [K in keyof Spec]-?: Section<NonNullable<Spec[K]>, O> };

/**
 * Runs `map` over `spec`: first each set field without support is reported (in the spec's order),
 * then each mapper runs in the map's order, which is the order of the output's fields.
 */
export function mapSections<Spec extends object, O>(
  map: SectionMap<Spec, O>,
  spec: Spec,
  ctx: MapContext,
  out: O,
  at: At,
): void {
  const sections = map as Record<string, Section<unknown, O>>;
  const values = spec as Record<string, unknown>;
  for (const [k, v] of Object.entries(values)) {
    if (v !== undefined && (sections[k] ?? unsupported) === unsupported) ctx.unsupported(`${at.field}.${k}`);
  }
  for (const [k, section] of Object.entries(sections)) {
    const v = values[k];
    if (v !== undefined && 'map' in section) section.map(v, ctx, out, below(at, k));
  }
}
