// spec.traffic.transformation → transformations (see ../transformation.ts).

import type { TrafficMapper } from '../spec.ts';
import { transformation as map } from '../transformation.ts';

export const transformation: TrafficMapper<'transformation'> = {
  map(spec, ctx, out, at) {
    ctx.rest(at.field, spec, ['request', 'response']);
    if (spec.conditional) return;
    out.transformations = map(spec, ctx, at);
  },
};
