// What the same-format pairs share: the body goes as sent with the model to serve, and the answer
// passes unchanged while its usage is read on the way. Only the events that carry a usage object are
// parsed; every byte is sent on as received.
import { SseSplitter } from '../sse.ts';
import type { LlmRequestState } from '../state.ts';
import { normalizeUsage } from '../usage.ts';
import type { JsonObject, PairRequest, StreamConverter } from './types.ts';

/** The client's body with the model to serve (or none, where the provider's path names it). */
export function withModel(body: JsonObject, req: PairRequest): JsonObject {
  if (req.bodyHasModel) body.model = req.model;
  else delete body.model;
  return body;
}

/** An answer object's model and usage, on the slot. */
export function recordModelAndUsage(obj: JsonObject, state: LlmRequestState): void {
  if (typeof obj.model === 'string') state.responseModel = obj.model;
  const u = obj.usage;
  if (u && typeof u === 'object') {
    const n = normalizeUsage(u as JsonObject);
    if (n) state.record(n);
  }
}

/** Whether an event's data carries a usage object (only those need parsing). */
export const HAS_USAGE = /"usage"\s*:\s*\{/;

/**
 * Passes an SSE stream through unchanged; each event whose data carries a usage object is parsed and
 * handed to `look`, which records what it finds on the slot.
 */
export class UsageWatchingStream implements StreamConverter {
  readonly #sse = new SseSplitter();
  readonly #state: LlmRequestState;
  readonly #look: (event: JsonObject, state: LlmRequestState) => void;
  readonly #carriesUsage: RegExp;

  constructor(
    state: LlmRequestState,
    look: (event: JsonObject, state: LlmRequestState) => void,
    /** How an event that carries usage is told (OpenAI's `"usage": {`, Gemini's `"usageMetadata": {`). */
    carriesUsage: RegExp = HAS_USAGE,
  ) {
    this.#state = state;
    this.#look = look;
    this.#carriesUsage = carriesUsage;
  }

  write(chunk: Buffer): string | undefined {
    let out: string | undefined;
    for (const e of this.#sse.push(chunk)) {
      this.#parse(e.data);
      out = out === undefined ? e.raw : out + e.raw;
    }
    return out;
  }

  end(): string | undefined {
    const e = this.#sse.flush();
    if (!e) return undefined;
    this.#parse(e.data);
    return e.raw;
  }

  #parse(data: string | undefined): void {
    if (data === undefined || !this.#carriesUsage.test(data)) return;
    let ev: JsonObject;
    try {
      ev = JSON.parse(data) as JsonObject;
    } catch {
      return;
    }
    this.#look(ev, this.#state);
  }
}
