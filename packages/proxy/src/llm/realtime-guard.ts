// Prompt guards on a realtime session (OpenAI's Realtime API over a WebSocket), when the guards'
// `streaming` is on: the relay between the client and the provider reads each message.
// - The client's: the text of `conversation.item.create` items (input_text parts; a system item's is
//   the system prompt), and the instructions of `session.update` and `response.create`, go through the
//   request guards. A rejected message is not sent on, and the client gets an `error` event naming
//   the guard's message; a mask sends the message with its text masked.
// - The provider's: the text each delta adds (output text and audio transcripts) is scanned with the
//   window before it, as on a streamed answer (stream.ts). While a guard may reject, messages are held
//   until STREAM_WINDOW characters of text follow them or the item is done, so no part of a match up
//   to that long is sent; a rejection sends the client an `error` event and closes the session (1008).
//   A mask is recorded, not applied, as on streams.
// Only the guards that decide at once (regex) run here; the loader of the session refuses one that
// would need a service. The frames of other messages pass unchanged.
import { Transform, type TransformCallback } from 'node:stream';
import { closeFrame, type Frame, FrameReader, FrameTooLarge, frame, OPCODE } from '../server/ws-frames.ts';
import { rejection } from './guardrails/rejection.ts';
import { STREAM_WINDOW, scanStreamed } from './guardrails/stream.ts';
import type { CompiledGuard, GuardFinding, GuardRequest, GuardVerdict } from './guardrails/types.ts';

/** The largest message the relay reads: a larger one ends the session (1009). */
export const REALTIME_GUARDED_MESSAGE_LIMIT = 16 * 1024 * 1024;

export interface RealtimeGuardSet {
  /** Request guards that decide at once (regex). */
  request: CompiledGuard[];
  /** Response guards that scan text as it passes (regex). */
  response: CompiledGuard[];
}

export interface RealtimeRelay {
  /** Between the client's socket and the provider's. */
  toUpstream: Transform;
  /** Between the provider's socket and the client's. */
  toClient: Transform;
}

/**
 * The relay of one session. `onFinding` records what a guard did; `end` closes the provider's
 * connection once the relay has ended the session (what the client should get is written by then).
 */
export function guardRealtime(
  guards: RealtimeGuardSet,
  request: GuardRequest,
  onFinding: (f: GuardFinding) => void,
  end: () => void,
): RealtimeRelay {
  const toClient = new ToClient(guards.response, onFinding, end);
  const toUpstream = new ToUpstream(guards.request, request, onFinding, toClient);
  return { toUpstream, toClient };
}

/** Frames gathered into messages; control frames come out at once. */
class Messages {
  readonly #reader = new FrameReader(REALTIME_GUARDED_MESSAGE_LIMIT);
  #raws: Buffer[] = [];
  #payload: Buffer[] = [];
  #size = 0;
  #opcode = 0;

