// remoteRateLimit: global limits, counted by an external service speaking Envoy's rate limit v3 API
// (envoyproxy/ratelimit with Redis). Each request sends the descriptors its CEL entries produce, with
// hits_addend 1. OVER_LIMIT answers 429 `rate limit exceeded` plus x-ext-ratelimited; OK forwards, and
// the x-ratelimit-* headers go on the response. No answer within the timeout (default 100ms) or an
// error: `failOpen` (the default, as Envoy's failure_mode_deny=false) forwards, `failClosed` answers 500.
import type { RemoteRateLimit } from '@gw/api';
import { parseGoDuration } from '@gw/api/runtime';
import { type CelContext, type CelProgram, compileCel } from '../../cel/cel.ts';
import { GwError } from '../../errors.ts';
import { Lazy } from '../../lazy.ts';
import { onResponseUsage } from '../../llm/usage.ts';
import { withConditional } from '../conditional.ts';
import { quotaHeaders, serviceHeaders, setHeaders } from './headers.ts';

/**
 * Envoy's default is 20ms; a Node event loop under load pauses for longer than that, and with the
 * fail-open default a too-short deadline would quietly stop limiting.
 */
export const DEFAULT_TIMEOUT_MS = 100;

// grpc-js and the generated rate limit messages load with the first config that has a remote limit.
const rls = new Lazy(() => import('./client.ts'));

interface Descriptor {
  tokens: boolean;
  entries: { key: string; value: CelProgram }[];
}
type Entries = { key: string; value: string }[];

function compile(config: RemoteRateLimit): Descriptor[] {
  return config.descriptors.map((d) => ({
    tokens: d.type === 'tokens',
    entries: d.entries.map((e) => ({ key: e.key, value: compileCel(e.value) })),
  }));
}

/** A CEL result as a descriptor value: scalars only; anything else counts as a failed evaluation. */
function celString(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (typeof v === 'bigint' || typeof v === 'boolean') return String(v);
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  return undefined;
}

/** The descriptors this request produces; one whose entry fails to evaluate is left out whole, as Envoy does. */
function evaluate(
  descriptors: readonly Descriptor[],
  cel: CelContext,
): { tokens: boolean; entries: Entries }[] {
  const out: { tokens: boolean; entries: Entries }[] = [];
  next: for (const d of descriptors) {
    const entries: Entries = [];
    for (const e of d.entries) {
      const value = celString(e.value.eval(cel));
      if (value === undefined) continue next;
      entries.push({ key: e.key, value });
    }
    out.push({ tokens: d.tokens, entries });
  }
  return out;
}

export const remoteRateLimit = withConditional({
  name: 'remoteRateLimit',
  build(config: RemoteRateLimit) {
    const failOpen = config.failureMode?.toLowerCase() !== 'failclosed';
    const timeoutMs = (config.timeout && parseGoDuration(config.timeout)) || DEFAULT_TIMEOUT_MS;
    const descriptors = compile(config);
    const { domain } = config;
    // The channel connects as soon as the module is in, so the first request does not pay for it.
    // the loader has put a named backend's address in `host` (config/load.ts serviceBackends)
    const host = config.host as string;
    const service = rls.derive((m) => ({ m, client: m.rateLimitClient(host) }));
    return async (ctx, next) => {
      const start = ctx.obs ? performance.now() : null;
      const built = evaluate(descriptors, ctx.celContext());
      // Nothing to count this request under: no call.
      if (built.length === 0) {
        ctx.obs?.event(ctx, 'rateLimit', { global: true, result: 'skipped' }, start);
        return next(ctx);
      }
      const { m, client } = service.value ?? (await service.ready);
      const { Code } = m;
      const outcome = await m.shouldRateLimit(
        client,
        m.rateLimitRequest(domain, built, 1),
        timeoutMs,
        ctx.signal,
      );
      // An answer without a verdict (UNKNOWN) is no decision either.
      const verdict = outcome.ok ? outcome.response.overallCode : Code.UNKNOWN;
      if (!outcome.ok || verdict === Code.UNKNOWN) {
        const reason = outcome.ok ? 'answer without an overall code' : outcome.reason;
        ctx.obs?.event(
          ctx,
          'rateLimit',
          { global: true, result: 'failure', reason, failOpen },
          start,
          'warn',
        );
        if (!failOpen) throw new GwError('GW_ERR_INTERNAL', 'rate limit service unavailable');
        return next(ctx);
      }
      const res = outcome.response;
      // The service's own headers first; the quota headers built from its statuses win on a clash,
      // since they carry the window (`3, 3;w=60`) where the service sends only the number.
      const headers = { ...serviceHeaders(res.responseHeadersToAdd), ...quotaHeaders(res.statuses) };
      if (verdict === Code.OVER_LIMIT) {
        ctx.obs?.event(ctx, 'rateLimit', { global: true, limited: true, ...headers }, start, 'warn');
        throw new GwError('GW_ERR_RATE_LIMITED', undefined, {
          headers: { ...headers, 'x-ext-ratelimited': 'true' },
        });
      }
      setHeaders(ctx.headers, serviceHeaders(res.requestHeadersToAdd));
      ctx.obs?.event(ctx, 'rateLimit', { global: true, limited: false, ...headers }, start);
      await next(ctx);
      if (ctx.response) setHeaders(ctx.response.headers, headers);
      const tokenDescriptors = built.filter((d) => d.tokens);
      if (tokenDescriptors.length === 0) return;
      // Token limits: the check above took one token to ask; the rest of the usage is counted once the
      // response ends, so the request that crosses the limit succeeds and later ones get 429.
      onResponseUsage(ctx, (tokens) => {
        if (tokens <= 1) return;
        const debit = m.rateLimitRequest(
          domain,
          tokenDescriptors,
          Math.min(Math.floor(tokens) - 1, 0xffff_ffff),
        );
        void m.shouldRateLimit(client, debit, Math.max(timeoutMs, 1_000));
      });
    };
  },
});
