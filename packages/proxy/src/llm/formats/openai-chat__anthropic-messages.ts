// OpenAI chat completions to Anthropic's Messages API. The request: system and developer messages
// become `system`, tool calls `tool_use` blocks and tool messages `tool_result` blocks (consecutive
// turns of one role merged, as Anthropic alternates user and assistant), image parts image blocks,
// `stop` stop_sequences, tools and tool_choice Anthropic's; `max_tokens`, which Anthropic requires,
// is DEFAULT_MAX_TOKENS when the client sets none. The answer: a chat.completion, or, streamed,
// chat.completion.chunk events converted one Anthropic event at a time, ending in `data: [DONE]`.
import { anthropicType, openaiType } from '../../errors.ts';
import { SseSplitter, sseData } from '../sse.ts';
import type { LlmRequestState, LlmUsage } from '../state.ts';
import { normalizeUsage } from '../usage.ts';
import { recordMessage } from './anthropic-messages__anthropic-messages.ts';
import { bad, obj, str, textOf } from './json.ts';
import type { FormatPair, JsonObject, StreamConverter } from './types.ts';

type Obj = Record<string, unknown>;

/**
 * Anthropic requires `max_tokens`; OpenAI clients usually send none. 4096 is within every current
 * Claude model's output limit, so the default never makes a request invalid.
 */
export const DEFAULT_MAX_TOKENS = 4096;

/**
 * `reasoning_effort` as Anthropic's thinking budget. Anthropic documents budget_tokens as at least
 * 1024 and below max_tokens; these are the budgets LiteLLM (a popular OpenAI-compatible gateway)
 * documents for low/medium/high (1024/2048/4096), with minimal at Anthropic's minimum. `none` (and
 * anything else) asks for no thinking.
 */
export const THINKING_BUDGETS: Readonly<Record<string, number>> = {
  minimal: 1024,
  low: 1024,
  medium: 2048,
  high: 4096,
};

/** Anthropic's stop_reason as OpenAI's finish_reason. */
export function finishReason(stop: unknown): string | null {
  switch (stop) {
    case 'end_turn':
    case 'stop_sequence':
    case 'pause_turn':
      return 'stop';
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'tool_use':
      return 'tool_calls';
    case 'refusal':
      return 'content_filter';
    case null:
    case undefined:
      return null;
    default:
      return 'stop';
  }
}

/**
 * Normalised usage as OpenAI's: prompt_tokens counts cache reads and writes too (Anthropic's
 * input_tokens does not), and cached_tokens is the cache reads.
 */
export function openaiUsage(u: LlmUsage): Obj {
  return {
    prompt_tokens: u.input,
    completion_tokens: u.output,
    total_tokens: u.input + u.output,
    prompt_tokens_details: { cached_tokens: u.cachedInput },
  };
}

export const openaiChatToAnthropicMessages: FormatPair<'openai-chat', 'anthropic-messages'> = {
  client: 'openai-chat',
  provider: 'anthropic-messages',
  request(body, req) {
    // Anthropic answers with one message: asking for more would silently get fewer.
    if (typeof body.n === 'number' && body.n > 1) throw bad('n > 1 cannot be served by an Anthropic model');
    const out: JsonObject = {};
    if (req.bodyHasModel) out.model = req.model;
    const { system, messages } = convertMessages(body.messages);
    if (system.length > 0) out.system = system;
    out.messages = messages;
    const max = body.max_completion_tokens ?? body.max_tokens;
    out.max_tokens = typeof max === 'number' ? max : DEFAULT_MAX_TOKENS;
    const budget = THINKING_BUDGETS[String(body.reasoning_effort)];
    if (budget !== undefined) {
      // OpenAI's max_completion_tokens counts the reasoning too; without one, room for both.
      if (typeof max !== 'number') out.max_tokens = DEFAULT_MAX_TOKENS + budget;
      const fits = Math.min(budget, Number(out.max_tokens) - 1);
      if (fits >= 1024) out.thinking = { type: 'enabled', budget_tokens: fits };
    }
    if (typeof body.stop === 'string') out.stop_sequences = [body.stop];
    else if (Array.isArray(body.stop)) out.stop_sequences = body.stop;
    for (const k of ['temperature', 'top_p'] as const) if (typeof body[k] === 'number') out[k] = body[k];
    if (req.stream) out.stream = true;
    // Anthropic refuses a tool_choice without tools.
    if (Array.isArray(body.tools) && body.tools.length > 0) {
      out.tools = body.tools.map(convertTool);
      const choice = convertToolChoice(body.tool_choice, body.parallel_tool_calls);
      if (choice) out.tool_choice = choice;
    }
    if (typeof body.user === 'string') out.metadata = { user_id: body.user };
    return out;
  },
  response(body, state) {
    recordMessage(body, state);
    return chatCompletion(body);
  },
  stream(state) {
    return new ChunkStream(state, obj(state.request.stream_options)?.include_usage === true);
  },
  error(body, status) {
    const e = obj(body.error);
    return {
      error: {
        message: str(e?.message) ?? `the provider answered ${status}`,
        type: openaiType(status),
        param: null,
        code: str(e?.type) ?? anthropicType(status),
      },
    };
  },
};

