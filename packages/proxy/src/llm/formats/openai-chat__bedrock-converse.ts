// OpenAI chat completions to Amazon Bedrock's Converse API: system and developer messages become
// `system`, the rest `messages` of content blocks (text, inline images, toolUse, toolResult) with
// roles alternating as Bedrock requires, tools become `toolConfig`, sampling `inferenceConfig`. The
// answer's content blocks, stopReason and usage come back as a chat.completion; ConverseStream's
// binary event stream (application/vnd.amazon.eventstream) is decoded frame by frame as it arrives
// and each event sent on at once as a chat.completion.chunk.
import { bedrockErrorMessage, ConverseFrames } from '../providers/bedrock/event-stream.ts';
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
type Block = Obj;
interface Message {
  role: 'user' | 'assistant';
  content: Block[];
}

const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
const obj = (v: unknown): Obj | undefined => (v && typeof v === 'object' ? (v as Obj) : undefined);

export const openaiChatToBedrockConverse: FormatPair<'openai-chat', 'bedrock-converse'> = {
  client: 'openai-chat',
  provider: 'bedrock-converse',
  request(body) {
    const out: JsonObject = {};
    const system: Block[] = [];
    const messages: Message[] = [];
    const push = (role: Message['role'], blocks: Block[]) => {
      if (blocks.length === 0) return;
      const last = messages[messages.length - 1];
      if (last?.role === role) last.content.push(...blocks);
      else messages.push({ role, content: blocks });
    };
    for (const m of (Array.isArray(body.messages) ? body.messages : []) as Obj[]) {
      const role = m?.role;
      if (role === 'system' || role === 'developer') {
        const t = contentText(m.content);
        if (t) system.push({ text: t });
      } else if (role === 'user') {
        push('user', userBlocks(m.content));
      } else if (role === 'assistant') {
        const blocks: Block[] = [];
        const t = contentText(m.content);
        if (t) blocks.push({ text: t });
        for (const c of (Array.isArray(m.tool_calls) ? m.tool_calls : []) as Obj[]) {
          const f = obj(c.function) ?? {};
          blocks.push({ toolUse: { toolUseId: c.id, name: f.name, input: toolArguments(f.arguments) } });
        }
        push('assistant', blocks);
      } else if (role === 'tool') {
        push('user', [
          { toolResult: { toolUseId: m.tool_call_id, content: [{ text: contentText(m.content) }] } },
        ]);
      }
    }
    out.messages = messages;
    if (system.length > 0) out.system = system;
    const inference: Obj = {};
    const maxTokens = body.max_completion_tokens ?? body.max_tokens;
    if (typeof maxTokens === 'number') inference.maxTokens = maxTokens;
    if (typeof body.temperature === 'number') inference.temperature = body.temperature;
    if (typeof body.top_p === 'number') inference.topP = body.top_p;
    const stop = stopList(body.stop);
    if (stop) inference.stopSequences = stop;
    if (Object.keys(inference).length > 0) out.inferenceConfig = inference;
    const tools = toolConfig(body.tools, body.tool_choice);
    if (tools) out.toolConfig = tools;
    return out;
  },
  response(body, state) {
    const message = obj(obj(body.output)?.message);
    let text: string | null = null;
    let reasoning = '';
    const calls: ChatToolCall[] = [];
    for (const b of (Array.isArray(message?.content) ? message.content : []) as Obj[]) {
      if (typeof b.text === 'string') text = (text ?? '') + b.text;
      const thought = obj(obj(b.reasoningContent)?.reasoningText)?.text;
      if (typeof thought === 'string') reasoning += thought;
      const use = obj(b.toolUse);
      if (use) {
        calls.push({
          id: String(use.toolUseId),
          type: 'function',
          function: { name: String(use.name), arguments: JSON.stringify(use.input ?? {}) },
        });
      }
    }
    const u = obj(body.usage);
    const usage = u && normalizeUsage(u);
    if (usage) state.record(usage);
    return chatCompletion(state, text, calls, finishReason(body.stopReason), usage, reasoning);
  },
  stream(state) {
    return new ConverseStream(state);
  },
  error(body, status) {
    const message = bedrockErrorMessage(body);
    return message === undefined ? undefined : openaiError(message, status);
  },
};

