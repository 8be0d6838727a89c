// OpenAI chat completions to an OpenAI-compatible chat endpoint: the body goes as sent, with the model
// to serve. A streamed request asks for usage (`stream_options.include_usage`) so its tokens can be
// counted; when the client did not ask for it, that usage is taken out of the stream again.
import { SseSplitter } from '../sse.ts';
import type { LlmRequestState } from '../state.ts';
import { HAS_USAGE, recordModelAndUsage, withModel } from './passthrough.ts';
import type { FormatPair, JsonObject, StreamConverter } from './types.ts';

type Obj = Record<string, unknown>;

export const openaiChatToOpenaiChat: FormatPair<'openai-chat', 'openai-chat'> = {
  client: 'openai-chat',
  provider: 'openai-chat',
  request(body, req) {
    withModel(body, req);
    if (req.stream) {
      const so = body.stream_options;
      body.stream_options = { ...(so && typeof so === 'object' ? so : {}), include_usage: true };
    }
    return body;
  },
  response(body, state) {
    recordChunk(body, state);
    return undefined;
  },
  stream(state) {
    return new ChatStream(state, clientWantsUsage(state.request));
  },
};

function clientWantsUsage(request: JsonObject): boolean {
  const so = request.stream_options as Obj | undefined;
  return so?.include_usage === true;
}

const recordChunk = recordModelAndUsage;

class ChatStream implements StreamConverter {
  readonly #sse = new SseSplitter();
  readonly #state: LlmRequestState;
  readonly #keepUsage: boolean;

  constructor(state: LlmRequestState, keepUsage: boolean) {
    this.#state = state;
    this.#keepUsage = keepUsage;
  }

  write(chunk: Buffer): string | undefined {
    let out: string | undefined;
    for (const e of this.#sse.push(chunk)) {
      const s = this.#event(e.raw, e.data);
      if (s) out = out === undefined ? s : out + s;
    }
    return out;
  }

  end(): string | undefined {
    const e = this.#sse.flush();
    return e ? this.#event(e.raw, e.data) : undefined;
  }

  #event(raw: string, data: string | undefined): string | undefined {
    if (data === undefined || !HAS_USAGE.test(data)) return raw;
    let chunk: Obj;
    try {
      chunk = JSON.parse(data) as Obj;
    } catch {
      return raw;
    }
    recordChunk(chunk, this.#state);
    if (this.#keepUsage) return raw;
    // The usage chunk the gateway asked for: an empty choices list and the usage.
    const choices = chunk.choices;
    if (!Array.isArray(choices) || choices.length === 0) return '';
    // A provider that puts usage on a content chunk: the chunk stays, without it.
    delete chunk.usage;
    return `data: ${JSON.stringify(chunk)}\n\n`;
  }
}
