// retry: re-sends a request whose attempt failed to connect, was reset before a response, got one of
// `codes`, or got a response its `condition` (CEL) holds for, up to `attempts` more times with
// exponential backoff from `backoff`. A request body is kept in memory for replay up to the buffer
// limit; a larger body is streamed once, without retries. A `precondition` (CEL) that does not hold
// for the request turns retries off before anything is kept.
import { setTimeout as sleep } from 'node:timers/promises';
import { parseByteSize, parseGoDuration } from '@gw/api/runtime';
import { celTrue, compileCel } from '../../cel/cel.ts';
import { GwError } from '../../errors.ts';
import { bufferForReplay, discard } from '../../pipeline/body.ts';
import type { PolicyDefinition } from '../types.ts';

declare module '../../pipeline/context.ts' {
  interface RequestExtensions {
    /** The retry the request's answer came from (1: the first retry); unset when the first try did. */
    retryAttempt?: number;
  }
}

/**
 * Failures tried again: no connection, a reset, and an attempt that ran out of its own time
 * (backendRequestTimeout) before the backend answered, as agentgateway and Envoy's per-try timeout
 * retry it; the request's own deadline (requestTimeout) ends every attempt.
 */
const RETRIABLE_ERRORS = new Set([
  'GW_ERR_UPSTREAM_CONNECT',
  'GW_ERR_UPSTREAM_RESET',
  'GW_ERR_BACKEND_TIMEOUT',
]);
const MAX_BACKOFF_MS = 10_000;

export const retry: PolicyDefinition<'retry'> = {
  name: 'retry',
  build(config, env) {
    const retries = config.attempts ?? 1;
    const codes = new Set(config.codes);
    const backoff = config.backoff ? (parseGoDuration(config.backoff) ?? 0) : 25;
    const bufferLimit =
      env.policies.buffer?.request?.maxBytes !== undefined
        ? (parseByteSize(env.policies.buffer.request.maxBytes) ?? env.global.maxBufferSize)
        : env.global.maxBufferSize;
    const precondition = config.precondition === undefined ? undefined : compileCel(config.precondition);
    const condition = config.condition === undefined ? undefined : compileCel(config.condition);
    return async (ctx, next) => {
      // Not retriable: one attempt, its body streamed as it comes.
      if (precondition && !celTrue(precondition, ctx.celContext())) return next(ctx);
      const replayable = await bufferForReplay(ctx, bufferLimit);
      for (let attempt = 0; ; attempt++) {
        const last = !replayable || attempt >= retries;
        if (attempt > 0) ctx.ext.retryAttempt = attempt;
        try {
          await next(ctx);
        } catch (err) {
          if (
            last ||
            !(err instanceof GwError) ||
            !RETRIABLE_ERRORS.has(err.code) ||
            ctx.abortReason !== undefined
          )
            throw err;
          await wait(attempt, backoff, ctx.signal);
          continue;
        }
        const res = ctx.response;
        if (last || !res) return;
        if (!codes.has(res.status) && !(condition && celTrue(condition, ctx.celContext()))) return;
        // Discard this attempt's body before trying again.
        discard(res.body);
        ctx.response = undefined;
        await wait(attempt, backoff, ctx.signal);
      }
    };
  },
};

async function wait(attempt: number, base: number, signal: AbortSignal): Promise<void> {
  const ms = Math.min(MAX_BACKOFF_MS, base * 2 ** attempt);
  // Full jitter keeps a fleet of clients from retrying in lock-step.
  const jittered = ms / 2 + Math.random() * (ms / 2);
  try {
    await sleep(jittered, undefined, { signal });
  } catch {
    throw signal.reason;
  }
}
