// Anthropic Messages to Amazon Bedrock's Converse API. The request: `system` becomes Converse's
// `system`, content blocks become Converse's (text, inline images, toolUse, toolResult, and thinking
// blocks `reasoningContent` so a tool-using thinking turn can continue), sampling `inferenceConfig`,
// tools `toolConfig`, and `thinking` and `top_k` go in `additionalModelRequestFields`, where Bedrock
// hands them to the model as Anthropic's own fields. The answer: a message, or, streamed,
// ConverseStream's frames (./providers/bedrock/event-stream.ts) turned into Anthropic's events as they
// arrive; the usage comes in the `metadata` event after `messageStop`, so message_delta waits for it.
import { bedrockErrorMessage, ConverseFrames } from '../providers/bedrock/event-stream.ts';
import type { LlmRequestState } from '../state.ts';
import { normalizeUsage } from '../usage.ts';
import {
  AnthropicEvents,
  anthropicError,
  anthropicMessage,
  inlineImageOf,
  messagesOf,
  type StopReason,
} from './anthropic-answer.ts';
import { bad, obj, str, textOf } from './json.ts';
import type { FormatPair, JsonObject, StreamConverter } from './types.ts';

type Obj = Record<string, unknown>;

const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

export const anthropicMessagesToBedrockConverse: FormatPair<'anthropic-messages', 'bedrock-converse'> = {
  client: 'anthropic-messages',
  provider: 'bedrock-converse',
  request(body) {
    const out: JsonObject = {};
    const messages: { role: 'user' | 'assistant'; content: Obj[] }[] = [];
    for (const m of messagesOf(body)) {
      const content = m.blocks.flatMap(m.role === 'user' ? userBlock : assistantBlock);
      if (content.length === 0) continue;
      const last = messages[messages.length - 1];
      if (last?.role === m.role) last.content.push(...content);
      else messages.push({ role: m.role, content });
    }
    out.messages = messages;
    const system = textOf(body.system);
    if (system !== '') out.system = [{ text: system }];
    const inference: Obj = {};
    if (typeof body.max_tokens === 'number') inference.maxTokens = body.max_tokens;
    if (typeof body.temperature === 'number') inference.temperature = body.temperature;
    if (typeof body.top_p === 'number') inference.topP = body.top_p;
    if (Array.isArray(body.stop_sequences) && body.stop_sequences.length > 0)
      inference.stopSequences = body.stop_sequences;
    if (Object.keys(inference).length > 0) out.inferenceConfig = inference;
    const tools = toolConfig(body.tools, obj(body.tool_choice));
    if (tools) out.toolConfig = tools;
    // Fields Converse has no name for: Bedrock passes these to the model in its own format.
    const extra: Obj = {};
    if (obj(body.thinking)) extra.thinking = body.thinking;
    if (typeof body.top_k === 'number') extra.top_k = body.top_k;
    if (Object.keys(extra).length > 0) out.additionalModelRequestFields = extra;
    return out;
  },
  response(body, state) {
    const content: Obj[] = [];
    for (const raw of (obj(obj(body.output)?.message)?.content ?? []) as unknown[]) {
      const b = obj(raw) ?? {};
      if (typeof b.text === 'string') content.push({ type: 'text', text: b.text });
      const use = obj(b.toolUse);
      if (use) content.push({ type: 'tool_use', id: use.toolUseId, name: use.name, input: use.input ?? {} });
      const r = obj(b.reasoningContent);
      const t = obj(r?.reasoningText);
      if (t)
        content.push({ type: 'thinking', thinking: str(t.text) ?? '', signature: str(t.signature) ?? '' });
      if (typeof r?.redactedContent === 'string')
        content.push({ type: 'redacted_thinking', data: r.redactedContent });
    }
    const u = obj(body.usage);
    const usage = u && normalizeUsage(u);
    if (usage) state.record(usage);
    return anthropicMessage(state, content, stopReason(body.stopReason), usage);
  },
  stream(state) {
    return new ConverseToEvents(state);
  },
  error(body, status) {
    const message = bedrockErrorMessage(body);
    return message === undefined ? undefined : anthropicError(message, status);
  },
};

// ---------- the request ----------

function userBlock(b: Obj): Obj[] {
  switch (b.type) {
    case 'text':
      return textBlock(b);
    case 'image':
      return [imageBlock(b)];
    case 'tool_result': {
      const content: Obj[] = [];
      if (typeof b.content === 'string') content.push({ text: b.content });
      for (const raw of Array.isArray(b.content) ? b.content : []) {
        const c = obj(raw) ?? {};
        if (c.type === 'text') content.push({ text: str(c.text) ?? '' });
        else if (c.type === 'image') content.push(imageBlock(c));
      }
      const result: Obj = { toolUseId: str(b.tool_use_id) ?? '', content };
      if (b.is_error === true) result.status = 'error';
      return [{ toolResult: result }];
    }
    default:
      throw bad(`a ${JSON.stringify(b.type)} content block cannot be sent to a Bedrock model`);
  }
}

