// The per-request LLM slot (`ctx.ext.llm`): which model and provider served the request and the
// token usage its answer reported, normalised across providers. The `ai` backend fills it in; the
// access log, metrics, CEL (`llm.*`) and the token rate limits read it.
import type { CostCatalogIR, LlmFormat } from '../config/ir.ts';
import { GwError } from '../errors.ts';
import { type LlmCost, priceUsage } from './cost.ts';
import type { GuardFinding } from './guardrails/types.ts';

/**
 * Token usage of one answer, normalised: `input` counts every prompt token, cached ones included
 * (OpenAI's prompt_tokens already does; Anthropic's cache reads and writes are added to it);
 * `cachedInput` and `reasoning` say how many of `input` and `output` were cached or reasoning.
 */
export interface LlmUsage {
  /** Every input token, cache reads and writes included. */
  input: number;
  /** Every output token, reasoning included. */
  output: number;
  /** Input tokens read from a prompt cache. */
  cachedInput: number;
  /** Input tokens written to a prompt cache, where the provider says (Anthropic, Bedrock). */
  cacheWrite?: number;
  reasoning: number;
}

declare module '../pipeline/context.ts' {
  interface RequestExtensions {
    /** Set by the `ai` backend once it has read the client's request (see llm/state.ts). */
    llm?: LlmRequestState;
  }
}

type UsageListener = (usage: LlmUsage) => void;

/** What a client speaks: an LLM API of its request path, or a realtime route's WebSocket session. */
export type ClientFormat = LlmFormat | 'openai-realtime';

export class LlmRequestState {
  /** What the client speaks (from the request path), or a realtime route's WebSocket session. */
  readonly clientFormat: ClientFormat;
  /** The client's request body, parsed (`llmRequest.*` in CEL). */
  readonly request: Record<string, unknown>;
  /** The model the client asked for. */
  readonly requestModel: string;
  /** Whether the client asked for a streamed (SSE) answer. */
  readonly streaming: boolean;
  /** The model a virtual model routed to (the name its target asks for); unset: requestModel. */
  routedModel: string | undefined = undefined;
  /** The provider that serves (telemetry name: openai, azureOpenAI, a custom providerOverride …). */
  provider: string | undefined = undefined;
  /** What the provider's endpoint was sent. */
  providerFormat: LlmFormat | undefined = undefined;
  /** The model sent to the provider, after overrides and transformations. */
  model: string | undefined = undefined;
  /** The model the provider says answered. */
  responseModel: string | undefined = undefined;
  /** The latest usage the answer reported; final once `done`. */
  usage: LlmUsage | undefined = undefined;
  /** What the prompt guards found and did, in order (llm/guardrails/). */
  readonly guardrails: GuardFinding[] = [];
  /** performance.now() when the first bytes of a streamed answer went to the client. */
  firstOutputAt: number | undefined = undefined;
  /** The answer has passed completely (its usage, if any, is final). */
  done = false;
  /** Why the usage could not be read in full (a realtime session's frame gw could not read). */
  usageUnread: string | undefined = undefined;
  /** config.modelCatalog, set with the provider: what prices this request. */
  catalog: CostCatalogIR | undefined = undefined;
  #listeners: UsageListener[] | undefined;

  constructor(
    clientFormat: ClientFormat,
    request: Record<string, unknown>,
    requestModel: string,
    streaming: boolean,
  ) {
    this.clientFormat = clientFormat;
    this.request = request;
    this.requestModel = requestModel;
    this.streaming = streaming;
  }

  /** The LLM API an HTTP request speaks; a realtime session has none (its frames are not translated). */
  get httpFormat(): LlmFormat {
    const f = this.clientFormat;
    if (f === 'openai-realtime')
      throw new GwError('GW_ERR_INTERNAL', 'a realtime session has no request format to translate');
    return f;
  }

  /**
   * Calls `fn` once with the final usage of the answer, when it has passed completely (streams
   * included). Not called when the answer carried no usage or did not complete.
   */
  onUsage(fn: UsageListener): void {
    if (this.done) {
      if (this.usage) fn(this.usage);
      return;
    }
    if (this.#listeners) this.#listeners.push(fn);
    else this.#listeners = [fn];
  }

  /** Records usage as it is seen; streams repeat or accumulate totals, so the newest non-zero wins. */
  record(u: LlmUsage): void {
    const prev = this.usage;
    if (!prev) {
      this.usage = { ...u };
      return;
    }
    if (u.input > 0) prev.input = u.input;
    if (u.output > 0) prev.output = u.output;
    if (u.cachedInput > 0) prev.cachedInput = u.cachedInput;
    if (u.reasoning > 0) prev.reasoning = u.reasoning;
    if (u.cacheWrite) prev.cacheWrite = u.cacheWrite;
  }

  /** Adds the usage of one more answer (a realtime session's responses): the session's is their sum. */
  add(u: LlmUsage): void {
    const prev = this.usage;
    if (!prev) {
      this.usage = { ...u };
      return;
    }
    prev.input += u.input;
    prev.output += u.output;
    prev.cachedInput += u.cachedInput;
    prev.reasoning += u.reasoning;
    if (u.cacheWrite) prev.cacheWrite = (prev.cacheWrite ?? 0) + u.cacheWrite;
  }

  /** What the request cost by config.modelCatalog once usage is known; undefined when not priced. */
  get cost(): LlmCost | undefined {
    // the access log, CEL and the metrics all ask once the answer is done: priced once then
    if (this.#priced) return this.#priced.cost;
    const c = this.catalog;
    const u = this.usage;
    if (!c || !u || this.provider === undefined) return undefined;
    const cost = priceUsage(c, this.provider, [this.responseModel, this.model ?? this.requestModel], u);
    if (this.done) this.#priced = { cost };
    return cost;
  }
  #priced: { cost: LlmCost | undefined } | undefined;

  /** The answer is complete: the usage is final and the listeners hear of it. */
  finish(): void {
    if (this.done) return;
    this.done = true;
    const usage = this.usage;
    const listeners = this.#listeners;
    this.#listeners = undefined;
    if (usage && listeners) for (const fn of listeners) fn(usage);
  }

  /** `llm.*` in CEL. */
  cel(): Record<string, unknown> {
    const u = this.usage;
    const out: Record<string, unknown> = {
      requestModel: this.requestModel,
      streaming: this.streaming,
    };
    if (this.provider !== undefined) out.provider = this.provider;
    if (this.model !== undefined) out.model = this.model;
    if (this.responseModel !== undefined) out.responseModel = this.responseModel;
    if (u) {
      out.inputTokens = u.input;
      out.outputTokens = u.output;
      out.totalTokens = u.input + u.output;
      out.cachedInputTokens = u.cachedInput;
      out.reasoningTokens = u.reasoning;
      const cost = this.cost;
      if (cost) out.cost = cost;
    }
    return out;
  }
}
