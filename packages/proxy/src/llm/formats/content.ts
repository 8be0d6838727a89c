// What guards and prompt enrichment need to know of each client format, in one place rather than in
// every pair: where a request's and an answer's texts are (by content scope), the text a streamed
// event adds, how a stream ends with an error the client's SDK raises, and where added messages go.
import type { LlmContentScope, LlmFormat, LlmPromptMessageIR } from '../../config/ir.ts';
import { sseData } from '../sse.ts';
import { obj, str } from './json.ts';
import type { JsonObject } from './types.ts';

/** A text inside a body: where it is (keys from the root) and what it reads. */
export interface TextSlot {
  scope: LlmContentScope;
  path: (string | number)[];
  text: string;
}

type Slots = TextSlot[];

/** A string, or each text part of a content array (`type: text`, `input_text`, `output_text`). */
function contentSlots(out: Slots, scope: LlmContentScope, content: unknown, path: (string | number)[]): void {
  if (typeof content === 'string') {
    out.push({ scope, path, text: content });
    return;
  }
  if (!Array.isArray(content)) return;
  content.forEach((p, i) => {
    const part = obj(p);
    const t = str(part?.type);
    const text = str(part?.text);
    if (text !== undefined && (t === 'text' || t === 'input_text' || t === 'output_text'))
      out.push({ scope, path: [...path, i, 'text'], text });
  });
}

/** Every string inside a JSON value (a tool call's structured input). */
function leafSlots(out: Slots, scope: LlmContentScope, v: unknown, path: (string | number)[]): void {
  if (typeof v === 'string') out.push({ scope, path, text: v });
  else if (Array.isArray(v)) for (const [i, x] of v.entries()) leafSlots(out, scope, x, [...path, i]);
  else if (v && typeof v === 'object')
    for (const k in v) leafSlots(out, scope, (v as JsonObject)[k], [...path, k]);
}

const SYSTEM_ROLES = new Set(['system', 'developer']);

function openaiChatRequest(body: JsonObject): Slots {
  const out: Slots = [];
  const msgs = Array.isArray(body.messages) ? body.messages : [];
  msgs.forEach((m, i) => {
    const msg = obj(m);
    if (!msg) return;
    const role = str(msg.role) ?? '';
    const scope: LlmContentScope = SYSTEM_ROLES.has(role)
      ? 'systemPrompt'
      : role === 'tool'
        ? 'toolOutput'
        : 'messages';
    contentSlots(out, scope, msg.content, ['messages', i, 'content']);
    if (Array.isArray(msg.tool_calls))
      msg.tool_calls.forEach((c, ci) => {
        const args = str(obj(obj(c)?.function)?.arguments);
        if (args !== undefined)
          out.push({
            scope: 'toolInput',
            path: ['messages', i, 'tool_calls', ci, 'function', 'arguments'],
            text: args,
          });
      });
  });
  return out;
}

function openaiResponsesRequest(body: JsonObject): Slots {
  const out: Slots = [];
  if (typeof body.instructions === 'string')
    out.push({ scope: 'systemPrompt', path: ['instructions'], text: body.instructions });
  if (typeof body.input === 'string') {
    out.push({ scope: 'messages', path: ['input'], text: body.input });
    return out;
  }
  if (!Array.isArray(body.input)) return out;
  body.input.forEach((it, i) => {
    const item = obj(it);
    if (!item) return;
    const type = str(item.type);
    if (type === 'function_call_output') {
      contentSlots(out, 'toolOutput', item.output, ['input', i, 'output']);
    } else if (type === 'function_call') {
      const args = str(item.arguments);
      if (args !== undefined) out.push({ scope: 'toolInput', path: ['input', i, 'arguments'], text: args });
    } else if (type === undefined || type === 'message') {
      const scope = SYSTEM_ROLES.has(str(item.role) ?? '') ? 'systemPrompt' : 'messages';
      contentSlots(out, scope, item.content, ['input', i, 'content']);
    }
  });
  return out;
}

