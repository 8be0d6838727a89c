// Anthropic Messages to an OpenAI-style chat completions endpoint (OpenAI, Azure OpenAI, Mistral, a
// custom endpoint). The request: `system` becomes a system message, tool_use blocks tool calls and
// tool_result blocks tool messages, image blocks image parts (base64 as data URLs), stop_sequences
// `stop`, tools and tool_choice OpenAI's. The answer: an Anthropic message, or, streamed, Anthropic's
// event sequence (message_start, content_block_start/delta/stop, message_delta, message_stop) built
// chunk by chunk. A stream asks for usage (`stream_options.include_usage`), which OpenAI sends after
// the finish reason, so message_delta waits for the end of the stream to carry it.
import { anthropicType } from '../../errors.ts';
import { SseSplitter, sseData } from '../sse.ts';
import type { LlmRequestState, LlmUsage } from '../state.ts';
import { normalizeUsage } from '../usage.ts';
import { bad, obj, str, textOf } from './json.ts';
import type { FormatPair, JsonObject, StreamConverter } from './types.ts';

type Obj = Record<string, unknown>;

/** OpenAI's finish_reason as Anthropic's stop_reason. */
export function stopReason(finish: unknown): string {
  switch (finish) {
    case 'length':
      return 'max_tokens';
    case 'tool_calls':
    case 'function_call':
      return 'tool_use';
    case 'content_filter':
      return 'refusal';
    default:
      return 'end_turn';
  }
}

/** Normalised usage as Anthropic's: input_tokens leaves out the cache reads, counted on their own. */
export function anthropicUsage(u: LlmUsage): Obj {
  return {
    input_tokens: Math.max(0, u.input - u.cachedInput),
    output_tokens: u.output,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: u.cachedInput,
  };
}

export const anthropicMessagesToOpenaiChat: FormatPair<'anthropic-messages', 'openai-chat'> = {
  client: 'anthropic-messages',
  provider: 'openai-chat',
  request(body, req) {
    const out: JsonObject = {};
    if (req.bodyHasModel) out.model = req.model;
    out.messages = convertMessages(body.system, body.messages);
    // max_tokens rather than max_completion_tokens: Mistral and most compatible servers know only it.
    if (typeof body.max_tokens === 'number') out.max_tokens = body.max_tokens;
    if (Array.isArray(body.stop_sequences) && body.stop_sequences.length > 0) out.stop = body.stop_sequences;
    for (const k of ['temperature', 'top_p'] as const) if (typeof body[k] === 'number') out[k] = body[k];
    if (req.stream) {
      out.stream = true;
      out.stream_options = { include_usage: true };
    }
    if (Array.isArray(body.tools) && body.tools.length > 0) {
      out.tools = body.tools.map(convertTool);
      const tc = obj(body.tool_choice);
      const choice = convertToolChoice(tc);
      if (choice !== undefined) out.tool_choice = choice;
      if (tc?.disable_parallel_tool_use === true) out.parallel_tool_calls = false;
    }
    const user = str(obj(body.metadata)?.user_id);
    if (user !== undefined) out.user = user;
    return out;
  },
  response(body, state) {
    if (typeof body.model === 'string') state.responseModel = body.model;
    const u = obj(body.usage);
    const n = u && normalizeUsage(u);
    if (n) state.record(n);
    return message(body, n);
  },
  stream(state) {
    return new EventStream(state);
  },
  error(body, status) {
    const e = obj(body.error);
    return {
      type: 'error',
      error: { type: anthropicType(status), message: str(e?.message) ?? `the provider answered ${status}` },
    };
  },
};

// ---------- the request ----------

function convertMessages(system: unknown, input: unknown): Obj[] {
  if (!Array.isArray(input)) throw bad('the request must have a "messages" array');
  const out: Obj[] = [];
  const sys = textOf(system);
  if (sys !== '') out.push({ role: 'system', content: sys });
  for (const raw of input) {
    const m = obj(raw);
    if (m?.role === 'user') out.push(...userMessages(m.content));
    else if (m?.role === 'assistant') out.push(assistantMessage(m.content));
    else throw bad(`a message with role ${JSON.stringify(m?.role)} is not an Anthropic message`);
  }
  return out;
}

