// spec.traffic.retry → retry.
import { defined } from '../context.ts';
import type { TrafficMapper } from '../spec.ts';

export const retry: TrafficMapper<'retry'> = {
  map(spec, ctx, out, at) {
    ctx.rest(at.field, spec, ['attempts', 'backoff', 'codes']);
    out.retry = defined({ attempts: spec.attempts, backoff: spec.backoff, codes: [...spec.codes] });
  },
};