  /** What the chunk completes, in order: control frames and whole messages. */
  push(chunk: Buffer): ({ control: Frame } | { opcode: number; payload: Buffer; raws: Buffer[] })[] {
    const out: ({ control: Frame } | { opcode: number; payload: Buffer; raws: Buffer[] })[] = [];
    for (const f of this.#reader.push(chunk)) {
      if (f.opcode >= OPCODE.close) {
        out.push({ control: f });
        continue;
      }
      if (f.opcode !== OPCODE.continuation) this.#opcode = f.opcode;
      this.#raws.push(f.raw);
      this.#payload.push(f.payload);
      this.#size += f.payload.length;
      if (this.#size > REALTIME_GUARDED_MESSAGE_LIMIT)
        throw new FrameTooLarge(`a message of ${this.#size} bytes`);
      if (!f.fin) continue;
      out.push({ opcode: this.#opcode, payload: Buffer.concat(this.#payload, this.#size), raws: this.#raws });
      this.#raws = [];
      this.#payload = [];
      this.#size = 0;
    }
    return out;
  }
}

/** One direction of the relay: whole messages to `message`, control frames to `control`. */
abstract class MessageRelay extends Transform {
  readonly #messages = new Messages();
  /** Nothing more passes this way. */
  protected stopped = false;

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    if (!this.stopped) {
      try {
        for (const item of this.#messages.push(chunk)) {
          if (this.stopped) break;
          if ('control' in item) this.control(item.control);
          else this.message(item.opcode, item.payload, item.raws);
        }
      } catch (err) {
        // a frame or message too large, or anything unexpected: the session ends, the gateway stays
        if (err instanceof FrameTooLarge) this.abort(1009, 'message too big');
        else this.abort(1011, 'the gateway could not read a message');
      }
    }
    done();
  }

  protected abstract control(f: Frame): void;
  protected abstract message(opcode: number, payload: Buffer, raws: Buffer[]): void;
  /** Ends the session with this close code (1009: a frame or message over the limit). */
  protected abstract abort(code: number, reason: string): void;
}

/** The Realtime API's `error` event for a guard's rejection (the SDKs raise it as an error event). */
function errorEvent(message: string, code: string, eventId: unknown): Buffer {
  return Buffer.from(
    JSON.stringify({
      type: 'error',
      event_id: `event_gw_${Date.now().toString(36)}`,
      error: {
        type: 'invalid_request_error',
        code,
        message,
        param: null,
        event_id: typeof eventId === 'string' ? eventId : null,
      },
    }),
  );
}

const DELTA_TYPES = new Set([
  'response.output_text.delta',
  'response.output_audio_transcript.delta',
  // the beta API's names
  'response.text.delta',
  'response.audio_transcript.delta',
]);

/** The provider's messages to the client, scanned and held as the response guards need. */
class ToClient extends MessageRelay {
  readonly #guards: CompiledGuard[];
  readonly #onFinding: (f: GuardFinding) => void;
  readonly #end: () => void;
  readonly #hold: boolean;
  /** Messages not sent yet, with the text each adds. */
  #pending: { raws: Buffer[]; text: string }[] = [];
  #pendingText = '';
  /** The last window of text sent (of the response under way). */
  #tail = '';

  constructor(guards: CompiledGuard[], onFinding: (f: GuardFinding) => void, end: () => void) {
    super();
    this.#guards = guards;
    this.#onFinding = onFinding;
    this.#end = end;
    this.#hold = guards.some((g) => g.stream?.action === 'reject');
  }

  /** A message of the relay's own (an error event for the client's message), after those held. */
  inject(payload: Buffer): void {
    if (this.stopped) return;
    const raw = frame(OPCODE.text, payload, false);
    if (this.#pending.length > 0) this.#pending.push({ raws: [raw], text: '' });
    else this.push(raw);
  }

  protected control(f: Frame): void {
    // A close comes after everything before it; pings and pongs need not wait.
    if (f.opcode === OPCODE.close) this.#release(true);
    this.push(f.raw);
  }

  protected abort(code: number, reason: string): void {
    this.#close(code, reason);
  }

  override _flush(done: TransformCallback): void {
    if (!this.stopped) this.#release(true);
    done();
  }

  protected message(opcode: number, payload: Buffer, raws: Buffer[]): void {
    let text = '';
    let last = false;
    // Audio deltas are most of the traffic: only a message that may be text is parsed.
    if (
      opcode === OPCODE.text &&
      (payload.includes('text.delta"') || payload.includes('transcript.delta"') || payload.includes('.done"'))
    ) {
      try {
        const e = JSON.parse(payload.toString('utf8')) as { type?: unknown; delta?: unknown };
        const type = typeof e.type === 'string' ? e.type : '';
        if (DELTA_TYPES.has(type) && typeof e.delta === 'string') text = e.delta;
        // an item's or a response's end: everything before it may go
        last = type.endsWith('.done');
        if (type === 'response.done') this.#tail = '';
      } catch {}
    }
    this.#pending.push({ raws, text });
    if (text !== '') {
      this.#pendingText += text;
      const seen = this.#tail + this.#pendingText;
      const rejecting = scanStreamed(
        this.#guards,
        seen,
        seen.length - text.length,
        (g, action, rule, applied) =>
          this.#onFinding({ phase: 'stream', guard: g.ir.name, action, rule, applied }),
      );
      if (rejecting) {
        const err = rejection(rejecting.ir);
        this.#close(1008, 'guardrail', errorEvent(err.detail, err.code.toLowerCase(), undefined));
        return;
      }
    }
    this.#release(last);
  }

  /** Sends the messages with a window of text after them (all when not holding, or at an end). */
  #release(all: boolean): void {
    let released = '';
    while (this.#pending.length > 0) {
      const first = this.#pending[0] as { raws: Buffer[]; text: string };
      if (!all && this.#hold && this.#pendingText.length - first.text.length < STREAM_WINDOW) break;
      this.#pending.shift();
      this.#pendingText = this.#pendingText.slice(first.text.length);
      released += first.text;
      for (const r of first.raws) this.push(r);
    }
    if (released !== '') this.#tail = (this.#tail + released).slice(-STREAM_WINDOW);
  }

  /** Sends the client an error event, if any, and a close frame; once they are written, the session ends. */
  closeWith(code: number, reason: string, error?: Buffer): void {
    if (this.stopped) return;
    this.#close(code, reason, error);
  }

  #close(code: number, reason: string, error?: Buffer): void {
    this.stopped = true;
    this.#pending = [];
    if (error) this.push(frame(OPCODE.text, error, false));
    this.push(closeFrame(code, reason, false));
    this.once('end', () => this.#end());
    this.push(null);
  }
}

/** One text slot of a client event: its text and where to write a masked one. */
interface Slot {
  text: string;
  scope: 'systemPrompt' | 'messages';
  set(text: string): void;
}

/** The texts of a client event the request guards read. */
function clientSlots(e: Record<string, unknown>): Slot[] {
  const slots: Slot[] = [];
  const instructions = (o: unknown) => {
    if (o && typeof o === 'object' && typeof (o as { instructions?: unknown }).instructions === 'string') {
      const holder = o as { instructions: string };
      slots.push({ text: holder.instructions, scope: 'systemPrompt', set: (t) => (holder.instructions = t) });
    }
  };
  const item = (it: unknown) => {
    if (!it || typeof it !== 'object') return;
    const m = it as { type?: unknown; role?: unknown; content?: unknown };
    if (m.type !== 'message' || !Array.isArray(m.content)) return;
    const scope = m.role === 'system' ? 'systemPrompt' : 'messages';
    for (const part of m.content as unknown[]) {
      const p = part as { type?: unknown; text?: unknown };
      if (p && (p.type === 'input_text' || p.type === 'text') && typeof p.text === 'string') {
        const holder = p as { text: string };
        slots.push({ text: holder.text, scope, set: (t) => (holder.text = t) });
      }
    }
  };
  if (e.type === 'conversation.item.create') item(e.item);
  else if (e.type === 'session.update') instructions(e.session);
  else if (e.type === 'response.create') {
    instructions(e.response);
    const input = (e.response as { input?: unknown } | undefined)?.input;
    if (Array.isArray(input)) for (const it of input) item(it);
  }
  return slots;
}

const CLIENT_TYPES = ['"conversation.item.create"', '"session.update"', '"response.create"'];

/** The client's messages to the provider, through the request guards. */
class ToUpstream extends MessageRelay {
  readonly #guards: CompiledGuard[];
  readonly #request: GuardRequest;
  readonly #onFinding: (f: GuardFinding) => void;
  readonly #toClient: ToClient;

  constructor(
    guards: CompiledGuard[],
    request: GuardRequest,
    onFinding: (f: GuardFinding) => void,
    toClient: ToClient,
  ) {
    super();
    this.#guards = guards;
    this.#request = request;
    this.#onFinding = onFinding;
    this.#toClient = toClient;
  }

  protected control(f: Frame): void {
    this.push(f.raw);
  }

  protected abort(code: number, reason: string): void {
    this.stopped = true;
    this.#toClient.closeWith(
      code,
      reason,
      code === 1009
        ? errorEvent('the message is larger than the gateway reads', 'message_too_big', null)
        : undefined,
    );
  }

  protected message(opcode: number, payload: Buffer, raws: Buffer[]): void {
    if (
      opcode !== OPCODE.text ||
      this.#guards.length === 0 ||
      !CLIENT_TYPES.some((t) => payload.includes(t))
    ) {
      for (const r of raws) this.push(r);
      return;
    }
    let e: Record<string, unknown>;
    try {
      e = JSON.parse(payload.toString('utf8')) as Record<string, unknown>;
    } catch {
      for (const r of raws) this.push(r);
      return;
    }
    let masked = false;
    for (const g of this.#guards) {
      const slots = clientSlots(e).filter((s) => g.ir.scope.includes(s.scope));
      if (slots.length === 0) continue;
      const v = g.check({
        phase: 'request',
        texts: slots.map((s) => s.text),
        messages: () => [],
        request: this.#request,
      }) as GuardVerdict;
      if (v.action === 'pass' || v.action === 'error') continue;
      this.#onFinding({
        phase: 'request',
        guard: g.ir.name,
        action: v.action,
        rule: v.rule,
        applied: v.action !== 'audit',
      });
      if (v.action === 'reject') {
        const err = rejection(g.ir);
        // not sent on: the provider never sees it, the client hears why
        this.#toClient.inject(errorEvent(err.detail, err.code.toLowerCase(), e.event_id));
        return;
      }
      if (v.action === 'mask' && 'texts' in v) {
        for (const [i, text] of v.texts) slots[i]?.set(text);
        masked = true;
      }
    }
    if (masked) this.push(frame(OPCODE.text, Buffer.from(JSON.stringify(e)), true));
    else for (const r of raws) this.push(r);
  }
}
