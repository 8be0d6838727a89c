// Runs a model's guards: the request's in order before the format pair converts it, the answer's on
// the client's JSON, and a stream's through the window handler (stream.ts). Every finding is recorded
// on the LLM slot (access log, metrics) and as a trace event; a rejection becomes the guard's answer
// in the client's error format.
import type { LlmGuardIR, LlmGuardsIR } from '../../config/ir.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import { answerTexts, requestTexts, type TextSlot, writeText } from '../formats/content.ts';
import type { JsonObject, StreamConverter } from '../formats/types.ts';
import type { LlmRequestState } from '../state.ts';
import { GUARD_KINDS } from './registry.ts';
import { rejection } from './rejection.ts';
import { GuardedStream } from './stream.ts';
import type { CompiledGuard, GuardFinding, GuardPhase } from './types.ts';

export interface ModelGuards {
  /** Runs the request guards on the body (client format); a mask writes copies, never the client's. */
  request(ctx: RequestContext, state: LlmRequestState, body: JsonObject): Promise<void>;
  /** Runs the response guards on a complete answer in the client's format; true when it changed. */
  response(ctx: RequestContext, state: LlmRequestState, body: JsonObject): Promise<boolean>;
  /** The converter's output watched by the response guards, or the converter itself when none apply. */
  stream(ctx: RequestContext, state: LlmRequestState, conv: StreamConverter): StreamConverter;
}

function compile(ir: LlmGuardIR): CompiledGuard {
  return (GUARD_KINDS[ir.kind] as { compile(ir: LlmGuardIR): CompiledGuard }).compile(ir);
}

export function record(ctx: RequestContext, state: LlmRequestState, f: GuardFinding): void {
  state.guardrails.push(f);
  ctx.obs?.event(
    ctx,
    'guardrail',
    {
      phase: f.phase,
      guard: f.guard,
      action: f.action,
      rule: f.rule,
      applied: f.applied,
      ...(f.phase === 'stream' && f.action === 'mask'
        ? { note: 'mask is not applied to streamed answers' }
        : {}),
    },
    null,
    f.action === 'reject' && f.applied ? 'warn' : 'info',
  );
}

async function run(
  ctx: RequestContext,
  state: LlmRequestState,
  guards: CompiledGuard[],
  phase: GuardPhase,
  body: JsonObject,
  slots: (g: CompiledGuard) => TextSlot[],
  owned: Set<object> | undefined,
): Promise<boolean> {
  let changed = false;
  for (const g of guards) {
    const s = slots(g);
    if (s.length === 0) continue;
    const v = await g.check(
      s.map((x) => x.text),
      phase,
    );
    if (v.action === 'pass') continue;
    const applied = v.action !== 'audit';
    record(ctx, state, { phase, guard: g.ir.name, action: v.action, rule: v.rule, applied });
    if (v.action === 'reject') throw rejection(g.ir);
    if (v.action === 'mask') {
      for (const [i, text] of v.texts) {
        const slot = s[i];
        if (slot) writeText(body, slot.path, text, owned);
      }
      changed = true;
    }
  }
  return changed;
}

export function compileGuards(ir: LlmGuardsIR | undefined): ModelGuards | undefined {
  if (!ir || ir.request.length + ir.response.length === 0) return undefined;
  const request = ir.request.map(compile);
  const response = ir.response.map(compile);
  const streamed = ir.streaming ? response.filter((g) => g.stream !== undefined) : [];
  return {
    async request(ctx, state, body) {
      if (request.length === 0) return;
      // The slots are read again after a mask: a guard sees what the guards before it left.
      const slots = (g: CompiledGuard) =>
        requestTexts(state.clientFormat, body).filter((x) => g.ir.scope.includes(x.scope));
      await run(ctx, state, request, 'request', body, slots, new Set<object>([body]));
    },
    async response(ctx, state, body) {
      if (response.length === 0) return false;
      return run(
        ctx,
        state,
        response,
        'response',
        body,
        () => answerTexts(state.clientFormat, body),
        undefined,
      );
    },
    stream(ctx, state, conv) {
      if (streamed.length === 0) return conv;
      return new GuardedStream(conv, streamed, state.clientFormat, (g, action, rule, applied) =>
        record(ctx, state, { phase: 'stream', guard: g.ir.name, action, rule, applied }),
      );
    },
  };
}
