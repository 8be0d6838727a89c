// remoteRateLimit: global limits, counted by an external service speaking Envoy's rate limit v3 API
// (envoyproxy/ratelimit with Redis). Each request sends the descriptors its CEL entries produce, each
// counting one hit or its `cost`, and with the limit its `limitOverride` names. OVER_LIMIT answers 429
// `rate limit exceeded` plus x-ext-ratelimited; OK forwards, and the x-ratelimit-* headers go on the
// response. No answer within the timeout (default 100ms) or an error: `failClosed` (the default, as
// agentgateway's) answers 500, `failOpen` forwards.
import { parseGoDuration } from '@gw/api/runtime';
import { type CelContext, type CelProgram, celToJson, compileCel } from '../../cel/cel.ts';
import { GwError } from '../../errors.ts';
import { Lazy } from '../../lazy.ts';
import { onResponseUsage } from '../../llm/usage.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import { withConditional } from '../conditional.ts';
import { serviceAuthOf, serviceHeadersOf } from '../service-call.ts';
import type { PolicyConfig } from '../types.ts';
import type { LimitOverride, RequestDescriptor } from './client.ts';
import { quotaHeaders, serviceHeaders, setHeaders } from './headers.ts';

/**
 * Envoy's default is 20ms; a Node event loop under load pauses for longer than that, and with the
 * fail-closed default a too-short deadline would turn requests into 500s.
 */
export const DEFAULT_TIMEOUT_MS = 100;

// grpc-js and the generated rate limit messages load with the first config that has a remote limit.
const rls = new Lazy(() => import('./client.ts'));

/** One rate limit service entry (the loader has sealed its TLS). */
export type RemoteRateLimit = Exclude<PolicyConfig<'remoteRateLimit'>, { conditional: unknown }>;

interface Descriptor {
  tokens: boolean;
  entries: { key: string; value: CelProgram }[];
  cost: CelProgram | undefined;
  limitOverride: CelProgram | undefined;
}
type Entries = { key: string; value: string }[];
/** A descriptor as this request sends it; a tokens one keeps its cost for when the response ends. */
export interface Built extends RequestDescriptor {
  tokens: boolean;
  cost: CelProgram | undefined;
}

/** The hits a descriptor's field on the wire carries at most (uint32 for the request's own). */
const MAX_HITS = 0xffff_ffff;

function compile(config: RemoteRateLimit): Descriptor[] {
  return config.descriptors.map((d) => ({
    tokens: d.type === 'tokens',
    entries: d.entries.map((e) => ({ key: e.key, value: compileCel(e.value) })),
    cost: d.cost === undefined ? undefined : compileCel(d.cost),
    limitOverride: d.limitOverride === undefined ? undefined : compileCel(d.limitOverride),
  }));
}

/** A CEL result as a descriptor value: scalars only; anything else counts as a failed evaluation. */
function celString(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (typeof v === 'bigint' || typeof v === 'boolean') return String(v);
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  return undefined;
}

/** A CEL result as a count of hits: a whole number from 0 up, an int or an integral double. */
export function celCount(v: unknown): number | undefined {
  const n = typeof v === 'bigint' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0) return undefined;
  return Math.min(n, MAX_HITS);
}

const UNITS = new Set<string>(['second', 'minute', 'hour', 'day', 'month', 'year']);

/** A limitOverride result: `{unit, requestsPerUnit}`, the unit any case; anything else is a failure. */
export function celLimitOverride(v: unknown): LimitOverride | undefined {
  const j = celToJson(v);
  if (j === null || typeof j !== 'object' || Array.isArray(j)) return undefined;
  const { unit, requestsPerUnit } = j as Record<string, unknown>;
  if (typeof unit !== 'string' || !UNITS.has(unit.toLowerCase())) return undefined;
  const n = celCount(requestsPerUnit);
  if (n === undefined) return undefined;
  return { unit: unit.toLowerCase() as LimitOverride['unit'], requestsPerUnit: n };
}

/**
 * The descriptors this request produces. One whose entry, cost or limit fails to evaluate is left out
 * whole, as Envoy does. A requests descriptor counts its cost now; a tokens one asks with one hit and
 * is debited once the response ends.
 */
