// extAuthz `cache` (agentgateway's): an allowed answer reused for the requests whose key — the values
// of the key expressions — is the same, until the ttl the `ttl` expression gives once the answer is
// applied (a duration, a timestamp, or Unix seconds). Only allowed answers are kept: a denial
// or a failure asks again. The oldest entry goes first when the cache is full.
import { type CelProgram, compileCel } from '../../cel/cel.ts';
import type { ExtAuthzIR } from '../../config/ir.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import type { Decision } from './decision.ts';

type Allowed = Extract<Decision, { kind: 'allow' }>;
const DEFAULT_MAX_ENTRIES = 10_000;

export interface DecisionCache {
  /** The request's key; undefined when an expression has no value (the request is not cached). */
  keyOf(ctx: RequestContext): string | undefined;
  get(key: string): Allowed | undefined;
  /** Keeps `d` for the ttl the request now gives (after `d` was applied); a ttl of none or ≤ 0 keeps nothing. */
  put(key: string, d: Allowed, ctx: RequestContext): void;
}

export function decisionCache(c: NonNullable<ExtAuthzIR['cache']>): DecisionCache | undefined {
  const max = c.maxEntries ?? DEFAULT_MAX_ENTRIES;
  if (max === 0 || c.key.length === 0) return undefined;
  const keys = c.key.map((k) => compileCel(k));
  const ttl = compileCel(c.ttl);
  const entries = new Map<string, { d: Allowed; until: number }>();
  return {
    keyOf(ctx) {
      const cel = ctx.celContext();
      const values: unknown[] = [];
      for (const k of keys) {
        const v = k.eval(cel);
        if (v === undefined) return undefined;
        values.push(
          typeof v === 'bigint' ? `${v}n` : v instanceof Uint8Array ? Buffer.from(v).toString('base64') : v,
        );
      }
      return JSON.stringify(values, (_k, v) => (v instanceof Map ? Object.fromEntries(v) : v));
    },
    get(key) {
      const e = entries.get(key);
      if (!e) return undefined;
      if (Date.now() >= e.until) {
        entries.delete(key);
        return undefined;
      }
      return e.d;
    },
    put(key, d, ctx) {
      const until = untilOf(ttl, ctx);
      if (until === undefined || until <= Date.now()) return;
      entries.delete(key);
      if (entries.size >= max) entries.delete(entries.keys().next().value as string);
      entries.set(key, { d, until });
    },
  };
}

/**
 * When the answer stops being reused: a duration from now, or a time — a timestamp, or a number of
 * seconds since the Unix epoch (as a JWT's `exp`), as agentgateway reads them.
 */
function untilOf(ttl: CelProgram, ctx: RequestContext): number | undefined {
  const v = ttl.eval(ctx.celContext());
  if (v instanceof Date) return v.getTime();
  if (typeof v === 'number' || typeof v === 'bigint') return Number(v) * 1000;
  if (v && typeof v === 'object' && 'seconds' in v) {
    const d = v as { seconds: number | bigint; nanos?: number | bigint };
    return Date.now() + Number(d.seconds) * 1000 + Number(d.nanos ?? 0) / 1e6;
  }
  return undefined;
}
