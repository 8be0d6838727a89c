// Reading an Anthropic Messages stream as the official SDK yields its events, for asserting what a
// client saw: the event types in order (repeats collapsed), the text, the stop reason and the usage
// of message_delta.

/** The event types of a streamed answer with one text block, repeats collapsed. */
export const ANTHROPIC_TEXT_EVENTS = [
  'message_start',
  'content_block_start',
  'content_block_delta',
  'content_block_stop',
  'message_delta',
  'message_stop',
] as const;

interface StreamEvent {
  type: string;
  delta?: unknown;
  usage?: unknown;
}

export interface ReadAnthropicStream {
  types: string[];
  text: string;
  stop: string | null | undefined;
  /** message_delta's usage. */
  usage: { input_tokens?: number | null; output_tokens?: number } | undefined;
}

export async function readAnthropicStream(stream: AsyncIterable<StreamEvent>): Promise<ReadAnthropicStream> {
  const out: ReadAnthropicStream = { types: [], text: '', stop: undefined, usage: undefined };
  for await (const e of stream) {
    if (out.types[out.types.length - 1] !== e.type) out.types.push(e.type);
    const d = e.delta as { type?: string; text?: string; stop_reason?: string | null } | undefined;
    if (e.type === 'content_block_delta' && d?.type === 'text_delta') out.text += d.text ?? '';
    if (e.type === 'message_delta') {
      out.stop = d?.stop_reason;
      out.usage = e.usage as ReadAnthropicStream['usage'];
    }
  }
  return out;
}
