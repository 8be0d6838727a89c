// spec.traffic.concurrencyLimit → concurrencyLimit: the same list; keys and overrides checked as CEL.
import { checkConcurrencyLimit } from '@gw/api';
import { defined } from '../context.ts';
import type { TrafficMapper } from '../spec.ts';

export const concurrencyLimit: TrafficMapper<'concurrencyLimit'> = {
  map(spec, ctx, out, at) {
    const limits = spec.map((l) =>
      defined({ maxConcurrent: l.maxConcurrent, key: l.key, limitOverride: l.limitOverride }),
    );
    out.concurrencyLimit = limits;
    ctx.check(checkConcurrencyLimit(limits, at.path));
  },
};
