// spec.traffic.delay → delay: a duration, or a CEL expression giving one (checked).
import { checkDelay } from '@gw/api';
import type { TrafficMapper } from '../spec.ts';

export const delay: TrafficMapper<'delay'> = {
  map(spec, ctx, out, at) {
    out.delay = { duration: spec.duration };
    ctx.check(checkDelay(out.delay, at.path));
  },
};
