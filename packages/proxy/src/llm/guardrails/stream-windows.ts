// Response guards that call a service (webhook, Bedrock Guardrails, Model Armor) on a streamed answer:
// a call takes milliseconds, so the answer is read in windows. A window closes at `chars` characters
// of answer text, when its first event has waited `maxHoldMs`, or at the end of the stream; its text,
// after the last `overlap` characters of the window before (so a finding split across two windows is
// seen whole), goes to every guard. While a guard that may stop the stream checks a window, the
// window's events are held: a pass sends them on unchanged, a reject or a failure that fails closed
// ends the stream with an error event in the client's format instead. One window is checked at a
// time; the text arriving meanwhile forms the next. Audits hold nothing, not even the stream's end:
// their calls run alongside, and those still out when the answer is complete go on to their verdict.
import type { LlmFormat, LlmGuardAction } from '../../config/ir.ts';
import type { GwError } from '../../errors.ts';
import { streamedText } from '../formats/content.ts';
import { SseSplitter } from '../sse.ts';
import { rejection, serviceFailure, serviceRejection } from './rejection.ts';
import { errorEvent } from './stream.ts';
import type { CompiledGuard, GuardVerdict } from './types.ts';

export interface WindowSizes {
  /** Characters of answer text that close a window. */
  chars: number;
  /** How long (ms) a window's first event may wait for more text before the window closes anyway. */
  maxHoldMs: number;
  /** Characters of the window before sent again in front of a window's text. */
  overlap: number;
  /** Bytes of events held (a slow guard, a fast provider) before the provider's stream is paused. */
  maxHeldBytes: number;
}

/**
 * 256 characters is about 64 tokens: a few calls for a typical answer, and at 50–100 tokens per second
 * under a second of waiting before the call; the hold bounds it when the provider is slower.
 */
export const SERVICE_WINDOW: WindowSizes = {
  chars: 256,
  maxHoldMs: 1000,
  overlap: 128,
  maxHeldBytes: 1024 * 1024,
};

/** Calls one guard on a window's text. */
export type WindowCheck = (g: CompiledGuard, text: string, signal: AbortSignal) => Promise<GuardVerdict>;

export interface WindowSink {
  /** Events sent on unchanged, in order. */
  send(raw: string): void;
  /** The error event that ends the stream: nothing is sent after it. */
  fail(raw: string): void;
  /** What a guard said about a window (`applied`: it changed what the client got). */
  finding(g: CompiledGuard, action: LlmGuardAction | 'error', rule: string, applied: boolean): void;
}

interface Held {
  raw: string;
  text: string;
}

export class StreamWindows {
  readonly #holding: CompiledGuard[];
  readonly #audits: CompiledGuard[];
  readonly #format: LlmFormat;
  readonly #sink: WindowSink;
  readonly #check: WindowCheck;
  readonly #sizes: WindowSizes;
  readonly #sse = new SseSplitter();
  readonly #abort = new AbortController();
  /** Audit calls: cancelled with the rest while the answer streams, left to finish once it is whole. */
  readonly #auditAbort = new AbortController();
  /** The open window's events (held only while a guard may stop the stream) and its text. */
  #held: Held[] = [];
  #text = '';
  /** Bytes of held events, the window being checked included. */
  #heldBytes = 0;
  /** The end of the text already checked, sent again in front of the next window's. */
  #tail = '';
  /** The window being checked. */
  #checking: Promise<void> | undefined;
  #timer: NodeJS.Timeout | undefined;
  /** The open window has waited `maxHoldMs`. */
  #due = false;
  #ending = false;
  /** Stopped (a rejection, a failure) or cancelled: nothing more is sent or checked. */
  #done = false;
  #stopped = false;
  #waiters: (() => void)[] = [];
  #ended: (() => void) | undefined;

  constructor(
    guards: CompiledGuard[],
    format: LlmFormat,
    sink: WindowSink,
    check: WindowCheck,
    sizes: WindowSizes = SERVICE_WINDOW,
  ) {
    this.#holding = guards.filter((g) => !g.audits);
    this.#audits = guards.filter((g) => g.audits);
    this.#format = format;
    this.#sink = sink;
    this.#check = check;
    this.#sizes = sizes;
  }

  /** Whether a guard ended the stream. */
  get stopped(): boolean {
    return this.#stopped;
  }

