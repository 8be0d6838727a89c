// OpenAI chat completions to Gemini's generateContent (the Gemini API and Vertex AI alike): system
// and developer messages become `systemInstruction`, the rest `contents` of parts (text, inline
// images, functionCall, functionResponse) with roles user/model, tools `functionDeclarations` with
// `toolConfig`, sampling `generationConfig`. The answer's candidate, finishReason and usageMetadata
// (cached and thinking tokens included) come back as a chat.completion; streamGenerateContent's SSE
// is converted event by event into chat.completion.chunk SSE. A function call's thoughtSignature
// (which thinking models need back with the call) travels in the tool call's
// `extra_content.google.thought_signature`, as Gemini's own OpenAI-compatible endpoint carries it.
import { randomUUID } from 'node:crypto';
import { GwError } from '../../errors.ts';
import { SseSplitter } from '../sse.ts';
import type { LlmRequestState } from '../state.ts';
import { normalizeUsage } from '../usage.ts';
import {
  type ChatToolCall,
  ChunkWriter,
  chatCompletion,
  clientWantsUsage,
  contentText,
  type FinishReason,
  inlineImage,
  openaiError,
  stopList,
  toolArguments,
} from './openai-chat-answer.ts';
import type { FormatPair, JsonObject, StreamConverter } from './types.ts';

type Obj = Record<string, unknown>;
type Part = Obj;
interface Content {
  role: 'user' | 'model';
  parts: Part[];
}

const obj = (v: unknown): Obj | undefined => (v && typeof v === 'object' ? (v as Obj) : undefined);

