import { SseSplitter, sseData } from '../sse.ts';
import type { LlmRequestState, LlmUsage } from '../state.ts';
import { normalizeUsage } from '../usage.ts';
import { bad, obj, str } from './json.ts';
import type { FormatPair, JsonObject, StreamConverter } from './types.ts';

type Obj = Record<string, unknown>;

export const openaiResponsesToOpenaiChat: FormatPair<'openai-responses', 'openai-chat'> = {
  client: 'openai-responses',
  provider: 'openai-chat',
  request(body, req) {
    for (const k of ['previous_response_id', 'conversation', 'prompt'] as const) {
      if (body[k] !== undefined && body[k] !== null)
        throw bad(`${k} needs a provider that stores responses; this model speaks chat completions only`);
    }
    const out: JsonObject = {};
    if (req.bodyHasModel) out.model = req.model;
    out.messages = convertInput(body.instructions, body.input);
    if (typeof body.max_output_tokens === 'number')
      out[req.tokenLimitField ?? 'max_tokens'] = body.max_output_tokens;
    for (const k of ['temperature', 'top_p'] as const) if (typeof body[k] === 'number') out[k] = body[k];
    const user = str(body.safety_identifier) ?? str(body.user);
    if (user !== undefined) out.user = user;
    if (req.stream) {
      out.stream = true;
      out.stream_options = { include_usage: true };
    }
    if (Array.isArray(body.tools) && body.tools.length > 0) {
      out.tools = body.tools.map(convertTool);
      const choice = convertToolChoice(body.tool_choice);
      if (choice !== undefined) out.tool_choice = choice;
      // Chat refuses parallel_tool_calls without tools.
      if (typeof body.parallel_tool_calls === 'boolean') out.parallel_tool_calls = body.parallel_tool_calls;
    }
    const format = responseFormat(obj(obj(body.text)?.format));
    if (format) out.response_format = format;
    return out;
  },
  response(body, state) {
    if (typeof body.model === 'string') state.responseModel = body.model;
    const u = obj(body.usage);
    const n = u && normalizeUsage(u);
    if (n) state.record(n);
    return responseOf(body, state.request, n);
  },
  stream(state) {
    return new EventStream(state);
  },
  // Chat's errors are already OpenAI's error objects, the shape Responses uses.
};

// ---------- the request ----------

function convertInput(instructions: unknown, input: unknown): Obj[] {
  const out: Obj[] = [];
  const sys = str(instructions);
  if (sys) out.push({ role: 'system', content: sys });
  if (typeof input === 'string') {
    out.push({ role: 'user', content: input });
    return out;
  }
  if (!Array.isArray(input)) throw bad('the request must have an "input" string or array');
  for (const raw of input) {
    const item = obj(raw);
    const type = item?.type ?? (item?.role !== undefined ? 'message' : undefined);
    switch (type) {
      case 'message':
        out.push(message(item as Obj));
        break;
      case 'function_call': {
        const call = {
          id: str(item?.call_id) ?? '',
          type: 'function',
          function: { name: str(item?.name) ?? '', arguments: str(item?.arguments) ?? '{}' },
        };
        // Parallel calls are separate items in Responses, one assistant message in chat.
        const last = out[out.length - 1];
        if (last?.role === 'assistant' && Array.isArray(last.tool_calls)) last.tool_calls.push(call);
        else out.push({ role: 'assistant', content: null, tool_calls: [call] });
        break;
      }
      case 'function_call_output':
        out.push({ role: 'tool', tool_call_id: str(item?.call_id) ?? '', content: outputText(item?.output) });
        break;
      case 'reasoning':
        // The Responses model's own reasoning: another model cannot use it.
        break;
      default:
        throw bad(`an input item of type ${JSON.stringify(type)} cannot be sent to a chat completions model`);
    }
  }
  return out;
}