  /** Takes converted output (the client's SSE); a promise when too much is held: read no more until then. */
  write(out: string | Buffer): Promise<void> | undefined {
    if (this.#done) return undefined;
    // Event by event: where a window closes does not depend on how the bytes were cut.
    for (const e of this.#sse.push(typeof out === 'string' ? Buffer.from(out) : out)) {
      this.#event(e.raw, streamedText(this.#format, e.event, e.data));
      this.#maybeClose();
    }
    if (this.#heldBytes <= this.#sizes.maxHeldBytes || this.#done) return undefined;
    return new Promise((r) => this.#waiters.push(r));
  }

  /** The provider's stream ended: the last window is checked; resolves once all is sent (or stopped). */
  end(): Promise<void> {
    if (!this.#done) {
      const e = this.#sse.flush();
      if (e) this.#event(e.raw, streamedText(this.#format, e.event, e.data));
    }
    this.#ending = true;
    const p = new Promise<void>((r) => {
      this.#ended = r;
    });
    this.#maybeClose();
    this.#checkEnd();
    return p;
  }

  /** The client went away: pending calls are cancelled, nothing more is sent. */
  cancel(): void {
    if (this.#done) return;
    this.#finish();
    const ended = this.#ended;
    this.#ended = undefined;
    ended?.();
  }

  #event(raw: string, text: string): void {
    // An event is sent at once when no guard may stop the stream, or when it adds no text and
    // nothing is waiting before it.
    if (this.#holding.length === 0 || (text === '' && this.#held.length === 0 && !this.#checking)) {
      this.#sink.send(raw);
    } else {
      this.#held.push({ raw, text });
      this.#heldBytes += raw.length;
      this.#timer ??= setTimeout(() => {
        this.#timer = undefined;
        this.#due = true;
        this.#maybeClose();
      }, this.#sizes.maxHoldMs);
    }
    this.#text += text;
  }

  #maybeClose(): void {
    if (this.#done || this.#checking) return;
    if (this.#text.length < this.#sizes.chars && !this.#due && !this.#ending) return;
    if (this.#text === '' && this.#held.length === 0) return;
    this.#close();
  }

  #close(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#due = false;
    const events = this.#held;
    const fresh = this.#text;
    this.#held = [];
    this.#text = '';
    if (fresh === '') {
      this.#release(events);
      return;
    }
    const text = this.#tail + fresh;
    this.#tail = this.#sizes.overlap > 0 ? text.slice(-this.#sizes.overlap) : '';
    for (const g of this.#audits)
      void this.#run(g, text, this.#auditAbort.signal).then((v) => {
        if (!this.#auditAbort.signal.aborted) this.#record(g, v, false);
      });
    if (this.#holding.length === 0) {
      this.#release(events);
      return;
    }
    this.#checking = this.#decide(text, events).then(() => {
      this.#checking = undefined;
      this.#wake();
      this.#maybeClose();
      this.#checkEnd();
    });
  }

  async #decide(text: string, events: Held[]): Promise<void> {
    const verdicts = await Promise.all(this.#holding.map((g) => this.#run(g, text, this.#abort.signal)));
    if (this.#done) return;
    // In the guards' order: the first that stops the stream decides its error.
    let stop: GwError | undefined;
    this.#holding.forEach((g, i) => {
      const err = this.#record(g, verdicts[i] as GuardVerdict, stop === undefined);
      stop ??= err;
    });
    if (stop) {
      this.#heldBytes -= events.reduce((n, e) => n + e.raw.length, 0);
      this.#stopped = true;
      this.#finish();
      this.#sink.fail(errorEvent(this.#format, stop));
      return;
    }
    this.#release(events);
  }

  #run(g: CompiledGuard, text: string, signal: AbortSignal): Promise<GuardVerdict> {
    // A check never throws by contract; one that does is a failure like any other.
    const failure = (): GuardVerdict => ({ action: 'error', rule: 'failed', closed: !g.audits });
    try {
      return this.#check(g, text, signal).catch(failure);
    } catch {
      return Promise.resolve(failure());
    }
  }

  /** Records a verdict; returns the error that ends the stream when it stops it (and `enforce`). */
  #record(g: CompiledGuard, v: GuardVerdict, enforce: boolean): GwError | undefined {
    if (v.action === 'pass') return undefined;
    if (v.action === 'error') {
      const closed = enforce && v.closed;
      this.#sink.finding(g, 'error', v.rule, closed);
      return closed ? serviceFailure(g.ir, 'stream', v.rule) : undefined;
    }
    const reject = enforce && v.action === 'reject';
    // A mask cannot change what the client may already have: recorded, not applied.
    this.#sink.finding(g, v.action, v.rule, reject);
    if (!reject) return undefined;
    return v.action === 'reject' && v.status !== undefined
      ? serviceRejection(v.status, v.message ?? '')
      : rejection(g.ir);
  }

  #release(events: Held[]): void {
    for (const e of events) {
      this.#heldBytes -= e.raw.length;
      this.#sink.send(e.raw);
    }
  }

  #wake(): void {
    if (this.#heldBytes > this.#sizes.maxHeldBytes && !this.#done) return;
    const w = this.#waiters;
    this.#waiters = [];
    for (const r of w) r();
  }

  #finish(): void {
    this.#done = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#held = [];
    this.#abort.abort();
    if (!this.#ending || this.#stopped) this.#auditAbort.abort();
    this.#wake();
  }

  #checkEnd(): void {
    const ended = this.#ended;
    if (!ended) return;
    if (!this.#done && (this.#checking || this.#held.length > 0 || this.#text !== '')) return;
    this.#ended = undefined;
    ended();
  }
}
