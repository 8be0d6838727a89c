// spec.traffic.retry → retry; its condition and precondition are CEL, checked here.
import { checkCel } from '@gw/api';
import { defined } from '../context.ts';
import type { TrafficMapper } from '../spec.ts';

export const retry: TrafficMapper<'retry'> = {
  map(spec, ctx, out, at) {
    ctx.rest(at.field, spec, ['attempts', 'backoff', 'codes', 'condition', 'precondition']);
    for (const k of ['condition', 'precondition'] as const) {
      const expr = spec[k];
      if (expr !== undefined) ctx.check(checkCel(expr, [...at.path, k]));
    }
    out.retry = defined({
      attempts: spec.attempts,
      backoff: spec.backoff,
      codes: [...(spec.codes ?? [])],
      condition: spec.condition,
      precondition: spec.precondition,
    });
  },
};
