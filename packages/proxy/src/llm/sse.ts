// Server-sent events split as they arrive: bytes in, whole events out (each with its blank line), so
// a converter can look at one event at a time and pass it on at once. Never waits for more than the
// rest of the event it is in.

export interface SseEvent {
  /** The event as received, terminating blank line included: forward it as is when unchanged. */
  raw: string;
  /** `event:` field, if any. */
  event: string | undefined;
  /** The `data:` lines joined with \n; undefined when the event has none (a comment, a retry). */
  data: string | undefined;
}

export class SseSplitter {
  #buf = '';
  readonly #decoder = new TextDecoder();

  /** The events completed by `chunk`. */
  push(chunk: Buffer): SseEvent[] {
    this.#buf += this.#decoder.decode(chunk, { stream: true });
    const out: SseEvent[] = [];
    for (;;) {
      const end = boundary(this.#buf);
      if (end === -1) break;
      const raw = this.#buf.slice(0, end);
      this.#buf = this.#buf.slice(end);
      out.push(parseEvent(raw));
    }
    return out;
  }

  /** What is left at the end of the stream (an event without its blank line), as one last event. */
  flush(): SseEvent | undefined {
    this.#buf += this.#decoder.decode();
    const rest = this.#buf;
    this.#buf = '';
    return rest.trim() === '' ? undefined : parseEvent(rest);
  }
}

/** The index just past the first event's terminating blank line, or -1. */
function boundary(s: string): number {
  const lf = s.indexOf('\n\n');
  const crlf = s.indexOf('\r\n\r\n');
  if (lf === -1 && crlf === -1) return -1;
  if (crlf === -1 || (lf !== -1 && lf < crlf)) return lf + 2;
  return crlf + 4;
}

function parseEvent(raw: string): SseEvent {
  let event: string | undefined;
  let data: string | undefined;
  for (const line of raw.split(/\r?\n/)) {
    if (line.startsWith('data:')) {
      const v = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
      data = data === undefined ? v : `${data}\n${v}`;
    } else if (line.startsWith('event:')) {
      event = line.slice(6).trim();
    }
  }
  return { raw, event, data };
}

/** One `data:` event, JSON-encoded, as an SSE event. */
export function sseData(value: unknown, event?: string): string {
  return `${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(value)}\n\n`;
}

/**
 * The `data:` of each completed event parsed as JSON objects, for converters that read only those:
 * events without data, or whose data is not a JSON object (`[DONE]`, a keep-alive), are skipped.
 */
export class SseJsonSplitter {
  readonly #sse = new SseSplitter();

  push(chunk: Buffer): Record<string, unknown>[] {
    return this.#sse.push(chunk).flatMap(jsonData);
  }

  flush(): Record<string, unknown>[] {
    const e = this.#sse.flush();
    return e ? jsonData(e) : [];
  }
}

function jsonData(e: SseEvent): Record<string, unknown>[] {
  if (e.data === undefined) return [];
  try {
    const v = JSON.parse(e.data) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? [v as Record<string, unknown>] : [];
  } catch {
    return [];
  }
}
