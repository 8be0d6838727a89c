// spec.traffic.rateLimit → localRateLimit (per replica) and remoteRateLimit (an Envoy rate limit
// service). Each global descriptor entry's expression is CEL. The conditional form gives each of them
// its conditional form (../conditional.ts); there a local entry is one token bucket, agentgateway's
// standalone form of it.
import { checkCel } from '@gw/api';
import { withConditional } from '../conditional.ts';
import { type At, defined, grpcAddress, lowerFirst, type MapContext, serviceCallTls } from '../context.ts';
import type { TrafficMapper, TrafficPolicies, TrafficSpec } from '../spec.ts';

export const rateLimit: TrafficMapper<'rateLimit'> = withConditional(
  {
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
          'url',
          'domain',
          'descriptors',
          'failureMode',
          'timeout',
        ]);
        rl.global.descriptors.forEach((d, di) => {
          ctx.rest(`${at.field}.global.descriptors[${di}]`, d, [
            'entries',
            'unit',
            'type',
            'cost',
            'limitOverride',
          ]);
          d.entries.forEach((e, ei) => {
            ctx.check(checkCel(e.expression, [...gp, 'descriptors', di, 'entries', ei, 'expression']));
          });
          for (const k of ['cost', 'limitOverride'] as const) {
            const expr = d[k];
            if (expr !== undefined) ctx.check(checkCel(expr, [...gp, 'descriptors', di, k]));
          }
        });
        const remote = remoteRateLimit(ctx, `${at.field}.global`, rl.global);
        if (remote) out.remoteRateLimit = remote;
      }
    },
  },
  {
    keys: ['localRateLimit', 'remoteRateLimit'],
    entryOf: (key, value, ctx, at) =>
      key === 'localRateLimit' ? bucket(value as LocalLimit[], ctx, at) : (value as object),
  },
);

type LocalLimit = NonNullable<NonNullable<TrafficSpec['rateLimit']>['local']>[number];
const UNIT_INTERVAL = { Seconds: '1s', Minutes: '1m', Hours: '1h' } as const;

/**
 * A conditional entry's local limits as the one token bucket the standalone's entry is: N per unit
 * plus burst holds N + burst and gets N back each unit, as the plain form's limit.
 */
function bucket(limits: LocalLimit[], ctx: MapContext, at: At) {
  const l = limits[0] as LocalLimit;
  if (limits.length > 1)
    ctx.problem(
      `${at.field}.local`,
      'a conditional entry takes one local limit in this build: only the first applies',
    );
  const n = l.requests ?? l.tokens ?? 0;
  return {
    maxTokens: n + (l.burst ?? 0),
    tokensPerFill: n,
    fillInterval: UNIT_INTERVAL[l.unit],
    type: l.requests !== undefined ? ('requests' as const) : ('tokens' as const),
  };
}

type GlobalRateLimitSpec = NonNullable<NonNullable<TrafficSpec['rateLimit']>['global']>;
type RemoteRateLimit = NonNullable<TrafficPolicies['remoteRateLimit']>;

function remoteRateLimit(
  ctx: MapContext,
  field: string,
  spec: GlobalRateLimitSpec,
): RemoteRateLimit | undefined {
  // A missing Service keeps the user's failureMode: FailClosed (the default) refuses, FailOpen is
  // what they asked for when the service cannot be reached.
  const svc = grpcAddress(ctx, field, spec);
  if (!svc) return undefined;
  return defined({
    host: svc.hostPort,
    ...serviceCallTls(ctx, `${field}.backendRef`, svc, spec.timeout),
    domain: spec.domain,
    descriptors: spec.descriptors.map((d) =>
      defined({
        entries: d.entries.map((e) => ({ key: e.name, value: e.expression })),
        type: lowerFirst(d.unit ?? d.type ?? 'Requests'),
        cost: d.cost,
        limitOverride: d.limitOverride,
      }),
    ),
    failureMode: lowerFirst(spec.failureMode),
    timeout: spec.timeout,
  });
}
