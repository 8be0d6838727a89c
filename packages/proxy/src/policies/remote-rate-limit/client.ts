// The gateway's side of Envoy's rate limit service v3 (`envoy.service.ratelimit.v3.RateLimitService/
// ShouldRateLimit`): one unary call per check over protobuf-es messages, with its own deadline.
import { create } from '@bufbuild/protobuf';
import { type Client, Metadata, type ServiceError, status } from '@grpc/grpc-js';
import {
  RateLimitResponse_Code as Code,
  type RateLimitRequest,
  RateLimitRequestSchema,
  type RateLimitResponse,
  RateLimitService,
} from '@gw/xds-proto/envoy/service/ratelimit/v3/rls';

export { Code };

import { RateLimitUnit } from '@gw/xds-proto/envoy/type/v3/ratelimit_unit';
import { grpcMethod } from '@gw/xds-proto/grpc';
import type { BackendTlsIR } from '../../config/ir.ts';
import { grpcClient } from '../grpc-client.ts';

const method = grpcMethod(RateLimitService.method.shouldRateLimit);
export const SHOULD_RATE_LIMIT_PATH = method.path;
const serialize = method.requestSerialize;
const deserialize = method.responseDeserialize;

/** The channel to the service at `host`, plain or with `tls` (connected now). */
export function rateLimitClient(host: string, tls?: BackendTlsIR): Client {
  return grpcClient(host, tls, true);
}

/** A limit the service applies instead of the one in its own config for the descriptor. */
export interface LimitOverride {
  unit: 'second' | 'minute' | 'hour' | 'day' | 'month' | 'year';
  requestsPerUnit: number;
}

/** One descriptor of a request: its entries, its own hit count (unset: the request's) and limit. */
export interface RequestDescriptor {
  entries: { key: string; value: string }[];
  hits?: number | undefined;
  limit?: LimitOverride | undefined;
}

const UNIT: Record<LimitOverride['unit'], RateLimitUnit> = {
  second: RateLimitUnit.SECOND,
  minute: RateLimitUnit.MINUTE,
  hour: RateLimitUnit.HOUR,
  day: RateLimitUnit.DAY,
  month: RateLimitUnit.MONTH,
  year: RateLimitUnit.YEAR,
};

/**
 * A ShouldRateLimit request: `hitsAddend` hits against each descriptor that names none of its own
 * (the descriptor's `hits_addend`, which may be 0: a check that counts nothing).
 */
export function rateLimitRequest(
  domain: string,
  descriptors: readonly RequestDescriptor[],
  hitsAddend: number,
): RateLimitRequest {
  return create(RateLimitRequestSchema, {
    domain,
    descriptors: descriptors.map((d) => ({
      entries: d.entries,
      ...(d.hits === undefined ? {} : { hitsAddend: BigInt(d.hits) }),
      ...(d.limit ? { limit: { unit: UNIT[d.limit.unit], requestsPerUnit: d.limit.requestsPerUnit } } : {}),
    })),
    hitsAddend,
  });
}

/** The service's answer, or why there is none (for the failure mode and the trace). */
export type Outcome = { ok: true; response: RateLimitResponse } | { ok: false; reason: string };

export function shouldRateLimit(
  client: Client,
  req: RateLimitRequest,
  timeoutMs: number,
  signal?: AbortSignal,
  headers?: Record<string, string>,
): Promise<Outcome> {
  const metadata = new Metadata();
  for (const [k, v] of Object.entries(headers ?? {})) metadata.set(k, v);
  return new Promise((resolve) => {
    const call = client.makeUnaryRequest(
      SHOULD_RATE_LIMIT_PATH,
      serialize,
      deserialize,
      req,
      metadata,
      { deadline: Date.now() + timeoutMs },
      (err: ServiceError | null, res?: RateLimitResponse) => {
        signal?.removeEventListener('abort', cancel);
        if (res && !err) return resolve({ ok: true, response: res });
        const reason =
          err?.code === status.DEADLINE_EXCEEDED
            ? `no answer within ${timeoutMs}ms`
            : (err?.details ?? err?.message ?? 'empty response');
        resolve({ ok: false, reason });
      },
    );
    // The client went away: the answer is no longer needed.
    const cancel = () => call.cancel();
    signal?.addEventListener('abort', cancel, { once: true });
  });
}
