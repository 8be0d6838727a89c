// What a guard kind module provides: compiled once per model from its IR entry, it reads a request's
// or an answer's texts and says what to do; a kind that can read a stream also gives a scanner the
// stream handler (stream.ts) feeds with windows of text. One module per kind: <kind>.ts.
import type { LlmGuardAction, LlmGuardIR, LlmGuardKind } from '../../config/ir.ts';

/** What a guard found: the action it asks for and what matched (a rule name, never the content). */
export type GuardVerdict =
  | { action: 'pass' }
  | { action: 'reject' | 'audit'; rule: string }
  /** `texts`: the new text of each slot it changed, by index in the texts it was given. */
  | { action: 'mask'; rule: string; texts: Map<number, string> };

export type GuardPhase = 'request' | 'response';

export interface CompiledGuard {
  ir: LlmGuardIR;
  /** A request's texts (those in the guard's scope) or a complete answer's. */
  check(texts: readonly string[], phase: GuardPhase): GuardVerdict | Promise<GuardVerdict>;
  /** Streamed answers; absent: the kind does not read streams. */
  stream?: {
    /** What a match asks for (a mask is recorded, not applied: text already sent cannot change). */
    action: LlmGuardAction;
    /** The first match in `text` that ends after `from` (earlier ones were reported), or undefined. */
    scan(text: string, from: number): { rule: string; end: number } | undefined;
  };
}

export interface GuardKindModule<K extends LlmGuardKind = LlmGuardKind> {
  compile(ir: LlmGuardIR<K>): CompiledGuard;
}

/** One thing a guard did (or, for audit, would have done). */
export interface GuardFinding {
  phase: GuardPhase | 'stream';
  guard: string;
  action: LlmGuardAction;
  /** The rule that matched: a builtin or a pattern's name (never the matched content). */
  rule: string;
  /** false: the action was not carried out (audit, or mask on a stream). */
  applied: boolean;
}
