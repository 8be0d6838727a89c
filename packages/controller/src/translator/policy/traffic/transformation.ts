// spec.traffic.transformation → transformations (see ../transformation.ts), or their conditional
// form (../conditional.ts).
import { withConditional } from '../conditional.ts';
import type { TrafficMapper } from '../spec.ts';
import { transformation as map } from '../transformation.ts';

export const transformation: TrafficMapper<'transformation'> = withConditional(
  {
    map(spec, ctx, out, at) {
      ctx.rest(at.field, spec, ['request', 'response']);
      out.transformations = map(spec, ctx, at);
    },
  },
  { keys: ['transformations'] },
);
