// Token usage of an LLM response, read from the provider's own wire format: OpenAI-style `usage`
// (prompt/completion tokens; cached prompt tokens are already inside prompt_tokens), Anthropic
// (`input_tokens` excludes cache reads and writes, so they are added), Gemini `usageMetadata`.
// Works on a JSON body and on an SSE stream (the last usage seen wins, as streams repeat totals).
import type { RequestContext } from '../pipeline/context.ts';
import type { ObservedRequest, RequestObserver } from '../pipeline/observer.ts';

export interface Usage {
  input: number;
  output: number;
}

const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

export function usageOf(obj: unknown): Usage | undefined {
  if (!obj || typeof obj !== 'object') return undefined;
  const o = obj as Record<string, unknown>;
  const u = (o.usage ?? (o.message as Record<string, unknown> | undefined)?.usage) as
    | Record<string, unknown>
    | undefined;
  if (u && typeof u === 'object') {
    if ('prompt_tokens' in u || 'completion_tokens' in u)
      return { input: num(u.prompt_tokens), output: num(u.completion_tokens) };
    if ('input_tokens' in u || 'output_tokens' in u) {
      return {
        input: num(u.input_tokens) + num(u.cache_creation_input_tokens) + num(u.cache_read_input_tokens),
        output: num(u.output_tokens),
      };
    }
  }
  const g = o.usageMetadata as Record<string, unknown> | undefined;
  if (g && typeof g === 'object')
    return { input: num(g.promptTokenCount), output: num(g.candidatesTokenCount) };
  return undefined;
}

/** Usage from a whole response body; undefined when the body carries none. */
export function usageFromBody(contentType: string, body: Buffer): Usage | undefined {
  const text = body.toString('utf8');
  if (contentType.includes('text/event-stream')) {
    let input = 0;
    let output = 0;
    let seen = false;
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
      seen = true;
      // Anthropic sends input in message_start and cumulative output in message_delta.
      if (u.input > 0) input = u.input;
      if (u.output > 0) output = u.output;
    }
    return seen ? { input, output } : undefined;
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
