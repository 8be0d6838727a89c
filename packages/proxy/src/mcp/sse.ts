// Server-sent events both ways: a parser for upstream streams (fed decoded text, it yields one event
// per blank line) and the framing of the events the gateway writes to clients.

export interface SseEvent {
  event: string;
  data: string;
  id?: string;
}

export class SseParser {
  #buf = '';
  #data: string[] = [];
  #event = '';
  #id: string | undefined;

  /** Adds text; returns the events it completed. */
  push(text: string): SseEvent[] {
    this.#buf += text;
    const out: SseEvent[] = [];
    let nl = this.#buf.search(/\r\n|\r|\n/);
    while (nl !== -1) {
      const line = this.#buf.slice(0, nl);
      const skip = this.#buf.startsWith('\r\n', nl) ? 2 : 1;
      this.#buf = this.#buf.slice(nl + skip);
      this.#line(line, out);
      nl = this.#buf.search(/\r\n|\r|\n/);
    }
    return out;
  }

  #line(line: string, out: SseEvent[]): void {
    if (line === '') {
      if (this.#data.length > 0) {
        const e: SseEvent = { event: this.#event || 'message', data: this.#data.join('\n') };
        if (this.#id !== undefined) e.id = this.#id;
        out.push(e);
      }
      this.#data = [];
      this.#event = '';
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.#data.push(value);
    else if (field === 'event') this.#event = value;
    else if (field === 'id') this.#id = value;
  }
}

/** One event as written to a client. */
export function sseFrame(data: string, event?: string): string {
  return `${event ? `event: ${event}\n` : ''}data: ${data.replace(/\n/g, '\ndata: ')}\n\n`;
}
