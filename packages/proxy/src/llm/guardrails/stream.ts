// Response guards on a streamed answer: a handler over the converter's output (the client's SSE) that
// reads the text each event adds and scans it with the last WINDOW characters before it, so a match
// split across events is still found. When a guard may reject, events are held until WINDOW characters
// of text follow them: a match of up to WINDOW characters is found before any of it is sent, and the
// stream ends with an error event in the client's format instead. Audit (and mask, which cannot change
// text already sent) only record: nothing is held for them.
import type { LlmFormat, LlmGuardAction } from '../../config/ir.ts';
import { anthropicType, type GwError, openaiType } from '../../errors.ts';
import { streamError, streamedText } from '../formats/content.ts';
import type { StreamConverter } from '../formats/types.ts';
import { SseSplitter } from '../sse.ts';
import { rejection } from './rejection.ts';
import type { CompiledGuard } from './types.ts';

/** Characters of answer text scanned before each new piece, and held back when a guard may reject. */
export const STREAM_WINDOW = 128;

/** A guard's error as the event ending a stream, in the client's format (each SDK raises it). */
export function errorEvent(format: LlmFormat, err: GwError): string {
  const type = format === 'anthropic-messages' ? anthropicType(err.status) : openaiType(err.status);
  return streamError(format, err.detail, type, err.code.toLowerCase());
}

type OnFinding = (g: CompiledGuard, action: LlmGuardAction, rule: string, applied: boolean) => void;

/**
 * Scans `seen` (the window before and the new text from `from`) with each guard in order; every match
 * is reported, and the first guard that rejects is returned (the guards after it are not asked).
 */
export function scanStreamed(
  guards: readonly CompiledGuard[],
  seen: string,
  from: number,
  onFinding: OnFinding,
): CompiledGuard | undefined {
  for (const g of guards) {
    const s = g.stream;
    const found = s?.scan(seen, from);
    if (!s || !found) continue;
    const reject = s.action === 'reject';
    onFinding(g, s.action, found.rule, reject);
    if (reject) return g;
  }
  return undefined;
}

export class GuardedStream implements StreamConverter {
  readonly #inner: StreamConverter;
  readonly #guards: CompiledGuard[];
  readonly #format: LlmFormat;
  readonly #onFinding: OnFinding;
  readonly #hold: boolean;
  readonly #window: number;
  readonly #sse = new SseSplitter();
  /** Events not sent yet, with the text each adds. */
  #pending: { raw: string; text: string }[] = [];
  #pendingText = '';
  /** The last window of text sent. */
  #tail = '';
  #rejected = false;

  constructor(
    inner: StreamConverter,
    guards: CompiledGuard[],
    format: LlmFormat,
    onFinding: OnFinding,
    window = STREAM_WINDOW,
  ) {
    this.#inner = inner;
    this.#guards = guards;
    this.#format = format;
    this.#onFinding = onFinding;
    this.#window = window;
    this.#hold = guards.some((g) => g.stream?.action === 'reject');
  }

  /** Whether a guard ended the stream (the rest of the provider's answer is not wanted). */
  get rejected(): boolean {
    return this.#rejected;
  }

  write(chunk: Buffer): string | undefined {
    return this.#take(this.#inner.write(chunk), false);
  }

  end(): string | undefined {
    return this.#take(this.#inner.end(), true);
  }

  #take(out: Buffer | string | undefined, last: boolean): string | undefined {
    if (this.#rejected) {
      return undefined;
    }
    let sent = '';
    if (out !== undefined && out.length > 0) {
      const events = this.#sse.push(typeof out === 'string' ? Buffer.from(out) : out);
      for (const e of events) {
        const r = this.#event(e.raw, streamedText(this.#format, e.event, e.data));
        if (r === undefined) continue;
        sent += r;
        if (this.#rejected) return sent;
      }
    }
    if (last) {
      const e = this.#sse.flush();
      if (e) {
        const r = this.#event(e.raw, streamedText(this.#format, e.event, e.data));
        if (r !== undefined) sent += r;
        if (this.#rejected) return sent;
      }
      sent += this.#release(true);
    }
    return sent === '' ? undefined : sent;
  }

  /** Takes one event; returns what may be sent now (an error event when a guard rejects). */
  #event(raw: string, text: string): string | undefined {
    this.#pending.push({ raw, text });
    if (text !== '') {
      this.#pendingText += text;
      const seen = this.#tail + this.#pendingText;
      const rejecting = scanStreamed(this.#guards, seen, seen.length - text.length, this.#onFinding);
      if (rejecting) {
        this.#rejected = true;
        this.#pending = [];
        return errorEvent(this.#format, rejection(rejecting.ir));
      }
    }
    const r = this.#release(false);
    return r === '' ? undefined : r;
  }

  /** Sends the events that have a window of text after them (all of them when not holding, or at the end). */
  #release(all: boolean): string {
    let out = '';
    let released = '';
    while (this.#pending.length > 0) {
      const first = this.#pending[0] as { raw: string; text: string };
      if (!all && this.#hold && this.#pendingText.length - first.text.length < this.#window) break;
      this.#pending.shift();
      this.#pendingText = this.#pendingText.slice(first.text.length);
      released += first.text;
      out += first.raw;
    }
    if (released !== '') this.#tail = (this.#tail + released).slice(-this.#window);
    return out;
  }
}
