// Runs a model's guards: the request's in order before the format pair converts it, the answer's on
// the client's JSON, and a stream's through the regex scanner (stream.ts) and the service guards'
// windows (stream-windows.ts). Every finding is recorded
// on the LLM slot (access log, metrics) and as a trace event; a rejection becomes the guard's answer
// in the client's error format.
import type { LlmGuardIR, LlmGuardsIR } from '../../config/ir.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import {
  answerMessages,
  answerTexts,
  type MessageTexts,
  requestMessageList,
  requestMessages,
  requestTexts,
  type TextSlot,
  writeMessageContent,
  writeText,
} from '../formats/content.ts';
import type { JsonObject, StreamConverter } from '../formats/types.ts';
import type { LlmRequestState } from '../state.ts';
import { GUARD_KINDS } from './registry.ts';
import { rejection, serviceFailure, serviceRejection } from './rejection.ts';
import { GuardedStream } from './stream.ts';
import { StreamWindows, type WindowSink } from './stream-windows.ts';
import type {
  CompiledGuard,
  GuardEnv,
  GuardFinding,
  GuardPhase,
  GuardRequest,
  GuardVerdict,
} from './types.ts';

/** A streamed answer's guards: the regex scanner over the converter, the service guards' windows. */
export interface StreamGuards {
  /** The converter's output, scanned by the regex guards (the converter itself when none apply). */
  conv: StreamConverter;
  /** Whether a regex guard ended the stream (its error event is in the converter's output). */
  rejected(): boolean;
  /** The service guards' windows over `conv`'s output, sending to `sink`; undefined when none apply. */
  windows(sink: Omit<WindowSink, 'finding'>): StreamWindows | undefined;
}

export interface ModelGuards {
  /** The client's request as the guards need it later; call before the request is rewritten. */
  snapshot(ctx: RequestContext): GuardRequest;
  /** Runs the request guards on the body (client format); a mask writes copies, never the client's. */
  request(ctx: RequestContext, state: LlmRequestState, body: JsonObject, req: GuardRequest): Promise<void>;
  /** Runs the response guards on a complete answer in the client's format; true when it changed. */
  response(
    ctx: RequestContext,
    state: LlmRequestState,
    body: JsonObject,
    req: GuardRequest,
  ): Promise<boolean>;
  /**
   * The guards of a realtime session (`streaming`): those that decide at once, each way, and the
   * names of those that would need a service (which a session cannot wait for); undefined when
   * `streaming` is off or no guard applies.
   */
  realtime(): { request: CompiledGuard[]; response: CompiledGuard[]; needService: string[] } | undefined;
  /** The response guards over a streamed answer (`streaming`), or undefined when none apply. */
  stream(
    ctx: RequestContext,
    state: LlmRequestState,
    conv: StreamConverter,
    req: GuardRequest,
  ): StreamGuards | undefined;
}

function compile(ir: LlmGuardIR, env: GuardEnv): CompiledGuard {
  const g = (GUARD_KINDS[ir.kind] as { compile(ir: LlmGuardIR, env: GuardEnv): CompiledGuard }).compile(
    ir,
    env,
  );
  return ir.audit ? audited(g) : g;
}

/**
 * A guard whose verdicts are only recorded (action: audit, for kinds without an audit of their own):
 * what it would reject or mask is an audit finding, and a failed call never closes.
 */
function audited(g: CompiledGuard): CompiledGuard {
  const asAudit = (v: GuardVerdict): GuardVerdict =>
    v.action === 'reject' || v.action === 'mask'
      ? { action: 'audit', rule: v.rule }
      : v.action === 'error'
        ? { ...v, closed: false }
        : v;
  // a check that throws is a failure like any other: recorded, never closing
  const failed = (err: unknown): GuardVerdict => ({
    action: 'error',
    rule: err instanceof Error ? err.message : String(err),
    closed: false,
  });
  return {
    ...g,
    audits: true,
    check: (input) => {
      let v: GuardVerdict | Promise<GuardVerdict>;
      try {
        v = g.check(input);
      } catch (err) {
        return failed(err);
      }
      return v instanceof Promise ? v.then(asAudit, failed) : asAudit(v);
    },
  };
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
    (f.action === 'reject' || f.action === 'error') && f.applied ? 'warn' : 'info',
  );
}

interface Phase {
  name: GuardPhase;
  body: JsonObject;
  slots(g: CompiledGuard): TextSlot[];
  messages(g: CompiledGuard): MessageTexts[];
  owned: Set<object> | undefined;
  request: GuardRequest;
  llmRequest?: JsonObject;
  /** The request's own message list, and how a new one replaces it (request phase). */
  list?: { read(): unknown[] | undefined; replace(list: unknown[]): void };
}