// ---------- the request ----------

function convertMessages(input: unknown): { system: Obj[]; messages: Obj[] } {
  if (!Array.isArray(input)) throw bad('the request must have a "messages" array');
  const system: Obj[] = [];
  const messages: { role: string; content: Obj[] }[] = [];
  const push = (role: string, blocks: Obj[]) => {
    if (blocks.length === 0) return;
    const last = messages[messages.length - 1];
    if (last && last.role === role) last.content.push(...blocks);
    else messages.push({ role, content: blocks });
  };
  for (const raw of input) {
    const m = obj(raw);
    if (!m) throw bad('each message must be an object');
    switch (m.role) {
      case 'system':
      case 'developer': {
        const text = textOf(m.content);
        if (text !== '') system.push({ type: 'text', text });
        break;
      }
      case 'user':
        push('user', userBlocks(m.content));
        break;
      case 'assistant':
        push('assistant', assistantBlocks(m));
        break;
      case 'tool':
        push('user', [
          { type: 'tool_result', tool_use_id: str(m.tool_call_id) ?? '', content: textOf(m.content) },
        ]);
        break;
      default:
        throw bad(`a message with role ${JSON.stringify(m.role)} cannot be sent to an Anthropic model`);
    }
  }
  return { system, messages };
}

function userBlocks(content: unknown): Obj[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  if (!Array.isArray(content)) return [];
  const out: Obj[] = [];
  for (const raw of content) {
    const p = obj(raw);
    if (p?.type === 'text') out.push({ type: 'text', text: str(p.text) ?? '' });
    else if (p?.type === 'image_url') out.push(imageBlock(str(obj(p.image_url)?.url) ?? ''));
    else throw bad(`a ${JSON.stringify(p?.type)} content part cannot be sent to an Anthropic model`);
  }
  return out;
}

const DATA_URL = /^data:([^;,]+);base64,(.*)$/s;

/** An image part's URL as an image block: a data URL inline (base64), any other URL by reference. */
function imageBlock(url: string): Obj {
  const d = DATA_URL.exec(url);
  if (d) return { type: 'image', source: { type: 'base64', media_type: d[1], data: d[2] } };
  return { type: 'image', source: { type: 'url', url } };
}

function assistantBlocks(m: Obj): Obj[] {
  const out: Obj[] = [];
  const text = textOf(m.content);
  if (text !== '') out.push({ type: 'text', text });
  if (Array.isArray(m.tool_calls)) {
    for (const raw of m.tool_calls) {
      const c = obj(raw);
      const f = obj(c?.function);
      const args = str(f?.arguments) ?? '';
      let input: unknown = {};
      if (args.trim() !== '') {
        try {
          input = JSON.parse(args);
        } catch {
          throw bad(`the arguments of tool call ${JSON.stringify(c?.id)} are not JSON`);
        }
      }
      out.push({ type: 'tool_use', id: str(c?.id) ?? '', name: str(f?.name) ?? '', input });
    }
  }
  return out;
}

function convertTool(raw: unknown): Obj {
  const t = obj(raw);
  const f = obj(t?.function);
  if (t?.type !== 'function' || !f) throw bad('only function tools can be sent to an Anthropic model');
  const out: Obj = {
    name: str(f.name) ?? '',
    input_schema: obj(f.parameters) ?? { type: 'object', properties: {} },
  };
  if (typeof f.description === 'string') out.description = f.description;
  return out;
}

function convertToolChoice(choice: unknown, parallel: unknown): Obj | undefined {
  let out: Obj | undefined;
  if (choice === 'auto') out = { type: 'auto' };
  else if (choice === 'none') out = { type: 'none' };
  else if (choice === 'required') out = { type: 'any' };
  else {
    const name = str(obj(obj(choice)?.function)?.name);
    if (name !== undefined) out = { type: 'tool', name };
  }
  if (parallel === false) out = { ...(out ?? { type: 'auto' }), disable_parallel_tool_use: true };
  return out;
}

// ---------- the answer ----------

