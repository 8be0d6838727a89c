// Anthropic Messages to Gemini's generateContent (the Gemini API, and Vertex AI for Gemini models):
// `system` becomes `systemInstruction`, messages `contents` of parts (text, inline images,
// functionCall, functionResponse by the called function's name) with roles user/model, tools
// `functionDeclarations` with `toolConfig`, sampling and `thinking` `generationConfig` (thinking as
// `thinkingConfig`). The answer: a message, or, streamed, streamGenerateContent's SSE converted event
// by event into Anthropic's events. Thought summaries (`thought: true` parts) become thinking blocks;
// a part's `thoughtSignature` travels as a thinking block's `signature` just before the block it came
// with, and goes back on the part that follows that thinking block, as Gemini needs it returned.
import { randomUUID } from 'node:crypto';
import { SseJsonSplitter } from '../sse.ts';
import type { LlmRequestState } from '../state.ts';
import {
  AnthropicEvents,
  anthropicError,
  anthropicMessage,
  inlineImageOf,
  messagesOf,
  type StopReason,
} from './anthropic-answer.ts';
import { bad, obj, str, textOf } from './json.ts';
import { FILTERED, record, toolResponse } from './openai-chat__gemini-generate-content.ts';
import type { FormatPair, JsonObject, StreamConverter } from './types.ts';

type Obj = Record<string, unknown>;
type Part = Obj;

export const anthropicMessagesToGeminiGenerateContent: FormatPair<
  'anthropic-messages',
  'gemini-generate-content'
> = {
  client: 'anthropic-messages',
  provider: 'gemini-generate-content',
  request(body) {
    const out: JsonObject = {};
    // functionResponse names the function; a tool_result only has the tool_use's id.
    const names = new Map<string, string>();
    const contents: { role: 'user' | 'model'; parts: Part[] }[] = [];
    for (const m of messagesOf(body)) {
      const parts = m.role === 'user' ? userParts(m.blocks, names) : modelParts(m.blocks, names);
      if (parts.length === 0) continue;
      const role = m.role === 'user' ? 'user' : 'model';
      const last = contents[contents.length - 1];
      if (last?.role === role) last.parts.push(...parts);
      else contents.push({ role, parts });
    }
    out.contents = contents;
    const system = textOf(body.system);
    if (system !== '') out.systemInstruction = { parts: [{ text: system }] };
    const gen: Obj = {};
    if (typeof body.max_tokens === 'number') gen.maxOutputTokens = body.max_tokens;
    if (typeof body.temperature === 'number') gen.temperature = body.temperature;
    if (typeof body.top_p === 'number') gen.topP = body.top_p;
    if (typeof body.top_k === 'number') gen.topK = body.top_k;
    if (Array.isArray(body.stop_sequences) && body.stop_sequences.length > 0)
      gen.stopSequences = body.stop_sequences;
    const thinking = thinkingConfig(obj(body.thinking));
    if (thinking) gen.thinkingConfig = thinking;
    if (Object.keys(gen).length > 0) out.generationConfig = gen;
    if (Array.isArray(body.tools) && body.tools.length > 0) {
      out.tools = [{ functionDeclarations: body.tools.map(declaration) }];
      const mode = functionCallingConfig(obj(body.tool_choice));
      if (mode) out.toolConfig = { functionCallingConfig: mode };
    }
    return out;
  },
  response(body, state) {
    record(body, state);
    const cand = obj((body.candidates as unknown[] | undefined)?.[0]);
    const content: Obj[] = [];
    for (const p of (obj(cand?.content)?.parts ?? []) as Part[]) {
      const sig = str(p.thoughtSignature);
      const prev = content[content.length - 1];
      if (p.thought === true) {
        content.push({ type: 'thinking', thinking: str(p.text) ?? '', signature: sig ?? '' });
        continue;
      }
      if (sig !== undefined) {
        if (prev?.type === 'thinking' && prev.signature === '') prev.signature = sig;
        else content.push({ type: 'thinking', thinking: '', signature: sig });
      }
      const text = str(p.text);
      const last = content[content.length - 1];
      if (text && last?.type === 'text') last.text = `${String(last.text)}${text}`;
      else if (text) content.push({ type: 'text', text });
      const call = obj(p.functionCall);
      if (call)
        content.push({
          type: 'tool_use',
          id: toolUseId(call),
          name: str(call.name) ?? '',
          input: call.args ?? {},
        });
    }
    const calls = content.some((b) => b.type === 'tool_use');
    const id = str(body.responseId);
    return anthropicMessage(state, content, stopReason(body, cand, calls), state.usage, id && `msg_${id}`);
  },
  stream(state) {
    return new GenerateContentToEvents(state);
  },
  error(body, status) {
    const message = str(obj(body.error)?.message);
    return message === undefined ? undefined : anthropicError(message, status);
  },
};