function evaluate(descriptors: readonly Descriptor[], cel: CelContext): Built[] {
  const out: Built[] = [];
  next: for (const d of descriptors) {
    const entries: Entries = [];
    for (const e of d.entries) {
      const value = celString(e.value.eval(cel));
      if (value === undefined) continue next;
      entries.push({ key: e.key, value });
    }
    const b: Built = { tokens: d.tokens, entries, cost: d.tokens ? d.cost : undefined };
    if (d.limitOverride) {
      const limit = celLimitOverride(d.limitOverride.eval(cel));
      if (!limit) continue;
      b.limit = limit;
    }
    if (d.cost && !d.tokens) {
      const hits = celCount(d.cost.eval(cel));
      if (hits === undefined) continue;
      b.hits = hits;
    }
    out.push(b);
  }
  return out;
}

/**
 * What the token descriptors still owe once the response ended: their cost (the usage's total unless
 * a cost expression says otherwise) less the one hit the check took. Those that owe nothing are left out.
 */
function debits(built: readonly Built[], tokens: number, cel: () => CelContext): RequestDescriptor[] {
  const out: RequestDescriptor[] = [];
  const context = built.some((d) => d.tokens && d.cost) ? cel() : undefined;
  for (const d of built) {
    if (!d.tokens) continue;
    const cost = d.cost && context ? celCount(d.cost.eval(context)) : Math.floor(tokens);
    if (cost === undefined || cost <= 1) continue;
    out.push({ entries: d.entries, limit: d.limit, hits: Math.min(cost - 1, MAX_HITS) });
  }
  return out;
}

/** What one check against the service decided. */
export type LimitOutcome =
  /** No descriptor to count the request under: no call was made. */
  | { kind: 'skipped' }
  /** No verdict (unreachable, too slow, an answer without one); `failOpen` says what to do. */
  | { kind: 'failed'; reason: string }
  /** Over the limit; the headers for the client's 429. */
  | { kind: 'limited'; headers: Record<string, string> }
  /** Within the limit: the headers for the response, and those the service adds to the request. */
  | {
      kind: 'ok';
      headers: Record<string, string>;
      requestHeaders: Record<string, string>;
      /** Token descriptors owe their cost once the response ends (`debit`). */
      built: Built[];
    };

/** What a check means for the request, once its trace event is recorded. */
export type LimitDecision =
  /** Go on: nothing to count, a failure the mode lets through, or within the limit (`ok`). */
  | { kind: 'pass'; ok?: Extract<LimitOutcome, { kind: 'ok' }> }
  /** Over the limit: the headers for the refusal. */
  | { kind: 'limited'; headers: Record<string, string> }
  /** The service gave no verdict and the mode is failClosed. */
  | { kind: 'unavailable' };

export interface RemoteLimiter {
  readonly failOpen: boolean;
  /** `ctx`: the request the check is for (a credential obtained per call is obtained for it). */
  check(cel: CelContext, signal: AbortSignal | undefined, ctx?: RequestContext): Promise<LimitOutcome>;
  /**
   * `check`, its outcome recorded as the request's `rateLimit` trace event (with `tag`'s fields) and
   * a failure decided by the failure mode.
   */
  decide(
    ctx: RequestContext,
    cel: CelContext,
    signal: AbortSignal | undefined,
    tag?: Record<string, unknown>,
  ): Promise<LimitDecision>;
  /** Counts the rest of the token descriptors' cost once a response has ended with `tokens`. */
  debit(built: readonly Built[], tokens: number, cel: () => CelContext, ctx?: RequestContext): void;
}

/**
 * A rate limit service's checks for one config. `requestsOnly`: token descriptors are left out (an
 * MCP call has no LLM usage to count).
 */
