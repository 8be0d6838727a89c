// spec.traffic.retry → retry.
import { defined } from '../context.ts';
import type { TrafficMapper } from '../spec.ts';

export const retry: TrafficMapper<'retry'> = {
  map(spec, _ctx, out) {
    out.retry = defined({ attempts: spec.attempts, backoff: spec.backoff, codes: [...spec.codes] });
  },
};
