// The agent's answer to a JSON-RPC or REST call, read as it passes to the client: a JSON body or a
// stream of server-sent events (message/stream, tasks/resubscribe). Every chunk goes on at once; a copy of the
// JSON (up to the buffer limit) or of the event in progress is all that is kept, to learn the
// outcome, the task and its state when the answer ends.
import { SseSplitter } from '../llm/sse.ts';
import type { RequestContext } from '../pipeline/context.ts';
import { observeBody } from '../pipeline/observer.ts';
import type { A2aRequestInfo } from './info.ts';
import { type AnswerState, readAnswer } from './jsonrpc.ts';
import { readRestAnswer } from './rest.ts';

/** The attempt whose answer counts: a retry's discarded answer must not end the next one's. */
const current = new WeakMap<A2aRequestInfo, AnswerState>();

export function watchAnswer(ctx: RequestContext, info: A2aRequestInfo, limit: number): void {
  const res = ctx.response;
  if (!res) return;
  const seen: AnswerState = { result: false, error: false };
  current.set(info, seen);
  // A REST call's error is its HTTP status (the body, whatever it is, goes on unread).
  const rest = info.binding === 'rest';
  if (rest && res.status >= 400) seen.error = true;
  const done = (cut: boolean) => {
    if (info.outcome !== undefined || current.get(info) !== seen) return;
    info.outcome = seen.error ? 'error' : cut ? 'aborted' : seen.result ? 'ok' : 'failed';
    ctx.obs?.event(ctx, 'a2a', answerFields(info), null, info.outcome === 'ok' ? 'info' : 'warn');
  };
  if (res.body === null || ctx.method === 'HEAD') {
    done(false);
    return;
  }
  const type = String(res.headers['content-type'] ?? '').toLowerCase();
  const read = rest ? (seen.error ? () => false : readRestAnswer) : readAnswer;
  const reader = type.startsWith('text/event-stream')
    ? new EventReader(info, seen, limit, read)
    : new JsonReader(info, seen, limit, read);
  info.streaming = reader instanceof EventReader;
  const body = observeBody(
    res.body,
    (c) => reader.push(c),
    () => {
      reader.end();
      done(false);
    },
  );
  if (!Buffer.isBuffer(body)) body.once('close', () => done(true));
  res.body = body;
}

function answerFields(info: A2aRequestInfo): Record<string, unknown> {
  const f: Record<string, unknown> = { phase: 'response', method: info.method, outcome: info.outcome };
  if (info.streaming) f.streaming = true;
  if (info.taskId) f.taskId = info.taskId;
  if (info.taskState) f.taskState = info.taskState;
  if (info.errorCode !== undefined) f.errorCode = info.errorCode;
  return f;
}

interface Reader {
  push(chunk: Buffer): void;
  end(): void;
}

/** Reads one answer (a body, or one event's data) into the request's info. */
type ReadOne = (text: string, info: A2aRequestInfo, seen: AnswerState) => boolean;

/** A JSON body: kept up to the limit and read at its end; a larger one is not read at all. */
class JsonReader implements Reader {
  readonly info: A2aRequestInfo;
  readonly seen: AnswerState;
  readonly limit: number;
  readonly read: ReadOne;
  readonly #chunks: Buffer[] = [];
  #size = 0;
  constructor(info: A2aRequestInfo, seen: AnswerState, limit: number, read: ReadOne) {
    this.info = info;
    this.seen = seen;
    this.limit = limit;
    this.read = read;
  }
  push(c: Buffer): void {
    this.#size += c.length;
    if (this.#size <= this.limit) this.#chunks.push(c);
    else this.#chunks.length = 0;
  }
  end(): void {
    if (this.#size > this.limit || this.#size === 0) return;
    this.read(Buffer.concat(this.#chunks, this.#size).toString('utf8'), this.info, this.seen);
  }
}

/** Server-sent events: each event's data is one JSON-RPC answer. An event over the limit ends the reading. */
class EventReader implements Reader {
  #splitter: SseSplitter | undefined = new SseSplitter();
  /** Bytes since the last whole event. */
  #pending = 0;
  readonly info: A2aRequestInfo;
  readonly seen: AnswerState;
  readonly limit: number;
  readonly read: ReadOne;
  constructor(info: A2aRequestInfo, seen: AnswerState, limit: number, read: ReadOne) {
    this.info = info;
    this.seen = seen;
    this.limit = limit;
    this.read = read;
  }
  push(c: Buffer): void {
    const s = this.#splitter;
    if (!s) return;
    const events = s.push(c);
    this.#pending = events.length > 0 ? 0 : this.#pending + c.length;
    if (this.#pending > this.limit) this.#splitter = undefined;
    for (const e of events) if (e.data !== undefined) this.read(e.data, this.info, this.seen);
  }
  end(): void {
    const e = this.#splitter?.flush();
    if (e?.data !== undefined) this.read(e.data, this.info, this.seen);
  }
}
