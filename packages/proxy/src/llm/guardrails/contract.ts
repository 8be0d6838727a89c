// The guardrail contracts' zod schemas (@gw/guardrail-sdk), loaded when a config first compiles a
// webhook guard or an MCP processor: a worker that calls neither never builds them. Constants come
// from @gw/guardrail-sdk/wire, which has no schemas.
import { Lazy } from '../../lazy.ts';

export const guardrailContract = new Lazy(() => import('@gw/guardrail-sdk'));

/** Starts the load at compile time, so the first call does not wait for it. */
export function preloadGuardrailContract(): void {
  guardrailContract.ready.catch(() => {});
}