// ---------- the request ----------

function userParts(blocks: Obj[], names: Map<string, string>): Part[] {
  return blocks.flatMap((b): Part[] => {
    switch (b.type) {
      case 'text':
        return str(b.text) ? [{ text: b.text }] : [];
      case 'image': {
        const img = inlineImageOf(b, 'Gemini');
        return [{ inlineData: { mimeType: img.mediaType, data: img.data } }];
      }
      case 'tool_result': {
        const id = str(b.tool_use_id) ?? '';
        // Gemini's convention: `error` for a failed call, the output otherwise.
        const response = b.is_error === true ? { error: textOf(b.content) } : toolResponse(b.content);
        return [{ functionResponse: { name: names.get(id) ?? id, response } }];
      }
      default:
        throw bad(`a ${JSON.stringify(b.type)} content block cannot be sent to a Gemini model`);
    }
  });
}

function modelParts(blocks: Obj[], names: Map<string, string>): Part[] {
  const parts: Part[] = [];
  // A thinking block's signature goes back on the part after it (see the module's comment).
  let signature: string | undefined;
  const push = (p: Part) => {
    if (signature !== undefined) p.thoughtSignature = signature;
    signature = undefined;
    parts.push(p);
  };
  for (const b of blocks) {
    switch (b.type) {
      case 'text':
        if (str(b.text)) push({ text: b.text });
        break;
      case 'tool_use': {
        const name = str(b.name) ?? '';
        names.set(str(b.id) ?? '', name);
        push({ functionCall: { name, args: obj(b.input) ?? {} } });
        break;
      }
      case 'thinking':
        // The summary's text is not sent back: Gemini keeps its thoughts in the signature.
        if (str(b.signature)) signature = str(b.signature);
        break;
      case 'redacted_thinking':
        break;
      default:
        throw bad(`a ${JSON.stringify(b.type)} content block cannot be sent to a Gemini model`);
    }
  }
  const last = parts[parts.length - 1];
  if (signature !== undefined && last && last.thoughtSignature === undefined)
    last.thoughtSignature = signature;
  return parts;
}

/**
 * `thinking` as Gemini's thinkingConfig: a budget as thinkingBudget, `adaptive` as -1 (Gemini's
 * dynamic thinking); both ask for thought summaries, which come back as thinking blocks. `disabled`
 * sends nothing: Gemini's 2.5 Pro refuses a budget of 0, and the model's default is what an
 * Anthropic client that says nothing gets too.
 */
function thinkingConfig(t: Obj | undefined): Obj | undefined {
  if (t?.type === 'enabled' && typeof t.budget_tokens === 'number')
    return { thinkingBudget: t.budget_tokens, includeThoughts: true };
  if (t?.type === 'adaptive') return { thinkingBudget: -1, includeThoughts: true };
  return undefined;
}

function declaration(raw: unknown): Obj {
  const t = obj(raw);
  if (!t || (t.type !== undefined && t.type !== 'custom'))
    throw bad(`the server tool ${JSON.stringify(t?.type)} cannot be sent to a Gemini model`);
  const d: Obj = { name: t.name };
  if (typeof t.description === 'string') d.description = t.description;
  // JSON Schema as Anthropic clients write it, not the OpenAPI subset `parameters` takes.
  if (obj(t.input_schema)) d.parametersJsonSchema = t.input_schema;
  return d;
}

