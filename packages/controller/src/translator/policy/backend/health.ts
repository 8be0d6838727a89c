// spec.backend.health → health: passive checks become outlier detection (consecutive failures eject
// the endpoint for ejectionTime, growing with repeated ejections); active checks become gw's
// health.active (a GET of path every interval; unhealthyThreshold failed probes in a row take the
// endpoint out, healthyThreshold passed ones bring it back). With active alone, answers eject nothing.
// eviction's healthThreshold and restoreHealth are percentages here, scores from 0.0 to 1.0 there.
import { checkCel } from '@gw/api';
import { defined } from '../context.ts';
import type { BackendMapper } from '../spec.ts';

const percent = (v: number | undefined) => (v === undefined ? undefined : v / 100);

export const health: BackendMapper<'health'> = {
  map(spec, ctx, out, at) {
    ctx.rest(at.field, spec, ['passive', 'active', 'eviction', 'unhealthyCondition']);
    const p = spec.passive;
    const a = spec.active;
    const e = spec.eviction;
    if (e)
      ctx.rest(`${at.field}.eviction`, e, [
        'consecutiveFailures',
        'duration',
        'healthThreshold',
        'restoreHealth',
      ]);
    if (spec.unhealthyCondition !== undefined)
      ctx.check(checkCel(spec.unhealthyCondition, [...at.path, 'unhealthyCondition']));
    // the CRD asks for at least one; an empty health would be passive checks with agentgateway's defaults
    if (!p && !a && !e && spec.unhealthyCondition === undefined) return;
    out.health = defined({
      unhealthyExpression: spec.unhealthyCondition,
      eviction:
        (p && defined({ consecutiveFailures: p.consecutiveFailures, duration: p.ejectionTime })) ??
        (e &&
          defined({
            consecutiveFailures: e.consecutiveFailures,
            duration: e.duration,
            // the CRD's percentages are the standalone's scores from 0.0 to 1.0
            healthThreshold: percent(e.healthThreshold),
            restoreHealth: percent(e.restoreHealth),
          })),
      active:
        a &&
        defined({
          path: a.path,
          interval: a.interval,
          timeout: a.timeout,
          healthyThreshold: a.healthyThreshold,
          unhealthyThreshold: a.unhealthyThreshold,
        }),
    });
  },
};
