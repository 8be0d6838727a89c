// Anthropic Messages to an Anthropic Messages endpoint: the body goes as sent, with the model to
// serve. The answer passes unchanged; its usage is read on the way (a JSON answer's `usage`; in a
// stream, message_start carries the input tokens and message_delta the output so far).
import { recordModelAndUsage, UsageWatchingStream, withModel } from './passthrough.ts';
import type { FormatPair } from './types.ts';

/** A message object's model and usage, on the slot. */
export const recordMessage = recordModelAndUsage;

export const anthropicMessagesToAnthropicMessages: FormatPair<'anthropic-messages', 'anthropic-messages'> = {
  client: 'anthropic-messages',
  provider: 'anthropic-messages',
  request: withModel,
  response(body, state) {
    recordMessage(body, state);
    return undefined;
  },
  stream(state) {
    // message_start: {message: {model, usage}}; message_delta: {usage}.
    return new UsageWatchingStream(state, (ev, st) => {
      const message = ev.message;
      recordMessage(message && typeof message === 'object' ? (message as Record<string, unknown>) : ev, st);
    });
  },
};
