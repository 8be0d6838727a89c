// spec.traffic.rateLimit → localRateLimit (per replica) and remoteRateLimit (an Envoy rate limit
// service). Each global descriptor entry's expression is CEL.
import { checkCel } from '@gw/api';
import { defined, lowerFirst, type MapContext, serviceAddress } from '../context.ts';
import type { TrafficMapper, TrafficPolicies, TrafficSpec } from '../spec.ts';

export const rateLimit: TrafficMapper<'rateLimit'> = {
  map(rl, ctx, out, at) {
    ctx.rest(at.field, rl, ['local', 'global']);
    if (rl.local) {
      out.localRateLimit = rl.local.map((l) =>
        defined({ requests: l.requests, tokens: l.tokens, unit: l.unit, burst: l.burst }),
      );
    }
    if (rl.global) {
      const gp = [...at.path, 'global'];
      ctx.rest(`${at.field}.global`, rl.global, [
        'backendRef',
        'domain',
        'descriptors',
        'failureMode',
        'timeout',
      ]);
      rl.global.descriptors.forEach((d, di) => {
        ctx.rest(`${at.field}.global.descriptors[${di}]`, d, ['entries', 'unit', 'type']);
        d.entries.forEach((e, ei) => {
          ctx.check(checkCel(e.expression, [...gp, 'descriptors', di, 'entries', ei, 'expression']));
        });
      });
      const remote = remoteRateLimit(ctx, `${at.field}.global`, rl.global);
      if (remote) out.remoteRateLimit = remote;
    }
  },
};

type GlobalRateLimitSpec = NonNullable<NonNullable<TrafficSpec['rateLimit']>['global']>;
type RemoteRateLimit = NonNullable<TrafficPolicies['remoteRateLimit']>;

function remoteRateLimit(
  ctx: MapContext,
  field: string,
  spec: GlobalRateLimitSpec,
): RemoteRateLimit | undefined {
  // A missing Service keeps the user's failureMode: rate limiting is not access control, and FailOpen
  // (the default) is what they asked for when the service cannot be reached.
  if (!spec.backendRef) return undefined;
  const svc = serviceAddress(ctx, `${field}.backendRef`, spec.backendRef);
  if (!svc) return undefined;
  return defined({
    host: svc.hostPort,
    domain: spec.domain,
    descriptors: spec.descriptors.map((d) => ({
      entries: d.entries.map((e) => ({ key: e.name, value: e.expression })),
      type: lowerFirst(d.unit ?? d.type ?? 'Requests'),
    })),
    failureMode: lowerFirst(spec.failureMode),
    timeout: spec.timeout,
  });
}
