// Client of the admin `/debug/trace` SSE stream: reports when every worker is armed, then each event,
// and fails clearly when the stream is refused, malformed, or ends before `requestFinished`.
import http, { type IncomingMessage } from 'node:http';
import { TraceEvent } from '@gw/api/admin/trace-event';
import { readWire } from '@gw/api/admin/wire';
import { adminUnreachable, causeOf, GwctlError, traceEnded } from './errors.ts';

export interface TraceStreamOptions {
  adminPort: number;
  expression?: string | undefined;
  onEvent: (event: TraceEvent) => void;
}

export interface TraceStream {
  /** Resolves once the proxy said every worker is armed (or an event arrived, which implies it). */
  armed: Promise<void>;
  /** Resolves with every event after `requestFinished`; rejects with a GwctlError. */
  done: Promise<TraceEvent[]>;
  /** Stops listening; the proxy disarms when the connection closes. */
  close(): void;
}

/** Splits an SSE byte stream into messages; comment lines come back as `{ comment }`. */
export class SseParser {
  #buf = '';
  #cr = '';
  push(chunk: string): ({ data: string } | { comment: string })[] {
    // A CR at the end of a chunk may be the first half of a CRLF: keep it for the next chunk.
    const text = this.#cr + chunk;
    this.#cr = text.endsWith('\r') ? '\r' : '';
    this.#buf += (this.#cr ? text.slice(0, -1) : text).replace(/\r\n?/g, '\n');
    const out: ({ data: string } | { comment: string })[] = [];
    let end = this.#buf.indexOf('\n\n');
    while (end !== -1) {
      const block = this.#buf.slice(0, end);
      this.#buf = this.#buf.slice(end + 2);
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) out.push({ comment: line.slice(1).trim() });
        else if (line.startsWith('data:')) data.push(line.slice(line[5] === ' ' ? 6 : 5));
      }
      if (data.length > 0) out.push({ data: data.join('\n') });
      end = this.#buf.indexOf('\n\n');
    }
    return out;
  }
}

function parseEvent(data: string): TraceEvent {
  const read = readWire(TraceEvent, data);
  if (read.ok) return read.value;
  throw new GwctlError(
    'GWCTL_ERR_MALFORMED',
    `the admin interface sent a malformed trace event (${read.problem === 'json' ? read.detail : `at ${read.detail}`}): ${data.slice(0, 120)}`,
  );
}

export function openTrace(opts: TraceStreamOptions): TraceStream {
  const path = `/debug/trace${opts.expression === undefined ? '' : `?expression=${encodeURIComponent(opts.expression)}`}`;
  const events: TraceEvent[] = [];
  let settled = false;
  let markArmed: () => void = () => {};
  let failArmed: (err: Error) => void = () => {};
  const armed = new Promise<void>((resolve, reject) => {
    markArmed = resolve;
    failArmed = reject;
  });
  armed.catch(() => {});
  let finish: (events: TraceEvent[]) => void = () => {};
  let fail: (err: Error) => void = () => {};
  const done = new Promise<TraceEvent[]>((resolve, reject) => {
    finish = resolve;
    fail = reject;
  });
  done.catch(() => {});

  const req = http.get({ host: '127.0.0.1', port: opts.adminPort, path, agent: false });
  const settle = (err: Error | undefined) => {
    if (settled) return;
    settled = true;
    if (err) {
      failArmed(err);
      fail(err);
    } else {
      markArmed();
      finish(events);
    }
    req.destroy();
  };

  let res: IncomingMessage | undefined;
  req.on('error', (err) => {
    // Refused or unreachable before any answer: gw is not there. Afterwards: the stream broke off.
    settle(res === undefined ? adminUnreachable(opts.adminPort, causeOf(err)) : traceEnded());
  });
  req.on('response', (r) => {
    res = r;
    r.setEncoding('utf8');
    if (r.statusCode !== 200) {
      let body = '';
      r.on('data', (c: string) => {
        body += c;
      });
      r.on('end', () =>
        settle(
          new GwctlError('GWCTL_ERR_ADMIN_STATUS', `admin ${path} answered ${r.statusCode}: ${body.trim()}`),
        ),
      );
      return;
    }
    const type = String(r.headers['content-type'] ?? '');
    if (!type.startsWith('text/event-stream')) {
      settle(
        new GwctlError(
          'GWCTL_ERR_MALFORMED',
          `admin ${path} answered ${type || 'no content type'} instead of an event stream`,
        ),
      );
      return;
    }
    const parser = new SseParser();
    r.on('data', (chunk: string) => {
      if (settled) return;
      for (const m of parser.push(chunk)) {
        if ('comment' in m) {
          if (m.comment === 'armed') markArmed();
          continue;
        }
        let event: TraceEvent;
        try {
          event = parseEvent(m.data);
        } catch (err) {
          settle(err as Error);
          return;
        }
        markArmed();
        events.push(event);
        opts.onEvent(event);
        if (event.message.type === 'requestFinished') {
          settle(undefined);
          return;
        }
      }
    });
    r.on('error', () => settle(traceEnded()));
    r.on('end', () => settle(traceEnded()));
    r.on('close', () => settle(traceEnded()));
  });

  return {
    armed,
    done,
    close: () => settle(new GwctlError('GWCTL_ERR_TRACE_ENDED', 'trace cancelled')),
  };
}