function anthropicRequest(body: JsonObject): Slots {
  const out: Slots = [];
  contentSlots(out, 'systemPrompt', body.system, ['system']);
  const msgs = Array.isArray(body.messages) ? body.messages : [];
  msgs.forEach((m, i) => {
    const msg = obj(m);
    if (!msg) return;
    const c = msg.content;
    const path = ['messages', i, 'content'];
    if (typeof c === 'string') {
      out.push({ scope: 'messages', path, text: c });
      return;
    }
    if (!Array.isArray(c)) return;
    c.forEach((b, bi) => {
      const block = obj(b);
      const t = str(block?.type);
      if (t === 'text' && typeof block?.text === 'string')
        out.push({ scope: 'messages', path: [...path, bi, 'text'], text: block.text });
      else if (t === 'tool_use') leafSlots(out, 'toolInput', block?.input, [...path, bi, 'input']);
      else if (t === 'tool_result') contentSlots(out, 'toolOutput', block?.content, [...path, bi, 'content']);
    });
  });
  return out;
}

function embeddingsRequest(body: JsonObject): Slots {
  const out: Slots = [];
  if (typeof body.input === 'string') out.push({ scope: 'messages', path: ['input'], text: body.input });
  else if (Array.isArray(body.input))
    body.input.forEach((v, i) => {
      if (typeof v === 'string') out.push({ scope: 'messages', path: ['input', i], text: v });
    });
  return out;
}

/** The texts of a client's request, in the client's format. */
export function requestTexts(format: LlmFormat, body: JsonObject): TextSlot[] {
  switch (format) {
    case 'openai-chat':
      return openaiChatRequest(body);
    case 'openai-responses':
      return openaiResponsesRequest(body);
    case 'anthropic-messages':
    case 'anthropic-count-tokens':
      return anthropicRequest(body);
    case 'openai-embeddings':
      return embeddingsRequest(body);
    default:
      return [];
  }
}

/** The assistant's texts in a complete answer, in the client's format (scope `messages`). */
export function answerTexts(format: LlmFormat, body: JsonObject): TextSlot[] {
  const out: Slots = [];
  if (format === 'openai-chat') {
    const choices = Array.isArray(body.choices) ? body.choices : [];
    choices.forEach((c, i) => {
      const m = obj(obj(c)?.message);
      if (typeof m?.content === 'string')
        out.push({ scope: 'messages', path: ['choices', i, 'message', 'content'], text: m.content });
    });
  } else if (format === 'openai-responses') {
    const items = Array.isArray(body.output) ? body.output : [];
    items.forEach((it, i) => {
      const item = obj(it);
      if (item?.type === 'message') contentSlots(out, 'messages', item.content, ['output', i, 'content']);
    });
  } else if (format === 'anthropic-messages') {
    contentSlots(out, 'messages', body.content, ['content']);
  }
  return out;
}

/** The text a streamed event (already in the client's format) adds to the answer; '' when none. */
export function streamedText(format: LlmFormat, event: string | undefined, data: string | undefined): string {
  if (data === undefined || data === '[DONE]') return '';
  if (format === 'openai-chat') {
    if (!data.includes('"content"')) return '';
  } else if (format === 'openai-responses') {
    if (event !== 'response.output_text.delta' && !data.includes('"response.output_text.delta"')) return '';
  } else if (format === 'anthropic-messages') {
    if (!data.includes('"text_delta"')) return '';
  } else return '';
  let v: JsonObject;
  try {
    v = JSON.parse(data) as JsonObject;
  } catch {
    return '';
  }
  if (format === 'openai-chat') {
    const choices = Array.isArray(v.choices) ? v.choices : [];
    let t = '';
    for (const c of choices) t += str(obj(obj(c)?.delta)?.content) ?? '';
    return t;
  }
  if (format === 'openai-responses')
    return v.type === 'response.output_text.delta' ? (str(v.delta) ?? '') : '';
  const d = obj(v.delta);
  return d?.type === 'text_delta' ? (str(d.text) ?? '') : '';
}

/**
 * The event that ends a stream with an error, in the client's format: the OpenAI SDK raises an
 * APIError for a chunk carrying `error` (chat) or an `error` event (Responses), the Anthropic SDK for
 * an `error` event.
 */
export function streamError(format: LlmFormat, message: string, errorType: string, code: string): string {
  if (format === 'anthropic-messages')
    return sseData({ type: 'error', error: { type: errorType, message } }, 'error');
  if (format === 'openai-responses')
    return sseData(
      { type: 'error', code, message, param: null, error: { type: errorType, code, message, param: null } },
      'error',
    );
  return sseData({ error: { message, type: errorType, param: null, code } });
}