/** A function call's output: a string, or its text parts joined. */
function outputText(output: unknown): string {
  if (typeof output === 'string') return output;
  if (!Array.isArray(output)) return '';
  return output.map((p) => str(obj(p)?.text) ?? '').join('');
}

function message(m: Obj): Obj {
  const role = m.role === 'developer' ? 'system' : m.role;
  if (role !== 'user' && role !== 'assistant' && role !== 'system')
    throw bad(`a message with role ${JSON.stringify(m.role)} is not a Responses message`);
  const content = m.content;
  if (typeof content === 'string') return { role, content };
  if (!Array.isArray(content)) throw bad('a message needs content');
  // System and assistant messages are text in chat; user messages may carry images.
  if (role !== 'user') return { role, content: content.map((p) => str(obj(p)?.text) ?? '').join('') };
  return { role, content: content.map(userPart) };
}

function userPart(raw: unknown): Obj {
  const p = obj(raw);
  switch (p?.type) {
    case 'input_text':
      return { type: 'text', text: str(p.text) ?? '' };
    case 'input_image': {
      const url = str(p.image_url);
      if (url === undefined)
        throw bad('an input_image by file_id cannot be sent to a chat completions model');
      const image: Obj = { url };
      if (typeof p.detail === 'string') image.detail = p.detail;
      return { type: 'image_url', image_url: image };
    }
    default:
      throw bad(`a ${JSON.stringify(p?.type)} content part cannot be sent to a chat completions model`);
  }
}

function convertTool(raw: unknown): Obj {
  const t = obj(raw);
  if (t?.type !== 'function')
    throw bad(`the built-in tool ${JSON.stringify(t?.type)} cannot be sent to a chat completions model`);
  const f: Obj = { name: str(t.name) ?? '', parameters: obj(t.parameters) ?? { type: 'object' } };
  if (typeof t.description === 'string') f.description = t.description;
  if (typeof t.strict === 'boolean') f.strict = t.strict;
  return { type: 'function', function: f };
}

function convertToolChoice(tc: unknown): unknown {
  if (tc === 'auto' || tc === 'none' || tc === 'required') return tc;
  const o = obj(tc);
  if (o?.type === 'function') return { type: 'function', function: { name: str(o.name) ?? '' } };
  return undefined;
}

function responseFormat(f: Obj | undefined): Obj | undefined {
  if (f?.type === 'json_object') return { type: 'json_object' };
  if (f?.type !== 'json_schema') return undefined;
  const schema: Obj = { name: str(f.name) ?? 'response', schema: obj(f.schema) ?? {} };
  if (typeof f.strict === 'boolean') schema.strict = f.strict;
  if (typeof f.description === 'string') schema.description = f.description;
  return { type: 'json_schema', json_schema: schema };
}

// ---------- the answer ----------

/** Normalised usage as a Response's. */
export function responsesUsage(u: LlmUsage | undefined): Obj {
  const n = u ?? { input: 0, output: 0, cachedInput: 0, reasoning: 0 };
  return {
    input_tokens: n.input,
    input_tokens_details: { cached_tokens: n.cachedInput },
    output_tokens: n.output,
    output_tokens_details: { reasoning_tokens: n.reasoning },
    total_tokens: n.input + n.output,
  };
}

/** The status a finish reason leaves a response in, and why it is incomplete. */
function outcome(finish: unknown): { status: string; incomplete: Obj | null } {
  if (finish === 'length') return { status: 'incomplete', incomplete: { reason: 'max_output_tokens' } };
  if (finish === 'content_filter') return { status: 'incomplete', incomplete: { reason: 'content_filter' } };
  return { status: 'completed', incomplete: null };
}

