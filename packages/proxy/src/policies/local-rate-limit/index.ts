// localRateLimit: token buckets per route, exact across the workers of one proxy. Request limits take
// a token before forwarding; token limits (LLM usage) only check that budget is left, and debit the
// response's input+output tokens when it completes — so the request that crosses the limit succeeds,
// and later ones get 429 until the bucket refills.
import { createHash } from 'node:crypto';
import type { LocalRateLimit } from '@gw/api';
import { parseGoDuration } from '@gw/api/runtime';
import { GwError } from '../../errors.ts';
import { onResponseUsage } from '../../llm/usage.ts';
import { withConditional } from '../conditional.ts';
import type { BuildEnv } from '../types.ts';
import { BUCKET_BYTES, SharedBucket } from './bucket.ts';

const UNIT_MS = { Seconds: 1000, Minutes: 60_000, Hours: 3_600_000 } as const;

interface Limit {
  kind: 'requests' | 'tokens';
  bucket: SharedBucket;
}

export function normalizeLimit(l: LocalRateLimit): {
  kind: 'requests' | 'tokens';
  capacity: number;
  refillPerMs: number;
} {
  if ('maxTokens' in l) {
    const every = parseGoDuration(l.fillInterval) ?? 1000;
    return {
      kind: l.type ?? 'requests',
      capacity: l.maxTokens,
      refillPerMs: l.tokensPerFill / Math.max(1, every),
    };
  }
  // the schema lets exactly one of requests and tokens through
  const perUnit = l.requests ?? l.tokens ?? 0;
  return {
    kind: l.requests !== undefined ? 'requests' : 'tokens',
    capacity: perUnit + (l.burst ?? 0),
    refillPerMs: perUnit / UNIT_MS[l.unit],
  };
}

/** Shared-memory keys: stable while a route's limit is unchanged, so counters survive reloads. */
export function rateLimitKey(route: string, index: number, l: LocalRateLimit): string {
  return `${route}#${index}#${createHash('sha256').update(JSON.stringify(l)).digest('hex').slice(0, 12)}`;
}

function headers(
  limits: Limit[],
  results: { remaining: number; resetSeconds: number }[],
): Record<string, string> {
  // Report the tightest limit.
  let i = 0;
  results.forEach((r, j) => {
    if (r.remaining < (results[i]?.remaining ?? Number.POSITIVE_INFINITY)) i = j;
  });
  const l = limits[i] as Limit;
  const r = results[i] as { remaining: number; resetSeconds: number };
  return {
    'x-ratelimit-limit': String(l.bucket.capacity),
    'x-ratelimit-remaining': String(r.remaining),
    'x-ratelimit-reset': String(r.resetSeconds),
  };
}

// The conditional form's entry is one bucket: its own list of one.
export const localRateLimit = withConditional<'localRateLimit', LocalRateLimit[], LocalRateLimit>(
  {
    name: 'localRateLimit',
    build(config: LocalRateLimit[], env: BuildEnv) {
      const limits: Limit[] = config.map((l, i) => {
        const n = normalizeLimit(l);
        return {
          kind: n.kind,
          bucket: new SharedBucket(
            env.shared(rateLimitKey(env.route, i, l), BUCKET_BYTES),
            n.capacity,
            n.refillPerMs,
          ),
        };
      });
      const tokenLimits = limits.filter((l) => l.kind === 'tokens');
      return async (ctx, next) => {
        const results = limits.map((l) => (l.kind === 'requests' ? l.bucket.take(1) : l.bucket.peek()));
        const h = headers(limits, results);
        if (results.some((r) => !r.ok)) {
          ctx.obs?.event(ctx, 'rateLimit', { limited: true, ...h }, null, 'warn');
          throw new GwError('GW_ERR_RATE_LIMITED', undefined, { headers: h });
        }
        await next(ctx);
        if (ctx.response) Object.assign(ctx.response.headers, h);
        if (tokenLimits.length > 0) {
          onResponseUsage(ctx, (tokens) => {
            for (const l of tokenLimits) l.bucket.debit(tokens);
          });
        }
      };
    },
    sharedMemory: (config, env) =>
      config.map((l, i) => ({ key: rateLimitKey(env.route, i, l), bytes: BUCKET_BYTES })),
  },
  (entry) => [entry],
);