/** The container holding the last key of `path`, copying each one on the way that is not `owned`. */
function parentOf(
  root: JsonObject,
  path: readonly (string | number)[],
  owned: Set<object> | undefined,
): Record<string | number, unknown> {
  let cur: Record<string | number, unknown> = root;
  for (let i = 0; i < path.length - 1; i++) {
    const k = path[i] as string | number;
    let next = cur[k] as Record<string | number, unknown>;
    if (owned && !owned.has(next)) {
      next = (Array.isArray(next) ? [...next] : { ...next }) as Record<string | number, unknown>;
      owned.add(next);
      cur[k] = next;
    }
    cur = next;
  }
  return cur;
}

/** Writes `value` at `path` under `root`, copying each container on the way that is not `owned`. */
export function writeText(
  root: JsonObject,
  path: (string | number)[],
  value: string,
  owned?: Set<object>,
): void {
  parentOf(root, path, owned)[path[path.length - 1] as string | number] = value;
}

/**
 * A message as a guard service sees it (the guardrail webhook contract's `{role, content}`): its role
 * and its text slots, whose texts joined with a newline are its content ('' for none).
 */
export interface MessageTexts {
  role: string;
  slots: TextSlot[];
}

/** The contract's joiner of a message's text parts (@gw/guardrail-sdk's messageText). */
const PART_JOINER = '\n';

export function messageContent(m: { slots: readonly { text: string }[] }): string {
  return m.slots.map((s) => s.text).join(PART_JOINER);
}

const under = (slots: Slots, ...prefix: (string | number)[]) =>
  slots.filter((s) => prefix.every((p, i) => s.path[i] === p));

/**
 * A request's messages in conversation order, in any client format, as OpenAI-style `{role, texts}`:
 * Anthropic's `system` and Responses' `instructions` are a system message, a Responses tool result a
 * `tool` message and its tool call an assistant one. Tool-call arguments are not message text. Only
 * the slots `keep` accepts count (a guard's scope); a message keeps its place without them.
 */
export function requestMessages(
  format: LlmFormat,
  body: JsonObject,
  keep: (s: TextSlot) => boolean = () => true,
): MessageTexts[] {
  const slots = requestTexts(format, body).filter((s) => s.scope !== 'toolInput' && keep(s));
  const list = (v: unknown) => (Array.isArray(v) ? v : []);
  const roleOf = (m: unknown, fallback: string) => str(obj(m)?.role) ?? fallback;
  switch (format) {
    case 'openai-chat':
      return list(body.messages).map((m, i) => ({
        role: roleOf(m, 'user'),
        slots: under(slots, 'messages', i),
      }));
    case 'anthropic-messages':
    case 'anthropic-count-tokens': {
      const system = body.system !== undefined ? [{ role: 'system', slots: under(slots, 'system') }] : [];
      return [
        ...system,
        ...list(body.messages).map((m, i) => ({
          role: roleOf(m, 'user'),
          slots: under(slots, 'messages', i),
        })),
      ];
    }
    case 'openai-responses': {
      const out: MessageTexts[] = [];
      if (typeof body.instructions === 'string')
        out.push({ role: 'system', slots: under(slots, 'instructions') });
      if (typeof body.input === 'string') out.push({ role: 'user', slots: under(slots, 'input') });
      list(body.input).forEach((it, i) => {
        const type = str(obj(it)?.type);
        const role =
          type === 'function_call_output'
            ? 'tool'
            : type === 'function_call'
              ? 'assistant'
              : type === undefined || type === 'message'
                ? roleOf(it, 'user')
                : undefined;
        if (role !== undefined) out.push({ role, slots: under(slots, 'input', i) });
      });
      return out;
    }
    case 'openai-embeddings':
      return slots.map((s) => ({ role: 'user', slots: [s] }));
    default:
      return [];
  }
}

/**
 * A request's own list of messages as the client sent it (what a `raw` webhook reads and replaces):
 * chat's and Anthropic's `messages`, Responses' `input` (a string input a single user message);
 * undefined for formats without one (embeddings).
 */