export function remoteLimiter(config: RemoteRateLimit, requestsOnly = false): RemoteLimiter {
  // agentgateway's default: a limit that cannot be checked refuses (its CRD's FailClosed too)
  const failOpen = config.failureMode?.toLowerCase() === 'failopen';
  const timeoutMs = (config.timeout && parseGoDuration(config.timeout)) || DEFAULT_TIMEOUT_MS;
  const descriptors = compile(config).filter((d) => !(requestsOnly && d.tokens));
  const { domain } = config;
  // The channel connects as soon as the module is in, so the first request does not pay for it.
  // the loader has put a named backend's address, or a Service's workloads', in `host`
  // (config/load.ts serviceBackends)
  const host = config.host as string;
  const tls = config.policies?.backendTLS;
  const callHeaders = serviceHeadersOf(config.policies);
  const auth = serviceAuthOf(config.policies);
  /** The call's headers: the service's own, and the credential obtained for `ctx`. */
  const headersFor = async (ctx: RequestContext | undefined) =>
    auth && ctx ? { ...callHeaders, ...(await auth(ctx)) } : callHeaders;
  const service = rls.derive((m) => ({ m, client: m.rateLimitClient(host, tls) }));
  const limiter: RemoteLimiter = {
    failOpen,
    async decide(ctx, cel, signal, tag = {}) {
      const start = ctx.obs ? performance.now() : null;
      const outcome = await limiter.check(cel, signal, ctx);
      const event = (fields: Record<string, unknown>, level?: 'warn') =>
        ctx.obs?.event(ctx, 'rateLimit', { global: true, ...tag, ...fields }, start, level);
      switch (outcome.kind) {
        case 'skipped':
          event({ result: 'skipped' });
          return { kind: 'pass' };
        case 'failed':
          event({ result: 'failure', reason: outcome.reason, failOpen }, 'warn');
          return failOpen ? { kind: 'pass' } : { kind: 'unavailable' };
        case 'limited':
          event({ limited: true, ...outcome.headers }, 'warn');
          return { kind: 'limited', headers: outcome.headers };
        default:
          event({ limited: false, ...outcome.headers });
          return { kind: 'pass', ok: outcome };
      }
    },
    async check(cel, signal, ctx) {
      const built = evaluate(descriptors, cel);
      if (built.length === 0) return { kind: 'skipped' };
      const { m, client } = service.value ?? (await service.ready);
      const { Code } = m;
      let sent: Record<string, string> | undefined;
      try {
        sent = await headersFor(ctx);
      } catch (err) {
        return { kind: 'failed', reason: `backendAuth: ${(err as Error).message}` };
      }
      const outcome = await m.shouldRateLimit(
        client,
        m.rateLimitRequest(domain, built, 1),
        timeoutMs,
        signal,
        sent,
      );
      // An answer without a verdict (UNKNOWN) is no decision either.
      const verdict = outcome.ok ? outcome.response.overallCode : Code.UNKNOWN;
      if (!outcome.ok || verdict === Code.UNKNOWN)
        return { kind: 'failed', reason: outcome.ok ? 'answer without an overall code' : outcome.reason };
      const res = outcome.response;
      // The service's own headers first; the quota headers built from its statuses win on a clash,
      // since they carry the window (`3, 3;w=60`) where the service sends only the number.
      const headers = { ...serviceHeaders(res.responseHeadersToAdd), ...quotaHeaders(res.statuses) };
      if (verdict === Code.OVER_LIMIT) return { kind: 'limited', headers };
      return { kind: 'ok', headers, requestHeaders: serviceHeaders(res.requestHeadersToAdd), built };
    },
    debit(built, tokens, cel, ctx) {
      const owed = debits(built, tokens, cel);
      if (owed.length === 0) return;
      const { m, client } = service.value ?? {};
      if (!m || !client) return;
      // what cannot be sent (no credential) is not counted, as an answer that never comes is not
      headersFor(ctx)
        .then((headers) =>
          m.shouldRateLimit(
            client,
            m.rateLimitRequest(domain, owed, 1),
            Math.max(timeoutMs, 1_000),
            undefined,
            headers,
          ),
        )
        .catch(() => undefined);
    },
  };
  return limiter;
}

export const remoteRateLimit = withConditional({
  name: 'remoteRateLimit',
  build(config: RemoteRateLimit) {
    const limiter = remoteLimiter(config);
    return async (ctx, next) => {
      const d = await limiter.decide(ctx, ctx.celContext(), ctx.signal);
      if (d.kind === 'unavailable') throw new GwError('GW_ERR_INTERNAL', 'rate limit service unavailable');
      if (d.kind === 'limited')
        throw new GwError('GW_ERR_RATE_LIMITED', undefined, {
          headers: { ...d.headers, 'x-ext-ratelimited': 'true' },
        });
      const outcome = d.ok;
      // nothing counted (no descriptor, or a failure let through)
      if (!outcome) return next(ctx);
      const { headers } = outcome;
      setHeaders(ctx.headers, outcome.requestHeaders);
      await next(ctx);
      if (ctx.response) setHeaders(ctx.response.headers, headers);
      const { built } = outcome;
      if (!built.some((d) => d.tokens)) return;
      // Token limits: the check above took one hit to ask; the rest of the cost is counted once the
      // response ends, so the request that crosses the limit succeeds and later ones get 429.
      onResponseUsage(ctx, (tokens) => limiter.debit(built, tokens, () => ctx.celContext(), ctx));
    };
  },
});
