// spec.traffic.hostRewrite → hostRewrite: Auto sends each host backend its own name as Host, None the
// client's. A route's urlRewrite hostname still wins (the proxy applies the filter over it).
import { lowerFirst } from '../context.ts';
import type { TrafficMapper } from '../spec.ts';

export const hostRewrite: TrafficMapper<'hostRewrite'> = {
  map(spec, _ctx, out) {
    out.hostRewrite = { mode: lowerFirst(spec.mode) };
  },
};
