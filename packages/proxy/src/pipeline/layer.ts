// A request flows through composed layers `(ctx, next) => …`, as in undici's dispatcher chain: each
// policy is one layer; the innermost handler calls the backend and leaves `ctx.response` set.
import { GwError } from '../errors.ts';
import type { RequestContext } from './context.ts';
import type { Observation, PolicyPhase, Stage } from './observer.ts';

export type Handler = (ctx: RequestContext) => Promise<void>;
export type Layer = (ctx: RequestContext, next: Handler) => Promise<void>;

/** Composes once at config compile time, so a request allocates no closures walking the chain. */
export function compose(layers: readonly Layer[], terminal: Handler): Handler {
  let next = terminal;
  for (let i = layers.length - 1; i >= 0; i--) {
    const layer = layers[i] as Layer;
    const inner = next;
    next = (ctx) => layer(ctx, inner);
  }
  return next;
}

/**
 * A layer that reports its outcome to the request's observers, and marks `after` (a stage of the
 * request) once it passes the request on. An unobserved request goes straight into the layer.
 */
export function observed(policy: string, phase: PolicyPhase, layer: Layer, after?: Stage): Layer {
  return (ctx, next) => {
    const obs = ctx.obs;
    if (obs === undefined) return layer(ctx, next);
    return runObserved(ctx, obs, policy, phase, layer, next, after);
  };
}

async function runObserved(
  ctx: RequestContext,
  obs: Observation,
  policy: string,
  phase: PolicyPhase,
  layer: Layer,
  next: Handler,
  after: Stage | undefined,
): Promise<void> {
  const start = performance.now();
  let passed = false;
  try {
    await layer(ctx, (c) => {
      passed = true;
      obs.policy(ctx, { policy, phase, outcome: 'passed', start });
      if (after) obs.stage(ctx, after);
      return next(c);
    });
  } catch (err) {
    if (!passed) {
      const e = err instanceof GwError ? err : undefined;
      obs.policy(ctx, {
        policy,
        phase,
        outcome: 'rejected',
        start,
        status: e?.status ?? 500,
        reason: e?.detail ?? String(err),
      });
    }
    throw err;
  }
  if (!passed)
    obs.policy(ctx, { policy, phase, outcome: 'responded', start, status: ctx.response?.status ?? null });
}