/** The Response object around `output`, echoing the request's settings as the API does. */
function envelope(
  id: string,
  created: unknown,
  model: unknown,
  request: JsonObject,
  status: string,
  rest: Obj,
): Obj {
  return {
    id,
    object: 'response',
    created_at: typeof created === 'number' ? created : Math.floor(Date.now() / 1000),
    status,
    error: null,
    incomplete_details: null,
    instructions: request.instructions ?? null,
    max_output_tokens: request.max_output_tokens ?? null,
    model,
    output: [],
    parallel_tool_calls: request.parallel_tool_calls ?? true,
    previous_response_id: null,
    reasoning: { effort: null, summary: null },
    store: false,
    temperature: request.temperature ?? null,
    text: request.text ?? { format: { type: 'text' } },
    tool_choice: request.tool_choice ?? 'auto',
    tools: request.tools ?? [],
    top_p: request.top_p ?? null,
    truncation: 'disabled',
    usage: null,
    user: null,
    metadata: request.metadata ?? {},
    ...rest,
  };
}

const textItem = (id: string, text: string, status: string): Obj => ({
  id,
  type: 'message',
  status,
  role: 'assistant',
  content: status === 'in_progress' ? [] : [{ type: 'output_text', text, annotations: [] }],
});

const callItem = (callId: string, name: string, args: string, status: string): Obj => ({
  id: `fc_${callId}`,
  type: 'function_call',
  status,
  arguments: args,
  call_id: callId,
  name,
});

function responseOf(c: Obj, request: JsonObject, usage: LlmUsage | undefined): Obj {
  const id = str(c.id) ?? '';
  const choice = obj(Array.isArray(c.choices) ? c.choices[0] : undefined);
  const m = obj(choice?.message);
  const output: Obj[] = [];
  const text = str(m?.content);
  if (text) output.push(textItem(`msg_${id}`, text, 'completed'));
  for (const raw of Array.isArray(m?.tool_calls) ? m.tool_calls : []) {
    const call = obj(raw);
    const f = obj(call?.function);
    output.push(callItem(str(call?.id) ?? '', str(f?.name) ?? '', str(f?.arguments) ?? '', 'completed'));
  }
  const o = outcome(choice?.finish_reason);
  return envelope(`resp_${id}`, c.created, c.model, request, o.status, {
    incomplete_details: o.incomplete,
    output,
    usage: responsesUsage(usage),
  });
}

interface OpenItem {
  index: number;
  item: Obj;
  /** The text or the arguments so far. */
  acc: string;
}

/** Chat chunks, each converted as it arrives into the Responses events it stands for. */
class EventStream implements StreamConverter {
  readonly #sse = new SseSplitter();
  readonly #state: LlmRequestState;
  #seq = 0;
  #started = false;
  #finished = false;
  #id = '';
  #created: unknown;
  #model: unknown;
  #finish: unknown;
  readonly #output: Obj[] = [];
  #open: OpenItem | undefined;
  /** Chat tool call index → its item, while it is the open one. */
  readonly #calls = new Map<number, OpenItem>();

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
    const out = (e ? this.#event(e.data) : '') + this.#complete();
    return out === '' ? undefined : out;
  }