export const openaiChatToGeminiGenerateContent: FormatPair<'openai-chat', 'gemini-generate-content'> = {
  client: 'openai-chat',
  provider: 'gemini-generate-content',
  request(body) {
    const out: JsonObject = {};
    const system: Part[] = [];
    const contents: Content[] = [];
    // functionResponse names the function; OpenAI's tool message only has the call's id.
    const callNames = new Map<string, string>();
    const push = (role: Content['role'], parts: Part[]) => {
      if (parts.length === 0) return;
      const last = contents[contents.length - 1];
      if (last?.role === role) last.parts.push(...parts);
      else contents.push({ role, parts });
    };
    for (const m of (Array.isArray(body.messages) ? body.messages : []) as Obj[]) {
      const role = m?.role;
      if (role === 'system' || role === 'developer') {
        const t = contentText(m.content);
        if (t) system.push({ text: t });
      } else if (role === 'user') {
        push('user', userParts(m.content));
      } else if (role === 'assistant') {
        const parts: Part[] = [];
        const t = contentText(m.content);
        if (t) parts.push({ text: t });
        for (const c of (Array.isArray(m.tool_calls) ? m.tool_calls : []) as Obj[]) {
          const f = obj(c.function) ?? {};
          const name = String(f.name ?? '');
          if (typeof c.id === 'string') callNames.set(c.id, name);
          const part: Part = { functionCall: { name, args: toolArguments(f.arguments) } };
          const sig = obj(obj(c.extra_content)?.google)?.thought_signature;
          if (typeof sig === 'string') part.thoughtSignature = sig;
          parts.push(part);
        }
        push('model', parts);
      } else if (role === 'tool') {
        const id = String(m.tool_call_id ?? '');
        push('user', [
          { functionResponse: { name: callNames.get(id) ?? id, response: toolResponse(m.content) } },
        ]);
      }
    }
    out.contents = contents;
    if (system.length > 0) out.systemInstruction = { parts: system };
    const gen: Obj = {};
    const maxTokens = body.max_completion_tokens ?? body.max_tokens;
    if (typeof maxTokens === 'number') gen.maxOutputTokens = maxTokens;
    if (typeof body.temperature === 'number') gen.temperature = body.temperature;
    if (typeof body.top_p === 'number') gen.topP = body.top_p;
    // One choice is converted back; more would be silently lost.
    if (typeof body.n === 'number' && body.n > 1)
      throw new GwError(
        'GW_ERR_LLM_BAD_REQUEST',
        'n > 1 cannot be served by a Gemini model through this gateway',
      );
    if (typeof body.seed === 'number') gen.seed = body.seed;
    if (typeof body.presence_penalty === 'number') gen.presencePenalty = body.presence_penalty;
    if (typeof body.frequency_penalty === 'number') gen.frequencyPenalty = body.frequency_penalty;
    const stop = stopList(body.stop);
    if (stop) gen.stopSequences = stop;
    const rf = obj(body.response_format);
    if (rf?.type === 'json_object' || rf?.type === 'json_schema') {
      gen.responseMimeType = 'application/json';
      const schema = obj(rf.json_schema)?.schema;
      if (schema) gen.responseJsonSchema = schema;
    }
    if (Object.keys(gen).length > 0) out.generationConfig = gen;
    if (Array.isArray(body.tools) && body.tools.length > 0) {
      const declarations = (body.tools as Obj[])
        .filter((t) => t?.type === 'function')
        .map((t) => {
          const f = obj(t.function) ?? {};
          const d: Obj = { name: f.name };
          if (typeof f.description === 'string') d.description = f.description;
          // JSON Schema as OpenAI clients write it (additionalProperties, $defs …), not the OpenAPI subset.
          if (f.parameters) d.parametersJsonSchema = f.parameters;
          return d;
        });
      out.tools = [{ functionDeclarations: declarations }];
      const mode = functionCallingConfig(body.tool_choice);
      if (mode) out.toolConfig = { functionCallingConfig: mode };
    }
    return out;
  },
  response(body, state) {
    record(body, state);
    const cand = obj((body.candidates as unknown[] | undefined)?.[0]);
    let text: string | null = null;
    let reasoning = '';
    const calls: ChatToolCall[] = [];
    for (const p of (obj(cand?.content)?.parts ?? []) as Part[]) {
      // Thought summaries (asked for with includeThoughts) are the reasoning, not the answer.
      if (p.thought === true) {
        if (typeof p.text === 'string') reasoning += p.text;
        continue;
      }
      if (typeof p.text === 'string') text = (text ?? '') + p.text;
      const call = obj(p.functionCall);
      if (call) calls.push(toolCall(call, p.thoughtSignature));
    }
    const blocked = !cand && obj(body.promptFeedback)?.blockReason !== undefined;
    const finish = blocked ? 'content_filter' : finishReason(cand?.finishReason, calls.length > 0);
    return chatCompletion(state, text, calls, finish, state.usage, reasoning);
  },
  stream(state) {
    return new GenerateContentStream(state);
  },
  error(body, status) {
    const e = obj(body.error);
    if (!e || typeof e.message !== 'string') return undefined;
    return openaiError(e.message, status, typeof e.status === 'string' ? e.status : null);
  },
};

function userParts(content: unknown): Part[] {
  if (typeof content === 'string') return content ? [{ text: content }] : [];
  const out: Part[] = [];
  for (const p of (Array.isArray(content) ? content : []) as Obj[]) {
    if (p?.type === 'text' && typeof p.text === 'string') out.push({ text: p.text });
    else if (p?.type === 'image_url') {
      const img = inlineImage(String(obj(p.image_url)?.url ?? ''), 'Gemini');
      out.push({ inlineData: { mimeType: img.mediaType, data: img.data } });
    }
  }
  return out;
}

/** A tool's result as functionResponse.response, which must be an object. */
export function toolResponse(content: unknown): Obj {
  const text = contentText(content);
  try {
    const v = JSON.parse(text) as unknown;
    if (v && typeof v === 'object' && !Array.isArray(v)) return v as Obj;
  } catch {}
  return { content: text };
}

function functionCallingConfig(choice: unknown): Obj | undefined {
  if (choice === 'auto') return { mode: 'AUTO' };
  if (choice === 'none') return { mode: 'NONE' };
  if (choice === 'required') return { mode: 'ANY' };
  const name = obj(obj(choice)?.function)?.name;
  return typeof name === 'string' ? { mode: 'ANY', allowedFunctionNames: [name] } : undefined;
}