function userBlocks(content: unknown): Block[] {
  if (typeof content === 'string') return content ? [{ text: content }] : [];
  const out: Block[] = [];
  for (const p of (Array.isArray(content) ? content : []) as Obj[]) {
    if (p?.type === 'text' && typeof p.text === 'string') out.push({ text: p.text });
    else if (p?.type === 'image_url') {
      const img = inlineImage(String(obj(p.image_url)?.url ?? ''), 'Bedrock');
      const format = img.mediaType.slice(img.mediaType.indexOf('/') + 1).replace('jpg', 'jpeg');
      out.push({ image: { format, source: { bytes: img.data } } });
    }
  }
  return out;
}

function toolConfig(tools: unknown, choice: unknown): Obj | undefined {
  if (!Array.isArray(tools) || tools.length === 0) return undefined;
  const specs = (tools as Obj[])
    .filter((t) => t?.type === 'function')
    .map((t) => {
      const f = obj(t.function) ?? {};
      const spec: Obj = {
        name: f.name,
        inputSchema: { json: f.parameters ?? { type: 'object', properties: {} } },
      };
      if (typeof f.description === 'string') spec.description = f.description;
      return { toolSpec: spec };
    });
  const out: Obj = { tools: specs };
  // Converse has no "none": the tools stay declared (earlier toolUse blocks need them), unforced.
  if (choice === 'required') out.toolChoice = { any: {} };
  else if (choice === 'auto') out.toolChoice = { auto: {} };
  else {
    const name = obj(obj(choice)?.function)?.name;
    if (typeof name === 'string') out.toolChoice = { tool: { name } };
  }
  return out;
}

function finishReason(stop: unknown): FinishReason | null {
  switch (stop) {
    case undefined:
    case null:
      return null;
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'tool_use':
      return 'tool_calls';
    case 'guardrail_intervened':
    case 'content_filtered':
      return 'content_filter';
    default:
      return 'stop';
  }
}

class ConverseStream implements StreamConverter {
  readonly #frames = new ConverseFrames();
  readonly #state: LlmRequestState;
  readonly #out: ChunkWriter;
  readonly #keepUsage: boolean;
  /** contentBlockIndex → index among the answer's tool calls. */
  readonly #tools = new Map<number, number>();
  #stopped = false;

  constructor(state: LlmRequestState) {
    this.#state = state;
    this.#out = new ChunkWriter(state);
    this.#keepUsage = clientWantsUsage(state.request);
  }

  write(chunk: Buffer): string | undefined {
    let out = '';
    for (const f of this.#frames.push(chunk)) {
      // A failed stream: the client gets an error event and no [DONE].
      if ('failure' in f)
        out += `data: ${JSON.stringify(openaiError(f.failure.message, f.failure.status, f.failure.code))}\n\n`;
      else out += this.#event(f.event, f.body);
    }
    return out || undefined;
  }

  end(): string | undefined {
    // A stream without messageStop was cut: no [DONE], so the client sees it incomplete.
    return this.#stopped && !this.#frames.failed ? 'data: [DONE]\n\n' : undefined;
  }

  #event(type: string | undefined, body: Obj): string {
    switch (type) {
      case 'messageStart':
        return this.#out.delta({ role: 'assistant', content: '' });
      case 'contentBlockStart': {
        const use = obj(obj(body.start)?.toolUse);
        if (!use) return '';
        const index = this.#tools.size;
        this.#tools.set(num(body.contentBlockIndex), index);
        return this.#out.delta({
          tool_calls: [
            { index, id: use.toolUseId, type: 'function', function: { name: use.name, arguments: '' } },
          ],
        });
      }
      case 'contentBlockDelta': {
        const d = obj(body.delta) ?? {};
        if (typeof d.text === 'string') return this.#out.delta({ content: d.text });
        const use = obj(d.toolUse);
        if (use && typeof use.input === 'string') {
          const index = this.#tools.get(num(body.contentBlockIndex)) ?? 0;
          return this.#out.delta({ tool_calls: [{ index, function: { arguments: use.input } }] });
        }
        const reasoning = obj(d.reasoningContent);
        if (reasoning && typeof reasoning.text === 'string')
          return this.#out.delta({ reasoning_content: reasoning.text });
        return '';
      }
      case 'messageStop':
        this.#stopped = true;
        return this.#out.delta({}, finishReason(body.stopReason) ?? 'stop');
      case 'metadata': {
        const usage = obj(body.usage);
        const u = usage && normalizeUsage(usage);
        if (!u) return '';
        this.#state.record(u);
        return this.#keepUsage ? this.#out.usage(u) : '';
      }
      default:
        return '';
    }
  }
}
