// OpenAI Responses to a Responses endpoint (OpenAI, Azure, custom): the body goes as sent, with the
// model to serve, and the answer passes unchanged. Usage is read on the way: a JSON answer's `usage`
// ({input_tokens, output_tokens, input_tokens_details.cached_tokens,
// output_tokens_details.reasoning_tokens}); in a stream, the response object that the
// `response.completed` (or `response.incomplete`) event carries.
import { recordModelAndUsage, UsageWatchingStream, withModel } from './passthrough.ts';
import type { FormatPair, JsonObject } from './types.ts';

/** A Responses `response` object's model and usage, on the slot. */
export const recordResponse = recordModelAndUsage;

export const openaiResponsesToOpenaiResponses: FormatPair<'openai-responses', 'openai-responses'> = {
  client: 'openai-responses',
  provider: 'openai-responses',
  request: withModel,
  response(body, state) {
    recordResponse(body, state);
    return undefined;
  },
  stream(state) {
    // Only the final event's response carries usage (response.created has `usage: null`).
    return new UsageWatchingStream(state, (ev, st) => {
      const response = ev.response;
      if (response && typeof response === 'object') recordResponse(response as JsonObject, st);
    });
  },
};