/** A user turn: its tool results first, as tool messages (they answer the turn before), then the rest. */
function userMessages(content: unknown): Obj[] {
  if (typeof content === 'string') return [{ role: 'user', content }];
  if (!Array.isArray(content)) return [];
  const tools: Obj[] = [];
  const parts: Obj[] = [];
  for (const raw of content) {
    const b = obj(raw);
    switch (b?.type) {
      case 'text':
        parts.push({ type: 'text', text: str(b.text) ?? '' });
        break;
      case 'image':
        parts.push({ type: 'image_url', image_url: { url: imageUrl(obj(b.source)) } });
        break;
      case 'tool_result':
        tools.push({ role: 'tool', tool_call_id: str(b.tool_use_id) ?? '', content: textOf(b.content) });
        break;
      default:
        throw bad(`a ${JSON.stringify(b?.type)} content block cannot be sent to an OpenAI-style model`);
    }
  }
  if (parts.length > 0) tools.push({ role: 'user', content: parts });
  return tools;
}

function imageUrl(source: Obj | undefined): string {
  if (source?.type === 'base64')
    return `data:${str(source.media_type) ?? ''};base64,${str(source.data) ?? ''}`;
  if (source?.type === 'url') return str(source.url) ?? '';
  throw bad(
    `an image source of type ${JSON.stringify(source?.type)} cannot be sent to an OpenAI-style model`,
  );
}

function assistantMessage(content: unknown): Obj {
  if (typeof content === 'string') return { role: 'assistant', content };
  let text: string | null = null;
  const calls: Obj[] = [];
  for (const raw of Array.isArray(content) ? content : []) {
    const b = obj(raw);
    if (b?.type === 'text') text = (text ?? '') + (str(b.text) ?? '');
    else if (b?.type === 'tool_use') {
      calls.push({
        id: b.id,
        type: 'function',
        function: { name: b.name, arguments: JSON.stringify(b.input ?? {}) },
      });
    }
    // Thinking blocks are the Anthropic model's own: another model cannot use them.
  }
  const out: Obj = { role: 'assistant', content: text };
  if (calls.length > 0) out.tool_calls = calls;
  return out;
}

function convertTool(raw: unknown): Obj {
  const t = obj(raw);
  if (!t || (t.type !== undefined && t.type !== 'custom'))
    throw bad(`the server tool ${JSON.stringify(t?.type)} cannot be sent to an OpenAI-style model`);
  const f: Obj = { name: str(t.name) ?? '', parameters: obj(t.input_schema) ?? { type: 'object' } };
  if (typeof t.description === 'string') f.description = t.description;
  return { type: 'function', function: f };
}

function convertToolChoice(tc: Obj | undefined): unknown {
  switch (tc?.type) {
    case 'auto':
      return 'auto';
    case 'any':
      return 'required';
    case 'none':
      return 'none';
    case 'tool':
      return { type: 'function', function: { name: str(tc.name) ?? '' } };
    default:
      return undefined;
  }
}

// ---------- the answer ----------

function message(c: Obj, usage: LlmUsage | undefined): Obj {
  const choice = obj(Array.isArray(c.choices) ? c.choices[0] : undefined);
  const m = obj(choice?.message);
  const content: Obj[] = [];
  const text = str(m?.content);
  if (text) content.push({ type: 'text', text });
  for (const raw of Array.isArray(m?.tool_calls) ? m.tool_calls : []) {
    const call = obj(raw);
    const f = obj(call?.function);
    content.push({ type: 'tool_use', id: call?.id, name: f?.name, input: parseArgs(str(f?.arguments)) });
  }
  return {
    id: c.id,
    type: 'message',
    role: 'assistant',
    model: c.model,
    content,
    stop_reason: stopReason(choice?.finish_reason),
    stop_sequence: null,
    usage: anthropicUsage(usage ?? { input: 0, output: 0, cachedInput: 0, reasoning: 0 }),
  };
}

/** A tool call's arguments as an object; a model's malformed JSON is kept, under `arguments`. */
function parseArgs(args: string | undefined): unknown {
  if (args === undefined || args.trim() === '') return {};
  try {
    return JSON.parse(args);
  } catch {
    return { arguments: args };
  }
}

/** OpenAI's chunks, each converted as it arrives into the Anthropic events it stands for. */
class EventStream implements StreamConverter {
  readonly #sse = new SseSplitter();
  readonly #state: LlmRequestState;
  #started = false;
  #finished = false;
  /** The open content block: its index and kind; -1: none open yet. */
  #block = -1;
  #open: 'text' | 'tool' | undefined;
  /** OpenAI tool call index → Anthropic content block index. */
  readonly #tools = new Map<number, number>();
  #stop = 'end_turn';

