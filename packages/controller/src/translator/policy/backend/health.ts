// spec.backend.health → health: passive checks become outlier detection (consecutive failures eject
// the endpoint for ejectionTime, growing with repeated ejections). Active checks have no data-plane
// support yet and are reported.
import { defined } from '../context.ts';
import type { BackendMapper } from '../spec.ts';

export const health: BackendMapper<'health'> = {
  map(spec, ctx, out, at) {
    ctx.rest(at.field, spec, ['passive']);
    const p = spec.passive;
    if (p)
      out.health = {
        eviction: defined({ consecutiveFailures: p.consecutiveFailures, duration: p.ejectionTime }),
      };
  },
};
