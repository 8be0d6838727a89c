// Token usage of an LLM response, read from the provider's own wire format and normalised
// (llm/state.ts LlmUsage): OpenAI chat `usage` (prompt/completion tokens; cached prompt tokens are
// already inside prompt_tokens), OpenAI responses and Anthropic (`input_tokens`; Anthropic's excludes
// cache reads and writes, so they are added), Gemini `usageMetadata`, Bedrock Converse `usage`
// (inputTokens, like Anthropic's, leaves out cache reads and writes). Works on a JSON body and on an
// SSE stream (the last usage seen wins, as streams repeat totals).
//
// An `ai` backend records usage in the request's LLM slot as the answer passes; the token rate limits
// read it from there (onResponseUsage). Routes to other backends that answer in an LLM's format are
// still counted, by observing the response body.
import type { RequestContext } from '../pipeline/context.ts';
import type { ObservedRequest, RequestObserver } from '../pipeline/observer.ts';
import type { LlmUsage } from './state.ts';

export type Usage = LlmUsage;

const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj | undefined => (v && typeof v === 'object' ? (v as Obj) : undefined);

/** A provider's usage object (OpenAI chat or responses, Anthropic, Gemini, Bedrock) normalised. */
export function normalizeUsage(u: Obj): Usage | undefined {
  if ('prompt_tokens' in u || 'completion_tokens' in u) {
    return {
      input: num(u.prompt_tokens),
      output: num(u.completion_tokens),
      cachedInput: num(obj(u.prompt_tokens_details)?.cached_tokens),
      reasoning: num(obj(u.completion_tokens_details)?.reasoning_tokens),
    };
  }
  if ('input_tokens' in u || 'output_tokens' in u) {
    const cacheRead = num(u.cache_read_input_tokens);
    const cacheWrite = num(u.cache_creation_input_tokens);
    return {
      // OpenAI responses: input_tokens includes cached ones; Anthropic's excludes cache reads/writes.
      input: num(u.input_tokens) + cacheRead + cacheWrite,
      output: num(u.output_tokens),
      cachedInput: cacheRead + num(obj(u.input_tokens_details)?.cached_tokens),
      ...(cacheWrite > 0 ? { cacheWrite } : {}),
      reasoning: num(obj(u.output_tokens_details)?.reasoning_tokens),
    };
  }
  if ('promptTokenCount' in u || 'candidatesTokenCount' in u) {
    const thoughts = num(u.thoughtsTokenCount);
    return {
      input: num(u.promptTokenCount),
      output: num(u.candidatesTokenCount) + thoughts,
      cachedInput: num(u.cachedContentTokenCount),
      reasoning: thoughts,
    };
  }
  if ('inputTokens' in u || 'outputTokens' in u) {
    const read = num(u.cacheReadInputTokens);
    const write = num(u.cacheWriteInputTokens);
    return {
      input: num(u.inputTokens) + read + write,
      output: num(u.outputTokens),
      cachedInput: read,
      ...(write > 0 ? { cacheWrite: write } : {}),
      // Converse does not count reasoning tokens apart from the output.
      reasoning: 0,
    };
  }
  return undefined;
}

export function usageOf(value: unknown): Usage | undefined {
  const o = obj(value);
  if (!o) return undefined;
  const u = obj(o.usage) ?? obj(obj(o.message)?.usage) ?? obj(obj(o.response)?.usage);
  if (u) return normalizeUsage(u);
  const g = obj(o.usageMetadata);
  return g ? normalizeUsage(g) : undefined;
}

/** Usage from a whole response body; undefined when the body carries none. */
export function usageFromBody(contentType: string, body: Buffer): Usage | undefined {
  const text = body.toString('utf8');
  if (contentType.includes('text/event-stream')) {
    let last: Usage | undefined;
    for (const line of text.split('\n')) {
      if (!line.startsWith('data:')) continue;
      const data = line.slice(5).trim();
      if (!data.startsWith('{')) continue;
      let u: Usage | undefined;
      try {
        u = usageOf(JSON.parse(data));
      } catch {
        continue;
      }
      if (!u) continue;
      // Anthropic sends input in message_start and cumulative output in message_delta.
      if (!last) last = u;
      else {
        if (u.input > 0) last.input = u.input;
        if (u.output > 0) last.output = u.output;
        if (u.cachedInput > 0) last.cachedInput = u.cachedInput;
        if (u.reasoning > 0) last.reasoning = u.reasoning;
      }
    }
    return last;
  }
  try {
    return usageOf(JSON.parse(text));
  } catch {
    return undefined;
  }
}

/** Bodies larger than this are not kept for usage accounting (the tokens go uncounted). */
export const USAGE_BODY_LIMIT = 4 * 1024 * 1024;

/**
 * Calls `settle` with the response's input+output tokens once its body has gone to the client,
 * streamed or not. It only observes the chunks as they pass: the client still gets each at once.
 */
export function onResponseUsage(ctx: RequestContext, settle: (tokens: number) => void): void {
  const llm = ctx.ext.llm;
  if (llm) {
    // The ai backend counts as the answer passes: no second look at the body.
    llm.onUsage((u) => settle(u.input + u.output));
    return;
  }
  if (!ctx.response?.body) return;
  ctx.observe(new UsageObserver(settle));
}

class UsageObserver implements RequestObserver {
  readonly #settle: (tokens: number) => void;
  readonly #chunks: Buffer[] = [];
  #size = 0;

  constructor(settle: (tokens: number) => void) {
    this.#settle = settle;
  }

  responseBody(_req: ObservedRequest, chunk: Buffer): void {
    this.#size += chunk.length;
    if (this.#size <= USAGE_BODY_LIMIT) this.#chunks.push(chunk);
  }

  responseBodyEnd(req: ObservedRequest): void {
    if (this.#size > USAGE_BODY_LIMIT || !req.response) return;
    const type = String(req.response.headers['content-type'] ?? '');
    const u = usageFromBody(type, Buffer.concat(this.#chunks, this.#size));
    if (u) this.#settle(u.input + u.output);
  }
}
