// Token usage of an LLM response, read from the provider's own wire format: OpenAI-style `usage`
// (prompt/completion tokens; cached prompt tokens are already inside prompt_tokens), Anthropic
// (`input_tokens` excludes cache reads and writes, so they are added), Gemini `usageMetadata`.
// Works on a JSON body and on an SSE stream (the last usage seen wins, as streams repeat totals).
import type { Readable } from 'node:stream';

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
 * Calls `settle` with the response's input+output tokens once its body has gone by, streamed or
 * not. It only watches the stream: the client still gets every chunk as it arrives.
 */
export function onResponseUsage(
  response: { headers: Record<string, string | string[]>; body: Readable | Buffer | null } | undefined,
  settle: (tokens: number) => void,
): void {
  if (!response?.body) return;
  const type = String(response.headers['content-type'] ?? '');
  const done = (body: Buffer) => {
    const u = usageFromBody(type, body);
    if (u) settle(u.input + u.output);
  };
  if (Buffer.isBuffer(response.body)) {
    done(response.body);
    return;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  response.body.on('data', (c: Buffer) => {
    size += c.length;
    if (size <= USAGE_BODY_LIMIT) chunks.push(c);
  });
  response.body.on('end', () => {
    if (size <= USAGE_BODY_LIMIT) done(Buffer.concat(chunks));
  });
}
