// spec.traffic.csrf → csrf.
import type { TrafficMapper } from '../spec.ts';

export const csrf: TrafficMapper<'csrf'> = {
  map(spec, _ctx, out) {
    out.csrf = { additionalOrigins: [...spec.additionalOrigins] };
  },
};