  #send(type: string, fields: Obj): string {
    return sseData({ type, sequence_number: this.#seq++, ...fields }, type);
  }

  #event(data: string | undefined): string {
    if (data === undefined || this.#finished) return '';
    if (data.trim() === '[DONE]') return this.#complete();
    let c: Obj;
    try {
      c = JSON.parse(data) as Obj;
    } catch {
      return '';
    }
    const err = obj(c.error);
    if (err) {
      this.#finished = true;
      return this.#send('error', {
        code: str(err.code) ?? null,
        message: str(err.message) ?? 'the provider failed mid-stream',
        param: str(err.param) ?? null,
      });
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
      if (this.#open?.item.type !== 'message')
        out += this.#openItem(textItem(`msg_${this.#id}`, '', 'in_progress'));
      const open = this.#open as OpenItem;
      open.acc += text;
      out += this.#send('response.output_text.delta', {
        item_id: open.item.id,
        output_index: open.index,
        content_index: 0,
        delta: text,
        logprobs: [],
      });
    }
    for (const raw of Array.isArray(d?.tool_calls) ? d.tool_calls : []) {
      const tc = obj(raw);
      const k = typeof tc?.index === 'number' ? tc.index : 0;
      const f = obj(tc?.function);
      let call = this.#calls.get(k);
      if (!call) {
        out += this.#openItem(callItem(str(tc?.id) ?? '', str(f?.name) ?? '', '', 'in_progress'));
        call = this.#open as OpenItem;
        this.#calls.set(k, call);
      }
      const args = str(f?.arguments);
      if (args) {
        call.acc += args;
        // A call whose item has closed (another began) still collects its arguments for the end.
        if (call === this.#open)
          out += this.#send('response.function_call_arguments.delta', {
            item_id: call.item.id,
            output_index: call.index,
            delta: args,
          });
      }
    }
    if (typeof choice.finish_reason === 'string') {
      this.#finish = choice.finish_reason;
      out += this.#closeItem();
    }
    return out;
  }

  #start(c: Obj): string {
    this.#started = true;
    this.#id = str(c.id) ?? '';
    this.#created = c.created;
    this.#model = str(c.model) || this.#state.model;
    if (typeof c.model === 'string') this.#state.responseModel = c.model;
    const r = this.#envelope('in_progress', {});
    return (
      this.#send('response.created', { response: r }) + this.#send('response.in_progress', { response: r })
    );
  }

  #envelope(status: string, rest: Obj): Obj {
    return envelope(`resp_${this.#id}`, this.#created, this.#model, this.#state.request, status, rest);
  }

  #openItem(item: Obj): string {
    const out = this.#closeItem();
    const open = { index: this.#output.length, item, acc: '' };
    this.#output.push(item);
    this.#open = open;
    let events = this.#send('response.output_item.added', { output_index: open.index, item });
    if (item.type === 'message') {
      events += this.#send('response.content_part.added', {
        item_id: item.id,
        output_index: open.index,
        content_index: 0,
        part: { type: 'output_text', text: '', annotations: [] },
      });
    }
    return out + events;
  }

  #closeItem(): string {
    const open = this.#open;
    if (!open) return '';
    this.#open = undefined;
    const { index, item } = open;
    let out = '';
    let done: Obj;
    if (item.type === 'message') {
      const part = { type: 'output_text', text: open.acc, annotations: [] };
      out += this.#send('response.output_text.done', {
        item_id: item.id,
        output_index: index,
        content_index: 0,
        text: open.acc,
        logprobs: [],
      });
      out += this.#send('response.content_part.done', {
        item_id: item.id,
        output_index: index,
        content_index: 0,
        part,
      });
      done = textItem(str(item.id) ?? '', open.acc, 'completed');
    } else {
      out += this.#send('response.function_call_arguments.done', {
        item_id: item.id,
        output_index: index,
        name: item.name,
        arguments: open.acc,
      });
      done = callItem(str(item.call_id) ?? '', str(item.name) ?? '', open.acc, 'completed');
    }
    this.#output[index] = done;
    return out + this.#send('response.output_item.done', { output_index: index, item: done });
  }

  /** At `[DONE]` (or the end of a stream without it): the whole response with its usage. */
  #complete(): string {
    if (this.#finished || !this.#started) return '';
    this.#finished = true;
    const out = this.#closeItem();
    // Arguments that arrived for a call after its item closed.
    for (const call of this.#calls.values()) {
      const item = this.#output[call.index];
      if (item && item.arguments !== call.acc) item.arguments = call.acc;
    }
    const o = outcome(this.#finish);
    const response = this.#envelope(o.status, {
      incomplete_details: o.incomplete,
      output: this.#output,
      usage: responsesUsage(this.#state.usage),
    });
    const type = o.status === 'completed' ? 'response.completed' : 'response.incomplete';
    return out + this.#send(type, { response });
  }
}