  constructor(state: LlmRequestState) {
    this.#state = state;
  }

  write(chunk: Buffer): string | undefined {
    let out = '';
    for (const e of this.#sse.push(chunk)) out += this.#event(e.data);
    return out === '' ? undefined : out;
  }

  end(): string | undefined {
    const e = this.#sse.flush();
    const out = (e ? this.#event(e.data) : '') + this.#finish();
    return out === '' ? undefined : out;
  }

  #event(data: string | undefined): string {
    if (data === undefined || this.#finished) return '';
    if (data.trim() === '[DONE]') return this.#finish();
    let c: Obj;
    try {
      c = JSON.parse(data) as Obj;
    } catch {
      return '';
    }
    const err = obj(c.error);
    if (err) {
      this.#finished = true;
      return sseData(
        {
          type: 'error',
          error: { type: 'api_error', message: str(err.message) ?? 'the provider failed mid-stream' },
        },
        'error',
      );
    }
    const u = obj(c.usage);
    const n = u && normalizeUsage(u);
    if (n) this.#state.record(n);
    const choice = obj(Array.isArray(c.choices) ? c.choices[0] : undefined);
    // Azure opens with a chunk of prompt filter results only, without id or model: not the start.
    if (!choice && !this.#started) return '';
    let out = '';
    if (!this.#started) out += this.#start(c);
    if (!choice) return out;
    const d = obj(choice.delta);
    const text = str(d?.content);
    if (text) {
      if (this.#open !== 'text') out += this.#openBlock('text', { type: 'text', text: '' });
      out += sseData(
        { type: 'content_block_delta', index: this.#block, delta: { type: 'text_delta', text } },
        'content_block_delta',
      );
    }
    for (const raw of Array.isArray(d?.tool_calls) ? d.tool_calls : []) {
      const tc = obj(raw);
      const k = typeof tc?.index === 'number' ? tc.index : 0;
      const f = obj(tc?.function);
      if (!this.#tools.has(k)) {
        out += this.#openBlock('tool', {
          type: 'tool_use',
          id: tc?.id ?? '',
          name: f?.name ?? '',
          input: {},
        });
        this.#tools.set(k, this.#block);
      }
      const args = str(f?.arguments);
      if (args) {
        out += sseData(
          {
            type: 'content_block_delta',
            index: this.#tools.get(k),
            delta: { type: 'input_json_delta', partial_json: args },
          },
          'content_block_delta',
        );
      }
    }
    if (typeof choice.finish_reason === 'string') {
      this.#stop = stopReason(choice.finish_reason);
      out += this.#closeBlock();
    }
    return out;
  }

  #start(c: Obj): string {
    this.#started = true;
    if (typeof c.model === 'string') this.#state.responseModel = c.model;
    return sseData(
      {
        type: 'message_start',
        message: {
          id: c.id,
          type: 'message',
          role: 'assistant',
          model: str(c.model) || this.#state.model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          // Not known before the end of an OpenAI stream: message_delta carries the totals.
          usage: { input_tokens: 0, output_tokens: 0 },
        },
      },
      'message_start',
    );
  }

  #openBlock(kind: 'text' | 'tool', block: Obj): string {
    const out = this.#closeBlock();
    this.#block++;
    this.#open = kind;
    return (
      out +
      sseData(
        { type: 'content_block_start', index: this.#block, content_block: block },
        'content_block_start',
      )
    );
  }

  #closeBlock(): string {
    if (this.#open === undefined) return '';
    this.#open = undefined;
    return sseData({ type: 'content_block_stop', index: this.#block }, 'content_block_stop');
  }

  /** At `[DONE]` (or the end of a stream without it): the stop reason and usage, and message_stop. */
  #finish(): string {
    if (this.#finished || !this.#started) return '';
    this.#finished = true;
    const u = this.#state.usage;
    return (
      this.#closeBlock() +
      sseData(
        {
          type: 'message_delta',
          delta: { stop_reason: this.#stop, stop_sequence: null },
          usage: anthropicUsage(u ?? { input: 0, output: 0, cachedInput: 0, reasoning: 0 }),
        },
        'message_delta',
      ) +
      sseData({ type: 'message_stop' }, 'message_stop')
    );
  }
}
