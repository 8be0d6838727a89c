// Building Anthropic Messages answers from another provider's: the message, usage and errors in
// Anthropic's shapes, the streamed event sequence (message_start, content_block_start/delta/stop,
// message_delta, message_stop) with its block bookkeeping, and reading the parts of a Messages
// request other formats need (images, tool results, the thinking budget). Shared by the pairs whose
// client is anthropic-messages.
import { randomUUID } from 'node:crypto';
import { anthropicType } from '../../errors.ts';
import { sseData } from '../sse.ts';
import type { LlmRequestState, LlmUsage } from '../state.ts';
import { bad, obj, str, textOf } from './json.ts';

type Obj = Record<string, unknown>;

export type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use' | 'refusal' | 'pause_turn';

const NO_USAGE: LlmUsage = { input: 0, output: 0, cachedInput: 0, reasoning: 0 };

export const messageId = () => `msg_${randomUUID().replaceAll('-', '')}`;

/** Normalised usage as Anthropic's: input_tokens leaves out the cache reads, counted on their own. */
export function anthropicUsage(u: LlmUsage | undefined): Obj {
  const n = u ?? NO_USAGE;
  return {
    input_tokens: Math.max(0, n.input - n.cachedInput),
    output_tokens: n.output,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: n.cachedInput,
  };
}

/** A whole `message` answer. */
export function anthropicMessage(
  state: LlmRequestState,
  content: Obj[],
  stop: StopReason,
  usage: LlmUsage | undefined,
  id: unknown = messageId(),
): Obj {
  return {
    id,
    type: 'message',
    role: 'assistant',
    model: state.responseModel ?? state.model ?? state.requestModel,
    content,
    stop_reason: stop,
    stop_sequence: null,
    usage: anthropicUsage(usage),
  };
}

/** Anthropic's error body for a provider's error message and HTTP status. */
export function anthropicError(message: string, status: number): Obj {
  return { type: 'error', error: { type: anthropicType(status), message } };
}

/** The error event that ends a stream which failed mid-way (the SDKs raise it). */
export function anthropicErrorEvent(message: string, type = 'api_error'): string {
  return sseData({ type: 'error', error: { type, message } }, 'error');
}

type BlockKind = 'text' | 'thinking' | 'tool';

/**
 * Writes one streamed answer's Anthropic events. Content blocks open as their first delta arrives
 * and close when another kind starts or the message ends; a tool call is keyed by the provider's
 * own index, so its argument pieces reach the block it opened.
 */
export class AnthropicEvents {
  readonly #state: LlmRequestState;
  #started = false;
  #finished = false;
  /** The index of the latest block; -1: none yet. */
  #block = -1;
  #open: BlockKind | undefined;
  /** The provider's tool call key → the block index it opened. */
  readonly #tools = new Map<number, number>();

  constructor(state: LlmRequestState) {
    this.#state = state;
  }

  get started(): boolean {
    return this.#started;
  }

  get finished(): boolean {
    return this.#finished;
  }

