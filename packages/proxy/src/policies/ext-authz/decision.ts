// What one external authorization check decided, the same for the gRPC and the HTTP form: allow
// (with the changes to make), deny (what the client gets), or failure (no decision: the failure mode
// picks what happens).
import type { GwError } from '../../errors.ts';
import type { Headers, ProxyResponse, RequestContext } from '../../pipeline/context.ts';
import type { CheckBody } from './request-body.ts';

/** Envoy's default for the ext_authz call: a slow authorization service must not stall every request. */
export const DEFAULT_TIMEOUT_MS = 200;

export type Decision =
  | {
      kind: 'allow';
      /** Applies the service's changes to the request (headers, query, `extauthz.*`). */
      apply(ctx: RequestContext): void;
      /** Changes to the response headers once there is a response. */
      onResponse: ((h: Headers) => void) | undefined;
    }
  | { kind: 'deny'; response: ProxyResponse | GwError; metadata: Record<string, unknown> | undefined }
  | { kind: 'failure'; reason: string };

/** `body`: the request body read for the check (includeRequestBody), when the config asks for it. */
export type Check = (ctx: RequestContext, body: CheckBody | undefined) => Promise<Decision>;

/** The check's own deadline, and the client's: whichever ends first cancels the call. */
export function deadline(ctx: RequestContext, timeoutMs: number): AbortSignal {
  return AbortSignal.any([ctx.signal, AbortSignal.timeout(timeoutMs)]);
}

export function failureReason(err: unknown, signal: AbortSignal, timeoutMs: number): string {
  if (signal.aborted && (signal.reason as Error | undefined)?.name === 'TimeoutError')
    return `no answer within ${timeoutMs}ms`;
  return (err as Error)?.message ?? String(err);
}
