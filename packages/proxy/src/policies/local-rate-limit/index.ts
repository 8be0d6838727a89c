// localRateLimit: token buckets per route, exact across the workers of one proxy. Request limits take
// a token before forwarding; token limits (LLM usage) only check that budget is left, and debit the
// response's input+output tokens when it completes — so the request that crosses the limit succeeds,
// and later ones get 429 until the bucket refills. A limit with a `key` (CEL: `jwt.sub`) has a bucket
// per value of it (bucket.ts KeyedBuckets); a key that fails or is not a string, number or bool draws
// from the one bucket of requests without a key.
import { createHash } from 'node:crypto';
import type { LocalRateLimit } from '@gw/api';
import { parseGoDuration } from '@gw/api/runtime';
import { type CelProgram, compileCel } from '../../cel/cel.ts';
import { GwError } from '../../errors.ts';
import { onResponseUsage } from '../../llm/usage.ts';
import { withConditional } from '../conditional.ts';
import { hashes, keyOf } from '../limit-keys.ts';
import type { BuildEnv } from '../types.ts';
import { BUCKET_BYTES, type Fill, KEYED_BUCKET_BYTES, KeyedBuckets, SharedBucket } from './bucket.ts';

const UNIT_MS = { Seconds: 1000, Minutes: 60_000, Hours: 3_600_000 } as const;

interface Limit {
  kind: 'requests' | 'tokens';
  capacity: number;
  /** A limit without a key: one bucket. */
  bucket?: SharedBucket;
  /** A limit with a key (`jwt.sub`): a bucket per value of it. */
  keyed?: { table: KeyedBuckets; key: CelProgram };
}

/** A limit's key expression: the bucket form's `key` (the spec's form has none). */
const keyExpr = (l: LocalRateLimit): string | undefined =>
  'maxTokens' in l && typeof l.key === 'string' ? l.key : undefined;

export function normalizeLimit(l: LocalRateLimit): {
  kind: 'requests' | 'tokens';
  capacity: number;
  fill: Fill;
} {
  if ('maxTokens' in l) {
    const every = parseGoDuration(l.fillInterval) ?? 1000;
    return {
      kind: l.type ?? 'requests',
      capacity: l.maxTokens,
      fill: { tokens: l.tokensPerFill, everyMs: Math.max(1, every) },
    };
  }
  // the schema lets exactly one of requests and tokens through; `burst` more the first time, and
  // the unit's worth each unit after
  const perUnit = l.requests ?? l.tokens ?? 0;
  return {
    kind: l.requests !== undefined ? 'requests' : 'tokens',
    capacity: perUnit + (l.burst ?? 0),
    fill: { tokens: perUnit, everyMs: UNIT_MS[l.unit] },
  };
}

/** Shared-memory keys: stable while a route's limit is unchanged, so counters survive reloads. */
export function rateLimitKey(route: string, index: number, l: LocalRateLimit): string {
  return `${route}#${index}#${createHash('sha256').update(JSON.stringify(l)).digest('hex').slice(0, 12)}`;
}

interface Taken {
  ok: boolean;
  remaining: number;
  resetSeconds: number;
}

/** The rate limit headers of the tightest limit (`taken` from `limit`). */
function headers(limit: Limit, taken: Taken): Record<string, string> {
  const h: Record<string, string> = {
    'x-ratelimit-limit': String(limit.capacity),
    'x-ratelimit-remaining': String(taken.remaining),
  };
  // a bucket that never refills (tokensPerFill 0) has no reset to announce
  if (taken.resetSeconds >= 0) h['x-ratelimit-reset'] = String(taken.resetSeconds);
  return h;
}

// The conditional form's entry is one bucket: its own list of one.
export const localRateLimit = withConditional<'localRateLimit', LocalRateLimit[], LocalRateLimit>(
  {
    name: 'localRateLimit',
    build(config: LocalRateLimit[], env: BuildEnv) {
      const limits: Limit[] = config.map((l, i) => {
        const n = normalizeLimit(l);
        const memory = rateLimitKey(env.route, i, l);
        const key = keyExpr(l);
        if (key === undefined)
          return {
            kind: n.kind,
            capacity: n.capacity,
            bucket: new SharedBucket(env.shared(memory, BUCKET_BYTES), n.capacity, n.fill),
          };
        return {
          kind: n.kind,
          capacity: n.capacity,
          keyed: {
            table: new KeyedBuckets(env.shared(memory, KEYED_BUCKET_BYTES), n.capacity, n.fill),
            key: compileCel(key),
          },
        };
      });
      const keyed = limits.some((l) => l.keyed !== undefined);
      const tokenLimits = limits.flatMap((l, i) => (l.kind === 'tokens' ? [i] : []));
      const count = limits.length;
      return async (ctx, next) => {
        // each keyed limit's bucket, by the request as it is now (llm.* read on an LLM route)
        const cel = keyed ? ctx.celContext() : undefined;
        const keys: ([number, number] | undefined)[] | undefined = keyed ? [] : undefined;
        let refused: Limit | undefined;
        // the tightest limit is the one reported (the first of those with the fewest left)
        let tightest = limits[0] as Limit;
        let least: Taken | undefined;
        for (let i = 0; i < count; i++) {
          const l = limits[i] as Limit;
          const k = l.keyed && cel ? hashes(keyOf(l.keyed.key.eval(cel))) : undefined;
          if (keys) keys.push(k);
          let r: Taken;
          if (l.keyed && k) r = l.kind === 'requests' ? l.keyed.table.take(k, 1) : l.keyed.table.peek(k);
          else {
            const b = l.bucket as SharedBucket;
            r = l.kind === 'requests' ? b.take(1) : b.peek();
          }
          if (!r.ok) refused ??= l;
          if (least === undefined || r.remaining < least.remaining) {
            least = r;
            tightest = l;
          }
        }
        const h = headers(tightest, least as Taken);
        if (refused) {
          ctx.obs?.event(ctx, 'rateLimit', { limited: true, ...h }, null, 'warn');
          const code = refused.kind === 'tokens' ? 'GW_ERR_TOKEN_RATE_LIMITED' : 'GW_ERR_RATE_LIMITED';
          throw new GwError(code, undefined, { headers: h });
        }
        await next(ctx);
        if (ctx.response) Object.assign(ctx.response.headers, h);
        if (tokenLimits.length > 0) {
          onResponseUsage(ctx, (tokens) => {
            for (const i of tokenLimits) {
              const l = limits[i] as Limit;
              const k = keys?.[i];
              if (l.keyed && k) l.keyed.table.debit(k, tokens);
              else l.bucket?.debit(tokens);
            }
          });
        }
      };
    },
    sharedMemory: (config, env) =>
      config.map((l, i) => ({
        key: rateLimitKey(env.route, i, l),
        bytes: keyExpr(l) === undefined ? BUCKET_BYTES : KEYED_BUCKET_BYTES,
      })),
  },
  (entry) => [entry],
);