async function run(
  ctx: RequestContext,
  state: LlmRequestState,
  guards: CompiledGuard[],
  p: Phase,
): Promise<boolean> {
  let changed = false;
  for (const g of guards) {
    const s = p.slots(g);
    if (s.length === 0) continue;
    let msgs: MessageTexts[] | undefined;
    const messages = () => {
      msgs ??= p.messages(g);
      return msgs;
    };
    const v = await g.check({
      phase: p.name,
      texts: s.map((x) => x.text),
      messages,
      request: p.request,
      ...(p.llmRequest ? { llmRequest: p.llmRequest } : {}),
      ...(p.list ? { messageList: p.list.read } : {}),
    });
    if (v.action === 'pass') continue;
    if (v.action === 'error') {
      record(ctx, state, {
        phase: p.name,
        guard: g.ir.name,
        action: 'error',
        rule: v.rule,
        applied: v.closed,
      });
      if (v.closed) throw serviceFailure(g.ir, p.name, v.rule);
      continue;
    }
    const applied = v.action !== 'audit';
    record(ctx, state, { phase: p.name, guard: g.ir.name, action: v.action, rule: v.rule, applied });
    if (v.action === 'reject')
      throw v.status !== undefined ? serviceRejection(v.status, v.message ?? '') : rejection(g.ir);
    if (v.action === 'mask') {
      if ('list' in v) p.list?.replace(v.list);
      else if ('texts' in v)
        for (const [i, text] of v.texts) {
          const slot = s[i];
          if (slot) writeText(p.body, slot.path, text, p.owned);
        }
      else {
        // Read before any write: a write may move the parts after it.
        const list = messages();
        for (const [i, content] of [...v.messages].sort((a, b) => b[0] - a[0])) {
          const m = list[i];
          if (m) writeMessageContent(p.body, m, content, p.owned);
        }
      }
      changed = true;
    }
  }
  return changed;
}

/** The request as the response guards see it: llmRequest.* is the request phase's, unevaluable here. */
function responseRequest(req: GuardRequest): GuardRequest {
  if (!req.cel) return req;
  const { llmRequest: _, ...cel } = req.cel;
  return { headers: req.headers, cel };
}

/** A guard a realtime session can run on each message: a regex's scanner, or a local check. */
const decidesAtOnce = (g: CompiledGuard) => g.stream !== undefined || g.local === true;

export function compileGuards(ir: LlmGuardsIR | undefined, env: GuardEnv): ModelGuards | undefined {
  if (!ir || ir.request.length + ir.response.length === 0) return undefined;
  const request = ir.request.map((g) => compile(g, env));
  const response = ir.response.map((g) => compile(g, env));
  const scanned = ir.streaming ? response.filter((g) => g.stream !== undefined) : [];
  const windowed = ir.streaming ? response.filter((g) => g.stream === undefined) : [];
  const readsCel = [...request, ...response].some((g) => g.readsCel);
  const realtime = ir.streaming
    ? {
        request: request.filter(decidesAtOnce),
        response: scanned,
        needService: [...request.filter((g) => !decidesAtOnce(g)), ...windowed].map((g) => g.ir.name),
      }
    : undefined;
  return {
    snapshot(ctx) {
      return { headers: ctx.headers, cel: readsCel ? ctx.celContext() : undefined };
    },
    realtime: () => realtime,
    async request(ctx, state, body, req) {
      if (request.length === 0) return;
      const format = state.httpFormat;
      const inScope = (g: CompiledGuard) => (x: TextSlot) => g.ir.scope.includes(x.scope);
      // The slots are read again after a mask: a guard sees what the guards before it left.
      await run(ctx, state, request, {
        name: 'request',
        body,
        slots: (g) => requestTexts(format, body).filter(inScope(g)),
        messages: (g) => requestMessages(format, body, inScope(g)),
        owned: new Set<object>([body]),
        request: req.cel ? { ...req, cel: { ...req.cel, llmRequest: body } } : req,
        llmRequest: body,
        list: {
          read: () => requestMessageList(format, body)?.list,
          replace(list) {
            const at = requestMessageList(format, body);
            // body is the request's own copy: the new list is set on it, the client's is untouched
            if (at) body[at.key] = list;
          },
        },
      });
    },
    async response(ctx, state, body, req) {
      if (response.length === 0) return false;
      const format = state.httpFormat;
      return run(ctx, state, response, {
        name: 'response',
        body,
        slots: () => answerTexts(format, body),
        messages: () => answerMessages(format, body),
        owned: undefined,
        request: responseRequest(req),
      });
    },
    stream(ctx, state, conv, req) {
      if (scanned.length + windowed.length === 0) return undefined;
      const finding = (g: CompiledGuard, action: GuardFinding['action'], rule: string, applied: boolean) =>
        record(ctx, state, { phase: 'stream', guard: g.ir.name, action, rule, applied });
      const guarded =
        scanned.length > 0 ? new GuardedStream(conv, scanned, state.httpFormat, finding) : undefined;
      const request = responseRequest(req);
      return {
        conv: guarded ?? conv,
        rejected: () => guarded?.rejected === true,
        windows: (sink) =>
          windowed.length === 0
            ? undefined
            : new StreamWindows(windowed, state.httpFormat, { ...sink, finding }, (g, text, signal) =>
                Promise.resolve(
                  g.check({
                    phase: 'response',
                    texts: [text],
                    messages: () => [{ role: 'assistant', slots: [{ text }] }],
                    request,
                    signal,
                  }),
                ),
              ),
      };
    },
  };
}
