// What a guard kind module provides: compiled once per model from its IR entry, it reads a request's
// or an answer's texts and says what to do; a kind that can read a stream also gives a scanner the
// stream handler (stream.ts) feeds with windows of text. One module per kind: <kind>.ts.
import type { CelContext } from '../../cel/cel.ts';
import type { GlobalIR, LlmGuardAction, LlmGuardIR, LlmGuardKind } from '../../config/ir.ts';
import type { Headers } from '../../pipeline/context.ts';
import type { PoolRegistry, Retained } from '../../upstream/pools.ts';

/** What a guard found: the action it asks for and what matched (a rule name, never the content). */
export type GuardVerdict =
  | { action: 'pass' }
  | { action: 'audit'; rule: string }
  /** `status`/`message`: a guard service's own answer to the client instead of the guard's rejection. */
  | { action: 'reject'; rule: string; status?: number; message?: string }
  /** `texts`: the new text of each slot it changed, by index in the texts it was given. */
  | { action: 'mask'; rule: string; texts: Map<number, string> }
  /** `messages`: the new content of each message it changed, by index in `GuardInput.messages()`. */
  | { action: 'mask'; rule: string; messages: Map<number, string> }
  /** `list`: the request's own message list replaced whole (GuardInput.messageList). */
  | { action: 'mask'; rule: string; list: unknown[] }
  /** A guard service failed (`rule` says how); `closed`: its failure mode stops the request. */
  | { action: 'error'; rule: string; closed: boolean };

export type GuardPhase = 'request' | 'response';

/** The client's request as it reached the model, before it was rewritten for the provider. */
export interface GuardRequest {
  headers: Headers;
  /** CEL variables of that request (request.*, jwt.*, llmRequest.* …); absent when no guard reads them. */
  cel: CelContext | undefined;
}

/** A message and its texts (formats/content.ts's MessageTexts; not imported: state.ts imports this file). */
export interface GuardMessage {
  role: string;
  slots: readonly { text: string }[];
}

export interface GuardInput {
  phase: GuardPhase;
  /** A request's texts (those in the guard's scope) or a complete answer's. */
  texts: readonly string[];
  /** The same content by message (request) or choice (response), for kinds that send whole messages. */
  messages(): readonly GuardMessage[];
  request: GuardRequest;
  /** The LLM request being guarded (request phase only). */
  llmRequest?: Record<string, unknown>;
  /** The request's own message list in the client's format (request phase; none for embeddings). */
  messageList?(): unknown[] | undefined;
  /** Cancels a guard service's call (a streamed answer's client went away, or the stream ended). */
  signal?: AbortSignal;
}

export interface CompiledGuard {
  ir: LlmGuardIR;
  check(input: GuardInput): GuardVerdict | Promise<GuardVerdict>;
  /** Whether `check` reads `input.request.cel` (the snapshot is taken only then). */
  readsCel?: boolean;
  /** It decides at once, calling no service (a realtime session can run it on each message). */
  local?: boolean;
  /** Its verdicts are only recorded (an audit): a stream is never held for it. */
  audits?: boolean;
  /** Streamed answers scanned as they pass (regex); absent: `check` reads windows of the stream. */
  stream?: {
    /** What a match asks for (a mask is recorded, not applied: text already sent cannot change). */
    action: LlmGuardAction;
    /** The first match in `text` that ends after `from` (earlier ones were reported), or undefined. */
    scan(text: string, from: number): { rule: string; end: number } | undefined;
  };
}

/** What a kind may use when it compiles: connection pools for guard services (null: a dry run). */
export interface GuardEnv {
  global: GlobalIR;
  pools: PoolRegistry | null;
  /** Pools this table holds; a kind adds every pool it acquires. */
  used: Set<Retained>;
}

export interface GuardKindModule<K extends LlmGuardKind = LlmGuardKind> {
  compile(ir: LlmGuardIR<K>, env: GuardEnv): CompiledGuard;
}

/** One thing a guard did (or, for audit, would have done); `error`: a guard service failed. */
export interface GuardFinding {
  phase: GuardPhase | 'stream';
  guard: string;
  action: LlmGuardAction | 'error';
  /** The rule that matched: a builtin or a pattern's name (never the matched content). */
  rule: string;
  /** false: the action was not carried out (audit, mask on a stream, a failure that failed open). */
  applied: boolean;
}
