// Anthropic Messages to an Anthropic Messages endpoint: the body goes as sent, with the model to
// serve. The answer passes unchanged; its usage is read on the way (a JSON answer's `usage`; in a
// stream, message_start carries the input tokens and message_delta the output so far).
import { SseSplitter } from '../sse.ts';
import type { LlmRequestState } from '../state.ts';
import { normalizeUsage } from '../usage.ts';
import type { FormatPair, StreamConverter } from './types.ts';

type Obj = Record<string, unknown>;

export const anthropicMessagesToAnthropicMessages: FormatPair<'anthropic-messages', 'anthropic-messages'> = {
  client: 'anthropic-messages',
  provider: 'anthropic-messages',
  request(body, req) {
    if (req.bodyHasModel) body.model = req.model;
    else delete body.model;
    return body;
  },
  response(body, state) {
    recordMessage(body, state);
    return undefined;
  },
  stream(state) {
    return new MessagesStream(state);
  },
};

/** A message object's model and usage, on the slot. */
export function recordMessage(message: Obj, state: LlmRequestState): void {
  if (typeof message.model === 'string') state.responseModel = message.model;
  const u = message.usage;
  if (u && typeof u === 'object') {
    const n = normalizeUsage(u as Obj);
    if (n) state.record(n);
  }
}

// Only the events carrying usage are parsed: the others pass as received.
const HAS_USAGE = /"usage"\s*:\s*\{/;

class MessagesStream implements StreamConverter {
  readonly #sse = new SseSplitter();
  readonly #state: LlmRequestState;

  constructor(state: LlmRequestState) {
    this.#state = state;
  }

  write(chunk: Buffer): string | undefined {
    let out: string | undefined;
    for (const e of this.#sse.push(chunk)) {
      this.#look(e.data);
      out = out === undefined ? e.raw : out + e.raw;
    }
    return out;
  }

  end(): string | undefined {
    const e = this.#sse.flush();
    if (!e) return undefined;
    this.#look(e.data);
    return e.raw;
  }

  #look(data: string | undefined): void {
    if (data === undefined || !HAS_USAGE.test(data)) return;
    let ev: Obj;
    try {
      ev = JSON.parse(data) as Obj;
    } catch {
      return;
    }
    // message_start: {message: {model, usage}}; message_delta: {usage}.
    const message = ev.message;
    recordMessage(message && typeof message === 'object' ? (message as Obj) : ev, this.#state);
  }
}
