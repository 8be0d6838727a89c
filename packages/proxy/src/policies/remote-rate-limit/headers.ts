// The response headers of a global rate limit check: the x-ratelimit-* trio built from the service's
// descriptor statuses the way Envoy builds them (draft-polli-ratelimit-headers-03: the limit carries the
// quota policy, e.g. `3, 3;w=60`), and the header lists the service itself asks to add.
import { HEADER_NAME_PATTERN } from '@gw/api/runtime';
import type { HeaderValue } from '@gw/xds-proto/envoy/config/core/v3/base';
import type { RateLimitResponse_DescriptorStatus } from '@gw/xds-proto/envoy/service/ratelimit/v3/rls';
import type { Headers } from '../../pipeline/context.ts';

/** Window length in seconds per RateLimitResponse.RateLimit.Unit (Envoy's: a month is 30 days). */
const WINDOW_SECONDS: Record<number, number> = {
  1: 1, // SECOND
  2: 60, // MINUTE
  3: 3_600, // HOUR
  4: 86_400, // DAY
  5: 2_592_000, // MONTH
  6: 31_536_000, // YEAR
  7: 604_800, // WEEK (newer protos)
};

/**
 * x-ratelimit-limit / -remaining / -reset for the descriptor closest to its limit; every limit the
 * service reported appears in the limit's quota policy. Empty when no status carries a limit.
 */
export function quotaHeaders(
  statuses: readonly RateLimitResponse_DescriptorStatus[],
): Record<string, string> {
  let tightest: RateLimitResponse_DescriptorStatus | undefined;
  let policy = '';
  for (const s of statuses) {
    const limit = s.currentLimit;
    if (!limit) continue;
    if (!tightest || s.limitRemaining < tightest.limitRemaining) tightest = s;
    const window = WINDOW_SECONDS[limit.unit];
    if (!window) continue;
    policy += `, ${limit.requestsPerUnit};w=${window}`;
    if (limit.name) policy += `;name="${limit.name.replace(/["\\\r\n]/g, '')}"`;
  }
  if (!tightest?.currentLimit) return {};
  const out: Record<string, string> = {
    'x-ratelimit-limit': `${tightest.currentLimit.requestsPerUnit}${policy}`,
    'x-ratelimit-remaining': String(tightest.limitRemaining),
  };
  if (tightest.durationUntilReset) out['x-ratelimit-reset'] = String(tightest.durationUntilReset.seconds);
  return out;
}

/** The service's header list as a map: later entries win; names that are not plain HTTP headers are skipped. */
export function serviceHeaders(list: readonly HeaderValue[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const h of list) {
    const key = h.key.toLowerCase();
    if (key.startsWith(':') || key === 'host' || !HEADER_NAME_PATTERN.test(key)) continue;
    const value = h.rawValue.length > 0 ? Buffer.from(h.rawValue).toString('latin1') : h.value;
    if (/[\r\n\0]/.test(value)) continue;
    out[key] = value;
  }
  return out;
}

/** Sets every header of `add` on `h`, replacing what was there. */
export function setHeaders(h: Headers, add: Record<string, string>): void {
  for (const [k, v] of Object.entries(add)) h[k] = v;
}
