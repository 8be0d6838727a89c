// OpenAI Responses to a Responses endpoint (OpenAI, Azure, custom): the body goes as sent, with the
// model to serve, and the answer passes unchanged. Usage is read on the way: a JSON answer's `usage`
// ({input_tokens, output_tokens, input_tokens_details.cached_tokens,
// output_tokens_details.reasoning_tokens}); in a stream, the response object that the
// `response.completed` (or `response.incomplete`) event carries.
import { SseSplitter } from '../sse.ts';
import type { LlmRequestState } from '../state.ts';
import { normalizeUsage } from '../usage.ts';
import type { FormatPair, JsonObject, StreamConverter } from './types.ts';

export const openaiResponsesToOpenaiResponses: FormatPair<'openai-responses', 'openai-responses'> = {
  client: 'openai-responses',
  provider: 'openai-responses',
  request(body, req) {
    if (req.bodyHasModel) body.model = req.model;
    else delete body.model;
    return body;
  },
  response(body, state) {
    recordResponse(body, state);
    return undefined;
  },
  stream(state) {
    return new ResponsesStream(state);
  },
};

/** A Responses `response` object's model and usage, on the slot. */
export function recordResponse(response: JsonObject, state: LlmRequestState): void {
  if (typeof response.model === 'string') state.responseModel = response.model;
  const u = response.usage;
  if (u && typeof u === 'object') {
    const n = normalizeUsage(u as JsonObject);
    if (n) state.record(n);
  }
}

// Only events whose response carries usage are parsed (response.created has `usage: null`): the
// deltas pass as received.
const HAS_USAGE = /"usage"\s*:\s*\{/;

class ResponsesStream implements StreamConverter {
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
    let ev: JsonObject;
    try {
      ev = JSON.parse(data) as JsonObject;
    } catch {
      return;
    }
    const response = ev.response;
    if (response && typeof response === 'object') recordResponse(response as JsonObject, this.#state);
  }
}