  /** message_start, once (usage: what is known so far, usually the input). */
  start(id: unknown = messageId(), usage?: LlmUsage): string {
    if (this.#started) return '';
    this.#started = true;
    const s = this.#state;
    return sseData(
      {
        type: 'message_start',
        message: {
          id,
          type: 'message',
          role: 'assistant',
          model: s.responseModel ?? s.model ?? s.requestModel,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { ...anthropicUsage(usage), output_tokens: usage?.output ?? 0 },
        },
      },
      'message_start',
    );
  }

  text(text: string): string {
    if (text === '') return '';
    const open = this.#open === 'text' ? '' : this.#openBlock('text', { type: 'text', text: '' });
    return open + this.#delta(this.#block, { type: 'text_delta', text });
  }

  thinking(thinking: string): string {
    if (thinking === '') return '';
    return this.#thinkingBlock() + this.#delta(this.#block, { type: 'thinking_delta', thinking });
  }

  /** The signature of the thinking block being written (opened empty if none is). */
  signature(signature: string): string {
    return this.#thinkingBlock() + this.#delta(this.#block, { type: 'signature_delta', signature });
  }

  /** A whole redacted_thinking block (its data is opaque and arrives at once). */
  redactedThinking(data: string): string {
    return this.#openBlock('thinking', { type: 'redacted_thinking', data }) + this.close();
  }

  /** Opens a tool_use block for the provider's tool call `key`, unless one is open for it already. */
  toolStart(key: number, id: string, name: string): string {
    if (this.#tools.has(key)) return '';
    const out = this.#openBlock('tool', { type: 'tool_use', id, name, input: {} });
    this.#tools.set(key, this.#block);
    return out;
  }

  /** A piece of tool call `key`'s input JSON. */
  toolInput(key: number, partialJson: string): string {
    const index = this.#tools.get(key);
    if (index === undefined || partialJson === '') return '';
    return this.#delta(index, { type: 'input_json_delta', partial_json: partialJson });
  }

  /** A tool call that arrives whole: its block opened, its input in one piece, closed. */
  toolCall(id: string, name: string, input: unknown): string {
    const key = -1 - this.#tools.size;
    return this.toolStart(key, id, name) + this.toolInput(key, JSON.stringify(input ?? {})) + this.close();
  }

  /** Closes the open block, if any. */
  close(): string {
    if (this.#open === undefined) return '';
    this.#open = undefined;
    return sseData({ type: 'content_block_stop', index: this.#block }, 'content_block_stop');
  }

  /** message_delta with the stop reason and the slot's usage, then message_stop; once. */
  finish(stop: StopReason): string {
    if (this.#finished || !this.#started) return '';
    this.#finished = true;
    return (
      this.close() +
      sseData(
        {
          type: 'message_delta',
          delta: { stop_reason: stop, stop_sequence: null },
          usage: anthropicUsage(this.#state.usage),
        },
        'message_delta',
      ) +
      sseData({ type: 'message_stop' }, 'message_stop')
    );
  }

  /** The stream failed: an error event, and nothing after it. */
  fail(message: string, status = 500): string {
    if (this.#finished) return '';
    this.#finished = true;
    return anthropicErrorEvent(message, status >= 500 ? 'api_error' : anthropicType(status));
  }

  #thinkingBlock(): string {
    return this.#open === 'thinking'
      ? ''
      : this.#openBlock('thinking', { type: 'thinking', thinking: '', signature: '' });
  }

  #openBlock(kind: BlockKind, block: Obj): string {
    const out = this.close();
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

  #delta(index: number, delta: Obj): string {
    return sseData({ type: 'content_block_delta', index, delta }, 'content_block_delta');
  }
}

// ---------- reading the request ----------

/** A message's content as a list of blocks (a string is one text block). */
export function blocksOf(content: unknown): Obj[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  if (!Array.isArray(content)) return [];
  return content.map((b) => obj(b) ?? {});
}

/** The messages of a request, each with its role checked; a 400 when they are not Anthropic's. */
export function messagesOf(body: Obj): { role: 'user' | 'assistant'; blocks: Obj[] }[] {
  if (!Array.isArray(body.messages)) throw bad('the request must have a "messages" array');
  return body.messages.map((raw) => {
    const m = obj(raw);
    if (m?.role !== 'user' && m?.role !== 'assistant')
      throw bad(`a message with role ${JSON.stringify(m?.role)} is not an Anthropic message`);
    return { role: m.role, blocks: blocksOf(m.content) };
  });
}

/** An image block's inline data; a 400 for an image by URL, which `provider` cannot fetch. */
export function inlineImageOf(block: Obj, provider: string): { mediaType: string; data: string } {
  const source = obj(block.source);
  if (source?.type !== 'base64')
    throw bad(`${provider} takes images inline only (an image source of type "base64")`);
  return { mediaType: str(source.media_type) ?? '', data: str(source.data) ?? '' };
}

/** A tool_result block's content as text (its text blocks joined). */
export const toolResultText = (block: Obj): string => textOf(block.content);

/** `thinking.budget_tokens` when the request enables extended thinking; undefined otherwise. */
export function thinkingBudget(body: Obj): number | undefined {
  const t = obj(body.thinking);
  return t?.type === 'enabled' && typeof t.budget_tokens === 'number' ? t.budget_tokens : undefined;
}
