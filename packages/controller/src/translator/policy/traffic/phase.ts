// spec.traffic.phase: only PostRouting (the default) runs in this build.
import type { TrafficMapper } from '../spec.ts';

export const phase: TrafficMapper<'phase'> = {
  map(value, ctx, _out, at) {
    if (value === 'PreRouting') ctx.unsupported(`${at.field} PreRouting`);
  },
};