function chatCompletion(m: Obj): Obj {
  let text: string | null = null;
  let reasoning = '';
  const calls: Obj[] = [];
  for (const raw of Array.isArray(m.content) ? m.content : []) {
    const b = obj(raw);
    if (b?.type === 'text') text = (text ?? '') + (str(b.text) ?? '');
    else if (b?.type === 'thinking') reasoning += str(b.thinking) ?? '';
    else if (b?.type === 'tool_use') {
      calls.push({
        id: b.id,
        type: 'function',
        function: { name: b.name, arguments: JSON.stringify(b.input ?? {}) },
      });
    }
  }
  const message: Obj = { role: 'assistant', content: text, refusal: null };
  if (reasoning !== '') message.reasoning_content = reasoning;
  if (calls.length > 0) message.tool_calls = calls;
  const out: Obj = {
    id: m.id,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: m.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: finishReason(m.stop_reason) ?? 'stop' }],
  };
  const u = obj(m.usage);
  const n = u && normalizeUsage(u);
  if (n) out.usage = openaiUsage(n);
  return out;
}

/** Anthropic's events, each converted as it arrives into the chunks (if any) it stands for. */
class ChunkStream implements StreamConverter {
  readonly #sse = new SseSplitter();
  readonly #state: LlmRequestState;
  readonly #includeUsage: boolean;
  readonly #created = Math.floor(Date.now() / 1000);
  #id = '';
  #model = '';
  /** Anthropic content block index → OpenAI tool call index. */
  readonly #tools = new Map<number, number>();
  #done = false;

  constructor(state: LlmRequestState, includeUsage: boolean) {
    this.#state = state;
    this.#includeUsage = includeUsage;
  }

  write(chunk: Buffer): string | undefined {
    let out: string | undefined;
    for (const e of this.#sse.push(chunk)) {
      const s = this.#event(e.data);
      if (s) out = out === undefined ? s : out + s;
    }
    return out;
  }

  end(): string | undefined {
    const e = this.#sse.flush();
    return e ? this.#event(e.data) : undefined;
  }

  #chunk(delta: Obj, finish: string | null = null): string {
    return sseData({
      id: this.#id,
      object: 'chat.completion.chunk',
      created: this.#created,
      model: this.#model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    });
  }

  #event(data: string | undefined): string | undefined {
    if (data === undefined || this.#done) return undefined;
    let ev: Obj;
    try {
      ev = JSON.parse(data) as Obj;
    } catch {
      return undefined;
    }
    switch (ev.type) {
      case 'message_start': {
        const m = obj(ev.message) ?? {};
        this.#id = str(m.id) ?? '';
        this.#model = str(m.model) ?? this.#state.model ?? '';
        recordMessage(m, this.#state);
        return this.#chunk({ role: 'assistant', content: '' });
      }
      case 'content_block_start': {
        const b = obj(ev.content_block);
        if (b?.type === 'tool_use') {
          const index = this.#tools.size;
          this.#tools.set(Number(ev.index), index);
          return this.#chunk({
            tool_calls: [{ index, id: b.id, type: 'function', function: { name: b.name, arguments: '' } }],
          });
        }
        if (b?.type === 'text' && typeof b.text === 'string' && b.text !== '')
          return this.#chunk({ content: b.text });
        return undefined;
      }
      case 'content_block_delta': {
        const d = obj(ev.delta);
        if (d?.type === 'text_delta') return this.#chunk({ content: str(d.text) ?? '' });
        if (d?.type === 'input_json_delta') {
          const index = this.#tools.get(Number(ev.index));
          if (index === undefined) return undefined;
          return this.#chunk({ tool_calls: [{ index, function: { arguments: str(d.partial_json) ?? '' } }] });
        }
        if (d?.type === 'thinking_delta') return this.#chunk({ reasoning_content: str(d.thinking) ?? '' });
        // A thinking block's signature has no place in a chat completion chunk.
        return undefined;
      }
      case 'message_delta': {
        const u = obj(ev.usage);
        if (u) recordMessage(ev, this.#state);
        return this.#chunk({}, finishReason(obj(ev.delta)?.stop_reason) ?? 'stop');
      }
      case 'message_stop': {
        this.#done = true;
        const u = this.#state.usage;
        const usage =
          this.#includeUsage && u
            ? sseData({
                id: this.#id,
                object: 'chat.completion.chunk',
                created: this.#created,
                model: this.#model,
                choices: [],
                usage: openaiUsage(u),
              })
            : '';
        return `${usage}data: [DONE]\n\n`;
      }
      case 'error': {
        // The OpenAI clients raise an error for a data event carrying `error`.
        this.#done = true;
        const e = obj(ev.error);
        return sseData({
          error: {
            message: str(e?.message) ?? 'the provider failed mid-stream',
            type: str(e?.type) ?? 'api_error',
            param: null,
            code: null,
          },
        });
      }
      default:
        // ping, content_block_stop
        return undefined;
    }
  }
}