function functionCallingConfig(tc: Obj | undefined): Obj | undefined {
  switch (tc?.type) {
    case 'auto':
      return { mode: 'AUTO' };
    case 'any':
      return { mode: 'ANY' };
    case 'none':
      return { mode: 'NONE' };
    case 'tool':
      return { mode: 'ANY', allowedFunctionNames: [str(tc.name) ?? ''] };
    default:
      return undefined;
  }
}

// ---------- the answer ----------

const toolUseId = (call: Obj) => str(call.id) ?? `toolu_${randomUUID().replaceAll('-', '').slice(0, 24)}`;

/** The answer's stop reason: undefined while a stream goes on (no finishReason yet). */
function stopReason(body: Obj, cand: Obj | undefined, calledTools: boolean): StopReason;
function stopReason(
  body: Obj,
  cand: Obj | undefined,
  calledTools: boolean,
  streaming: true,
): StopReason | undefined;
function stopReason(
  body: Obj,
  cand: Obj | undefined,
  calledTools: boolean,
  streaming = false,
): StopReason | undefined {
  if (!cand && obj(body.promptFeedback)?.blockReason !== undefined) return 'refusal';
  switch (cand?.finishReason) {
    case undefined:
    case null:
    case 'FINISH_REASON_UNSPECIFIED':
      return streaming ? undefined : calledTools ? 'tool_use' : 'end_turn';
    case 'MAX_TOKENS':
      return 'max_tokens';
    default:
      if (FILTERED.has(cand?.finishReason as string)) return 'refusal';
      // STOP, also when a stop sequence ended the answer: Gemini does not tell them apart.
      return calledTools ? 'tool_use' : 'end_turn';
  }
}

/** streamGenerateContent's events, each converted as it arrives into the Anthropic events it stands for. */
class GenerateContentToEvents implements StreamConverter {
  readonly #sse = new SseJsonSplitter();
  readonly #state: LlmRequestState;
  readonly #out: AnthropicEvents;
  #calledTools = false;

  constructor(state: LlmRequestState) {
    this.#state = state;
    this.#out = new AnthropicEvents(state);
  }

  write(chunk: Buffer): string | undefined {
    return (
      this.#sse
        .push(chunk)
        .map((e) => this.#event(e))
        .join('') || undefined
    );
  }

  end(): string | undefined {
    const out = this.#sse.flush().map((e) => this.#event(e));
    // Gemini's stream has no end marker: one that gave no finishReason was cut.
    if (!this.#out.finished) out.push(this.#out.fail('the Gemini stream ended without a finish reason'));
    return out.join('') || undefined;
  }

  #event(body: Obj): string {
    if (this.#out.finished) return '';
    const err = obj(body.error);
    if (err)
      return this.#out.fail(
        str(err.message) ?? 'Gemini stream error',
        typeof err.code === 'number' ? err.code : 500,
      );
    record(body, this.#state);
    const id = str(body.responseId);
    // The first event's usage carries the prompt's tokens.
    let out = this.#out.start(id ? `msg_${id}` : undefined, this.#state.usage);
    const cand = obj((body.candidates as unknown[] | undefined)?.[0]);
    for (const p of (obj(cand?.content)?.parts ?? []) as Part[]) {
      const sig = str(p.thoughtSignature);
      if (p.thought === true) {
        out += this.#out.thinking(str(p.text) ?? '');
        if (sig !== undefined) out += this.#out.signature(sig);
        continue;
      }
      if (sig !== undefined) out += this.#out.signature(sig);
      out += this.#out.text(str(p.text) ?? '');
      const call = obj(p.functionCall);
      if (call) {
        // Gemini sends each function call whole.
        this.#calledTools = true;
        out += this.#out.toolCall(toolUseId(call), str(call.name) ?? '', call.args ?? {});
      }
    }
    const stop = stopReason(body, cand, this.#calledTools, true);
    if (stop !== undefined) out += this.#out.finish(stop);
    return out;
  }
}
