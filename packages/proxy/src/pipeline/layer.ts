// A request flows through composed layers `(ctx, next) => …`, as in undici's dispatcher chain: each
// policy is one layer; the innermost handler calls the backend and leaves `ctx.response` set.
import type { RequestContext } from './context.ts';

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
