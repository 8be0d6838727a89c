// What a format pair module provides: the conversion of one client format's request into one
// provider format's request, and of the provider's answer (JSON, stream, error) back into what the
// client expects, reporting usage as it goes. One module per pair: <client>__<provider>.ts.
import type { LlmFormat } from '../../config/ir.ts';
import type { LlmRequestState } from '../state.ts';

export type JsonObject = Record<string, unknown>;

/** What a pair is told about the request it converts. */
export interface PairRequest {
  /** The model sent to the provider (after overrides and transformations). */
  model: string;
  /** The client asked for a stream. */
  stream: boolean;
  /** Whether the provider's body carries `model` (a deployment path may name it instead). */
  bodyHasModel: boolean;
  /**
   * What a chat completion's output limit is called: OpenAI's API takes `max_completion_tokens` (its
   * reasoning models refuse `max_tokens`); Mistral and most compatible servers know `max_tokens` only.
   */
  tokenLimitField?: 'max_tokens' | 'max_completion_tokens';
}

/**
 * Converts a provider's streamed answer as it arrives: each `write` gets the next bytes from the
 * provider and returns what to send to the client now (possibly nothing); `end` returns the last
 * bytes. Never collect the stream: a complete event received is an event sent.
 */
export interface StreamConverter {
  write(chunk: Buffer): Buffer | string | undefined;
  end(): Buffer | string | undefined;
}

export interface FormatPair<C extends LlmFormat = LlmFormat, P extends LlmFormat = LlmFormat> {
  client: C;
  provider: P;
  /**
   * The provider's request body from the client's (parsed, transformations applied). May return the
   * same object changed: the client's body is a copy the pair owns.
   */
  request(body: JsonObject, req: PairRequest, state: LlmRequestState): JsonObject;
  /**
   * A complete (non-streamed) JSON answer: records its usage and response model on `state` and
   * returns the client's body, or undefined to send the provider's bytes unchanged.
   */
  response(body: JsonObject, state: LlmRequestState): JsonObject | undefined;
  /** A streamed answer (the provider's stream framing: SSE, or an event stream). */
  stream(state: LlmRequestState): StreamConverter;
  /**
   * A provider's JSON error body in the client's shape (the status is kept); undefined: unchanged.
   */
  error?(body: JsonObject, status: number): JsonObject | undefined;
}

/** `<client>__<provider>`: the key of a pair, and its module's file name. */
export type PairKey = `${LlmFormat}__${LlmFormat}`;
