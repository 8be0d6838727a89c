// Anthropic Messages to an OpenAI-style chat completions endpoint (OpenAI, Azure OpenAI, Mistral, a
// custom endpoint). The request: `system` becomes a system message, tool_use blocks tool calls and
// tool_result blocks tool messages, image blocks image parts (base64 as data URLs), stop_sequences
// `stop`, tools and tool_choice OpenAI's. The answer: an Anthropic message, or, streamed, Anthropic's
// event sequence (message_start, content_block_start/delta/stop, message_delta, message_stop) built
// chunk by chunk. A stream asks for usage (`stream_options.include_usage`), which OpenAI sends after
// the finish reason, so message_delta waits for the end of the stream to carry it.
import { SseSplitter } from '../sse.ts';
import type { LlmRequestState, LlmUsage } from '../state.ts';
import { normalizeUsage } from '../usage.ts';
import {
  AnthropicEvents,
  anthropicError,
  anthropicMessage,
  type StopReason,
  toolResultText,
} from './anthropic-answer.ts';
import { bad, obj, str, textOf } from './json.ts';
import type { FormatPair, JsonObject, StreamConverter } from './types.ts';

type Obj = Record<string, unknown>;

/** OpenAI's finish_reason as Anthropic's stop_reason. */
export function stopReason(finish: unknown): StopReason {
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

export const anthropicMessagesToOpenaiChat: FormatPair<'anthropic-messages', 'openai-chat'> = {
  client: 'anthropic-messages',
  provider: 'openai-chat',
  request(body, req) {
    const out: JsonObject = {};
    if (req.bodyHasModel) out.model = req.model;
    out.messages = convertMessages(body.system, body.messages);
    if (typeof body.max_tokens === 'number') out[req.tokenLimitField ?? 'max_tokens'] = body.max_tokens;
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
    return message(body, state, n);
  },
  stream(state) {
    return new EventStream(state);
  },
  error(body, status) {
    return anthropicError(str(obj(body.error)?.message) ?? `the provider answered ${status}`, status);
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
        tools.push({ role: 'tool', tool_call_id: str(b.tool_use_id) ?? '', content: toolResultText(b) });
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

function message(c: Obj, state: LlmRequestState, usage: LlmUsage | undefined): Obj {
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
  return anthropicMessage(state, content, stopReason(choice?.finish_reason), usage, c.id);
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
  readonly #out: AnthropicEvents;
  #stop: StopReason = 'end_turn';

  constructor(state: LlmRequestState) {
    this.#state = state;
    this.#out = new AnthropicEvents(state);
  }

  write(chunk: Buffer): string | undefined {
    let out = '';
    for (const e of this.#sse.push(chunk)) out += this.#event(e.data);
    return out === '' ? undefined : out;
  }

  end(): string | undefined {
    const e = this.#sse.flush();
    // At the end of a stream without [DONE] too: the stop reason and usage, and message_stop.
    const out = (e ? this.#event(e.data) : '') + this.#out.finish(this.#stop);
    return out === '' ? undefined : out;
  }

  #event(data: string | undefined): string {
    if (data === undefined || this.#out.finished) return '';
    // OpenAI sends the usage after the finish reason, so message_delta waits for [DONE].
    if (data.trim() === '[DONE]') return this.#out.finish(this.#stop);
    let c: Obj;
    try {
      c = JSON.parse(data) as Obj;
    } catch {
      return '';
    }
    const err = obj(c.error);
    if (err) return this.#out.fail(str(err.message) ?? 'the provider failed mid-stream');
    const u = obj(c.usage);
    const n = u && normalizeUsage(u);
    if (n) this.#state.record(n);
    const choice = obj(Array.isArray(c.choices) ? c.choices[0] : undefined);
    // Azure opens with a chunk of prompt filter results only, without id or model: not the start.
    if (!choice && !this.#out.started) return '';
    let out = '';
    if (!this.#out.started) {
      if (typeof c.model === 'string') this.#state.responseModel = c.model;
      // Not known before the end of an OpenAI stream: message_delta carries the totals.
      out += this.#out.start(c.id);
    }
    if (!choice) return out;
    const d = obj(choice.delta);
    out += this.#out.text(str(d?.content) ?? '');
    for (const raw of Array.isArray(d?.tool_calls) ? d.tool_calls : []) {
      const tc = obj(raw);
      const k = typeof tc?.index === 'number' ? tc.index : 0;
      const f = obj(tc?.function);
      out += this.#out.toolStart(k, str(tc?.id) ?? '', str(f?.name) ?? '');
      out += this.#out.toolInput(k, str(f?.arguments) ?? '');
    }
    if (typeof choice.finish_reason === 'string') {
      this.#stop = stopReason(choice.finish_reason);
      out += this.#out.close();
    }
    return out;
  }
}