export function requestMessageList(
  format: LlmFormat,
  body: JsonObject,
): { key: 'messages' | 'input'; list: unknown[] } | undefined {
  switch (format) {
    case 'openai-chat':
    case 'anthropic-messages':
    case 'anthropic-count-tokens':
      return Array.isArray(body.messages) ? { key: 'messages', list: body.messages } : undefined;
    case 'openai-responses':
      if (Array.isArray(body.input)) return { key: 'input', list: body.input };
      return typeof body.input === 'string'
        ? { key: 'input', list: [{ role: 'user', content: body.input }] }
        : undefined;
    default:
      return undefined;
  }
}

/** A complete answer's messages, one per choice (OpenAI chat), output message (Responses) or one (Anthropic). */
export function answerMessages(format: LlmFormat, body: JsonObject): MessageTexts[] {
  const slots = answerTexts(format, body);
  if (format === 'openai-chat')
    return (Array.isArray(body.choices) ? body.choices : []).map((c, i) => ({
      role: str(obj(obj(c)?.message)?.role) ?? 'assistant',
      slots: under(slots, 'choices', i),
    }));
  if (format === 'openai-responses') {
    const out: MessageTexts[] = [];
    (Array.isArray(body.output) ? body.output : []).forEach((it, i) => {
      if (obj(it)?.type === 'message') out.push({ role: 'assistant', slots: under(slots, 'output', i) });
    });
    return out;
  }
  if (format === 'anthropic-messages') return [{ role: 'assistant', slots }];
  return [];
}

/**
 * Writes a guard service's new content of one message: into its first text slot, the other text
 * parts removed (a string elsewhere emptied), so the message reads as the service wrote it and keeps
 * its images and tool calls. Unchanged content writes nothing; false when there is nowhere to write.
 */
export function writeMessageContent(
  root: JsonObject,
  m: MessageTexts,
  content: string,
  owned?: Set<object>,
): boolean {
  if (content === messageContent(m)) return true;
  const [first, ...rest] = m.slots;
  if (!first) return false;
  // Last first: removing a part shifts the ones after it.
  for (const s of rest.reverse()) {
    const key = s.path[s.path.length - 1] as string | number;
    const part = s.path[s.path.length - 2];
    if (key === 'text' && typeof part === 'number') {
      const parts = parentOf(root, s.path.slice(0, -1), owned);
      if (Array.isArray(parts)) {
        parts.splice(part, 1);
        continue;
      }
    }
    parentOf(root, s.path, owned)[key] = '';
  }
  writeText(root, first.path, content, owned);
  return true;
}

/**
 * The client's body with messages added before and after its own (a copy where changed). A format
 * without system messages (Anthropic's) gets system ones in `system`, as the `defaults` way would.
 */
export function enrichRequest(
  format: LlmFormat,
  body: JsonObject,
  prepend: readonly LlmPromptMessageIR[],
  append: readonly LlmPromptMessageIR[],
): void {
  const plain = (m: LlmPromptMessageIR) => ({ role: m.role, content: m.content });
  if (format === 'openai-chat') {
    const msgs = Array.isArray(body.messages) ? body.messages : [];
    body.messages = [...prepend.map(plain), ...msgs, ...append.map(plain)];
  } else if (format === 'openai-responses') {
    const input =
      typeof body.input === 'string'
        ? [{ role: 'user', content: body.input }]
        : Array.isArray(body.input)
          ? body.input
          : [];
    body.input = [...prepend.map(plain), ...input, ...append.map(plain)];
  } else if (format === 'anthropic-messages' || format === 'anthropic-count-tokens') {
    const sys = (l: readonly LlmPromptMessageIR[]) =>
      l.filter((m) => SYSTEM_ROLES.has(m.role)).map((m) => m.content);
    const chat = (l: readonly LlmPromptMessageIR[]) => l.filter((m) => !SYSTEM_ROLES.has(m.role)).map(plain);
    const before = sys(prepend);
    const after = sys(append);
    if (before.length + after.length > 0) {
      const own = body.system;
      if (Array.isArray(own)) {
        const block = (t: string) => ({ type: 'text', text: t });
        body.system = [...before.map(block), ...own, ...after.map(block)];
      } else {
        body.system = [...before, ...(typeof own === 'string' && own !== '' ? [own] : []), ...after].join(
          '\n\n',
        );
      }
    }
    const msgs = Array.isArray(body.messages) ? body.messages : [];
    body.messages = [...chat(prepend), ...msgs, ...chat(append)];
  }
}
