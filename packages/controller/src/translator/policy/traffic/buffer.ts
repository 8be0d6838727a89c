// spec.traffic.buffer → buffer.
import { defined, lowerFirst } from '../context.ts';
import type { TrafficMapper } from '../spec.ts';

type Side = { maxBytes?: string | number | undefined; failureMode: 'FailClosed' | 'FailOpen' } | undefined;
const side = (s: Side) => s && defined({ maxBytes: s.maxBytes, failureMode: lowerFirst(s.failureMode) });

export const buffer: TrafficMapper<'buffer'> = {
  map(spec, _ctx, out) {
    out.buffer = defined({ request: side(spec.request), response: side(spec.response) });
  },
};
