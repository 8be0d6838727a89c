// Building OpenAI chat answers from another provider's: the completion, the stream chunk, usage and
// errors in OpenAI's shapes, and reading the parts of a chat request other formats need (text of a
// content, tool arguments, inline images). Shared by the pairs whose client is openai-chat.
import { randomUUID } from 'node:crypto';
import { GwError } from '../../errors.ts';
import type { LlmRequestState, LlmUsage } from '../state.ts';
import type { JsonObject } from './types.ts';

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter';

export interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
  /** Provider data the client must send back with the call (Gemini's thought signature). */
  extra_content?: JsonObject;
}

export const chatId = () => `chatcmpl-${randomUUID().replaceAll('-', '')}`;
export const nowSeconds = () => Math.floor(Date.now() / 1000);

/** OpenAI's usage object from normalised usage (cached tokens are part of prompt_tokens). */
export function openaiUsage(u: LlmUsage): JsonObject {
  const out: JsonObject = {
    prompt_tokens: u.input,
    completion_tokens: u.output,
    total_tokens: u.input + u.output,
  };
  if (u.cachedInput > 0) out.prompt_tokens_details = { cached_tokens: u.cachedInput };
  if (u.reasoning > 0) out.completion_tokens_details = { reasoning_tokens: u.reasoning };
  return out;
}

/**
 * A whole `chat.completion` with one choice. The model's reasoning, when it shows any, goes in
 * `reasoning_content`, where OpenAI-compatible gateways and servers (vLLM, DeepSeek, LiteLLM) put it.
 */
export function chatCompletion(
  state: LlmRequestState,
  text: string | null,
  toolCalls: ChatToolCall[],
  finish: FinishReason | null,
  usage: LlmUsage | undefined,
  reasoning = '',
): JsonObject {
  const message: JsonObject = { role: 'assistant', content: text };
  if (reasoning !== '') message.reasoning_content = reasoning;
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  const out: JsonObject = {
    id: chatId(),
    object: 'chat.completion',
    created: nowSeconds(),
    model: state.responseModel ?? state.model ?? state.requestModel,
    choices: [{ index: 0, message, logprobs: null, finish_reason: finish }],
  };
  if (usage) out.usage = openaiUsage(usage);
  return out;
}

/** Writes `chat.completion.chunk` SSE events for one streamed answer (one id, one model). */
export class ChunkWriter {
  readonly #id = chatId();
  readonly #created = nowSeconds();
  readonly #state: LlmRequestState;

  constructor(state: LlmRequestState) {
    this.#state = state;
  }

  #chunk(choices: unknown[], extra?: JsonObject): string {
    const s = this.#state;
    const c: JsonObject = {
      id: this.#id,
      object: 'chat.completion.chunk',
      created: this.#created,
      model: s.responseModel ?? s.model ?? s.requestModel,
      choices,
      ...extra,
    };
    return `data: ${JSON.stringify(c)}\n\n`;
  }

  delta(delta: JsonObject, finish: FinishReason | null = null): string {
    return this.#chunk([{ index: 0, delta, logprobs: null, finish_reason: finish }]);
  }

  /** The usage chunk (`stream_options.include_usage`): no choices. */
  usage(u: LlmUsage): string {
    return this.#chunk([], { usage: openaiUsage(u) });
  }
}

/** Whether the client asked for the usage chunk of a stream. */
export function clientWantsUsage(request: JsonObject): boolean {
  const so = request.stream_options as JsonObject | undefined;
  return so?.include_usage === true;
}

/** OpenAI's error body for a provider's error message and HTTP status. */
export function openaiError(message: string, status: number, code: string | null = null): JsonObject {
  const type =
    status === 401 || status === 403
      ? 'authentication_error'
      : status === 404
        ? 'not_found_error'
        : status === 429
          ? 'rate_limit_error'
          : status >= 500
            ? 'api_error'
            : 'invalid_request_error';
  return { error: { message, type, param: null, code } };
}

/** The text of a chat message's content: a string, or the text parts of a list joined. */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let out = '';
  for (const p of content as JsonObject[])
    if (p?.type === 'text' && typeof p.text === 'string') out += p.text;
  return out;
}

/** A tool call's arguments (a JSON string) as an object; a 400 when they are not JSON. */
export function toolArguments(args: unknown): JsonObject {
  if (typeof args !== 'string' || args.trim() === '') return {};
  try {
    const v = JSON.parse(args) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as JsonObject) : { value: v };
  } catch {
    throw new GwError('GW_ERR_LLM_BAD_REQUEST', 'a tool call has arguments that are not JSON');
  }
}

/** An `image_url` given inline as a data URL: its media type and base64 data. */
export function inlineImage(url: string, provider: string): { mediaType: string; data: string } {
  const m = /^data:([a-z]+\/[a-z0-9.+-]+);base64,(.*)$/is.exec(url);
  if (!m) throw new GwError('GW_ERR_LLM_BAD_REQUEST', `${provider} takes images inline only (a data: URL)`);
  return { mediaType: (m[1] as string).toLowerCase(), data: m[2] as string };
}

/** `stop` as a list of strings. */
export function stopList(stop: unknown): string[] | undefined {
  if (typeof stop === 'string') return [stop];
  if (Array.isArray(stop)) return stop.filter((s): s is string => typeof s === 'string');
  return undefined;
}