function assistantBlock(b: Obj): Obj[] {
  switch (b.type) {
    case 'text':
      return textBlock(b);
    case 'tool_use':
      return [{ toolUse: { toolUseId: str(b.id) ?? '', name: str(b.name) ?? '', input: b.input ?? {} } }];
    case 'thinking':
      // Sent back unchanged with its signature, as a thinking model needs it before its tool calls.
      return [
        {
          reasoningContent: {
            reasoningText: { text: str(b.thinking) ?? '', signature: str(b.signature) ?? '' },
          },
        },
      ];
    case 'redacted_thinking':
      return [{ reasoningContent: { redactedContent: str(b.data) ?? '' } }];
    default:
      throw bad(`a ${JSON.stringify(b.type)} content block cannot be sent to a Bedrock model`);
  }
}

/** Converse refuses blank text blocks. */
const textBlock = (b: Obj): Obj[] => (str(b.text) ? [{ text: b.text }] : []);

function imageBlock(b: Obj): Obj {
  const img = inlineImageOf(b, 'Bedrock');
  const format = img.mediaType.slice(img.mediaType.indexOf('/') + 1).replace('jpg', 'jpeg');
  return { image: { format, source: { bytes: img.data } } };
}

function toolConfig(tools: unknown, choice: Obj | undefined): Obj | undefined {
  if (!Array.isArray(tools) || tools.length === 0) return undefined;
  const specs = tools.map((raw) => {
    const t = obj(raw);
    if (!t || (t.type !== undefined && t.type !== 'custom'))
      throw bad(`the server tool ${JSON.stringify(t?.type)} cannot be sent to a Bedrock model`);
    const spec: Obj = { name: t.name, inputSchema: { json: obj(t.input_schema) ?? { type: 'object' } } };
    if (typeof t.description === 'string') spec.description = t.description;
    return { toolSpec: spec };
  });
  const out: Obj = { tools: specs };
  // Converse has no "none": the tools stay declared (earlier toolUse blocks need them), unforced.
  if (choice?.type === 'any') out.toolChoice = { any: {} };
  else if (choice?.type === 'auto') out.toolChoice = { auto: {} };
  else if (choice?.type === 'tool') out.toolChoice = { tool: { name: str(choice.name) ?? '' } };
  return out;
}

// ---------- the answer ----------

/** Converse's stopReason as Anthropic's stop_reason. */
export function stopReason(stop: unknown): StopReason {
  switch (stop) {
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'max_tokens';
    case 'stop_sequence':
      return 'stop_sequence';
    case 'tool_use':
      return 'tool_use';
    case 'guardrail_intervened':
    case 'content_filtered':
      return 'refusal';
    default:
      return 'end_turn';
  }
}

/** ConverseStream's events, each converted as it arrives into the Anthropic events it stands for. */
class ConverseToEvents implements StreamConverter {
  readonly #frames = new ConverseFrames();
  readonly #state: LlmRequestState;
  readonly #out: AnthropicEvents;
  #stop: StopReason | undefined;

  constructor(state: LlmRequestState) {
    this.#state = state;
    this.#out = new AnthropicEvents(state);
  }

  write(chunk: Buffer): string | undefined {
    let out = '';
    for (const f of this.#frames.push(chunk)) {
      if ('failure' in f) out += this.#out.fail(f.failure.message, f.failure.status);
      else out += this.#event(f.event, f.body);
    }
    return out || undefined;
  }

  end(): string | undefined {
    if (this.#out.finished) return undefined;
    // messageStop without the metadata event: finished, without usage. Without messageStop: cut.
    if (this.#stop !== undefined) return this.#out.finish(this.#stop);
    return this.#out.fail('the Bedrock stream ended before its messageStop event');
  }

  #event(type: string | undefined, body: Obj): string {
    const index = num(body.contentBlockIndex);
    switch (type) {
      case 'messageStart':
        return this.#out.start();
      case 'contentBlockStart': {
        const use = obj(obj(body.start)?.toolUse);
        return use ? this.#out.toolStart(index, str(use.toolUseId) ?? '', str(use.name) ?? '') : '';
      }
      case 'contentBlockDelta': {
        const d = obj(body.delta) ?? {};
        if (typeof d.text === 'string') return this.#out.text(d.text);
        const use = obj(d.toolUse);
        if (use) return this.#out.toolInput(index, str(use.input) ?? '');
        const r = obj(d.reasoningContent);
        if (typeof r?.text === 'string') return this.#out.thinking(r.text);
        if (typeof r?.signature === 'string') return this.#out.signature(r.signature);
        if (typeof r?.redactedContent === 'string') return this.#out.redactedThinking(r.redactedContent);
        return '';
      }
      case 'contentBlockStop':
        return this.#out.close();
      case 'messageStop':
        this.#stop = stopReason(body.stopReason);
        return this.#out.close();
      case 'metadata': {
        const u = obj(body.usage);
        const n = u && normalizeUsage(u);
        if (n) this.#state.record(n);
        return this.#stop === undefined ? '' : this.#out.finish(this.#stop);
      }
      default:
        return '';
    }
  }
}