function toolCall(call: Obj, signature: unknown): ChatToolCall {
  const out: ChatToolCall = {
    id: typeof call.id === 'string' ? call.id : `call_${randomUUID().replaceAll('-', '').slice(0, 24)}`,
    type: 'function',
    function: { name: String(call.name ?? ''), arguments: JSON.stringify(call.args ?? {}) },
  };
  if (typeof signature === 'string') out.extra_content = { google: { thought_signature: signature } };
  return out;
}

/** The finishReasons of an answer stopped by Gemini's filters. */
export const FILTERED: ReadonlySet<string> = new Set([
  'SAFETY',
  'RECITATION',
  'BLOCKLIST',
  'PROHIBITED_CONTENT',
  'SPII',
  'IMAGE_SAFETY',
]);

function finishReason(reason: unknown, calledTools: boolean): FinishReason | null {
  switch (reason) {
    case undefined:
    case null:
    case 'FINISH_REASON_UNSPECIFIED':
      return null;
    case 'MAX_TOKENS':
      return 'length';
    default:
      if (FILTERED.has(reason as string)) return 'content_filter';
      return calledTools ? 'tool_calls' : 'stop';
  }
}

/** An answer's (or stream event's) model version and usage, on the slot. */
export function record(body: Obj, state: LlmRequestState): void {
  if (typeof body.modelVersion === 'string') state.responseModel = body.modelVersion;
  const u = obj(body.usageMetadata);
  const n = u && normalizeUsage(u);
  if (n) state.record(n);
}

class GenerateContentStream implements StreamConverter {
  readonly #sse = new SseSplitter();
  readonly #state: LlmRequestState;
  readonly #out: ChunkWriter;
  readonly #keepUsage: boolean;
  #started = false;
  #tools = 0;
  #finished = false;

  constructor(state: LlmRequestState) {
    this.#state = state;
    this.#out = new ChunkWriter(state);
    this.#keepUsage = clientWantsUsage(state.request);
  }

  write(chunk: Buffer): string | undefined {
    let out = '';
    for (const e of this.#sse.push(chunk)) out += this.#event(e.data);
    return out || undefined;
  }

  end(): string | undefined {
    const e = this.#sse.flush();
    let out = e ? this.#event(e.data) : '';
    // Gemini's stream has no end marker: one that gave no finishReason was cut.
    if (!this.#finished) return out || undefined;
    const u = this.#state.usage;
    if (this.#keepUsage && u) out += this.#out.usage(u);
    return `${out}data: [DONE]\n\n`;
  }

  #event(data: string | undefined): string {
    if (data === undefined) return '';
    let body: Obj;
    try {
      body = JSON.parse(data) as Obj;
    } catch {
      return '';
    }
    const err = obj(body.error);
    if (err) {
      const status = typeof err.code === 'number' ? err.code : 500;
      return `data: ${JSON.stringify(openaiError(String(err.message ?? 'Gemini stream error'), status, typeof err.status === 'string' ? err.status : null))}\n\n`;
    }
    record(body, this.#state);
    let out = '';
    if (!this.#started) {
      this.#started = true;
      out += this.#out.delta({ role: 'assistant', content: '' });
    }
    const cand = obj((body.candidates as unknown[] | undefined)?.[0]);
    for (const p of (obj(cand?.content)?.parts ?? []) as Part[]) {
      if (p.thought === true) {
        if (typeof p.text === 'string' && p.text !== '')
          out += this.#out.delta({ reasoning_content: p.text });
        continue;
      }
      if (typeof p.text === 'string' && p.text !== '') out += this.#out.delta({ content: p.text });
      const call = obj(p.functionCall);
      if (call) {
        // Gemini sends each function call whole.
        const c = toolCall(call, p.thoughtSignature);
        out += this.#out.delta({ tool_calls: [{ index: this.#tools++, ...c }] });
      }
    }
    const blocked = !cand && obj(body.promptFeedback)?.blockReason !== undefined;
    const finish = blocked ? 'content_filter' : finishReason(cand?.finishReason, this.#tools > 0);
    if (finish && !this.#finished) {
      this.#finished = true;
      out += this.#out.delta({}, finish);
    }
    return out;
  }
}
