// spec.traffic.timeouts → timeout.
import { defined } from '../context.ts';
import type { TrafficMapper } from '../spec.ts';

export const timeouts: TrafficMapper<'timeouts'> = {
  map(spec, _ctx, out) {
    out.timeout = defined({ requestTimeout: spec.request, backendRequestTimeout: spec.backendRequest });
  },
};
