// A session's connection-bound targets (a stdio process, a legacy SSE stream) live in one worker, its
// home, as a client's answers and the target's state must meet in one place. A request of the session
// that another worker of the process receives is served at home over a BroadcastChannel: that worker
// holds a RemoteConnection, and the home answers with its real connection.
import { BroadcastChannel, threadId } from 'node:worker_threads';
import type { Message, Notification, Request, Response } from './jsonrpc.ts';
import {
  deadline,
  type Relay,
  type RequestOptions,
  type TargetConnection,
  TargetError,
} from './upstream/connection.ts';

/**
 * How long a home has to say it took an operation: one that does not (its worker exited, or it no
 * longer serves this config) fails the operation as a timeout would, and a call without a timeout of
 * its own does not wait for it for ever.
 */
export const HOME_ACK_MS = 5_000;

/** Which session and target, and what to initialize the target with if the home has to start it. */
export interface Where {
  nonce: string;
  target: string;
  params: Record<string, unknown>;
}

type Work =
  | { op: 'request'; message: Request; relay: boolean; timeoutMs: number }
  | { op: 'send'; message: Notification | Response }
  | { op: 'listen' }
  | { op: 'close' };

interface Envelope {
  to: number;
  from: number;
  id: number;
}

type Ask =
  | (Envelope & Where & Work)
  | (Envelope & { op: 'cancel' })
  | (Envelope & { op: 'end'; nonce: string });

type ReplyBody =
  | { op: 'ack' }
  | { op: 'relay'; message: Message }
  | { op: 'done'; response?: Response }
  | { op: 'fail'; reason: string; timeout: boolean; sessionGone: boolean };

type Reply = { to: number; id: number } & ReplyBody;

/** What the home worker does for its siblings (McpRuntime). */
export interface Home {
  /** The session's connection to the target, started as a local one would be when there is none. */
  connection(nonce: string, target: string, params: Record<string, unknown>): TargetConnection;
  close(nonce: string, target: string): Promise<void>;
  end(nonce: string): Promise<void>;
}

/** One worker's end of a runtime's channel: it asks homes, and is the home of its own sessions. */
export class HomeLink {
  readonly #ch: BroadcastChannel;
  readonly #home: Home;
  readonly #ackMs: number;
  #seq = 0;
  #closed = false;
  /** What this worker asked of homes, by id: where each reply goes. */
  readonly #waiting = new Map<number, (r: ReplyBody) => void>();
  /** What siblings asked of this home, by `<from>:<id>`: aborted when they give up. */
  readonly #serving = new Map<string, AbortController>();

  constructor(name: string, home: Home, ackMs = HOME_ACK_MS) {
    this.#home = home;
    this.#ackMs = ackMs;
    this.#ch = new BroadcastChannel(name);
    this.#ch.onmessage = (e) => {
      const m = (e as { data: Ask | Reply }).data;
      // every sibling sees every message: each takes those addressed to it
      if (m.to !== threadId) return;
      // what a sibling asks names its sender; a reply names only the ask it answers
      if ('from' in m) this.#serve(m);
      else this.#waiting.get(m.id)?.(m);
    };
    this.#ch.unref();
  }

  /** Nothing once closed: the answer of a request the closing aborted has nobody to go to. */
  #post(m: Ask | Reply): void {
    if (!this.#closed) this.#ch.postMessage(m);
  }

  /** A stand-in for the connection to `where.target` of a session whose home is worker `home`. */
  connection(home: number, where: Where): TargetConnection {
    return new RemoteConnection(this, home, where);
  }

  /** Ends a session at its home (DELETE on this worker): its processes stop and its streams close. */
  end(home: number, nonce: string): void {
    this.#post({ op: 'end', nonce, to: home, from: threadId, id: ++this.#seq } satisfies Ask);
  }

  /**
   * Asks the home to do `work` and settles with its outcome: the answer (a request), nothing (the
   * rest), or a TargetError. Messages the home relays on the way go to `o.relay`. The signal and the
   * timeout are kept here; when either ends the wait, the home is told to stop.
   */
  run(to: number, where: Where, work: Work, o: RequestOptions = {}): Promise<Response | undefined> {
    const id = ++this.#seq;
    const d = deadline(o.signal, o.timeoutMs);
    return new Promise((resolve, reject) => {
      let silence: NodeJS.Timeout | undefined;
      const settle = (err: TargetError | undefined, res?: Response) => {
        clearTimeout(silence);
        d.done();
        d.signal?.removeEventListener('abort', onAbort);
        this.#waiting.delete(id);
        if (err) reject(err);
        else resolve(res);
      };
      const giveUp = (err: TargetError) => {
        // the home stops waiting for the target's answer, or stops relaying what nobody reads
        this.#post({ op: 'cancel', to, from: threadId, id } satisfies Ask);
        settle(err);
      };
      const onAbort = () =>
        giveUp(
          d.timedOut()
            ? new TargetError(where.target, `no answer within ${o.timeoutMs} ms`, { timeout: true })
            : new TargetError(where.target, 'cancelled'),
        );
      if (d.signal?.aborted) return onAbort();
      d.signal?.addEventListener('abort', onAbort, { once: true });
      silence = setTimeout(
        () =>
          giveUp(
            new TargetError(
              where.target,
              `no answer within ${this.#ackMs} ms from the gateway worker holding the session`,
              { timeout: true },
            ),
          ),
        this.#ackMs,
      );
      this.#waiting.set(id, (r) => {
        if (r.op === 'ack') clearTimeout(silence);
        else if (r.op === 'relay') o.relay?.(r.message);
        else if (r.op === 'done') settle(undefined, r.response);
        else
          settle(new TargetError(where.target, r.reason, { timeout: r.timeout, sessionGone: r.sessionGone }));
      });
      this.#post({ ...where, ...work, to, from: threadId, id } satisfies Ask);
    });
  }

  #serve(m: Ask): void {
    const key = `${m.from}:${m.id}`;
    if (m.op === 'cancel') {
      this.#serving.get(key)?.abort();
      return;
    }
    if (m.op === 'end') {
      void this.#home.end(m.nonce);
      return;
    }
    const reply = (r: ReplyBody) => this.#post({ ...r, to: m.from, id: m.id } satisfies Reply);
    reply({ op: 'ack' });
    const ac = new AbortController();
    this.#serving.set(key, ac);
    const relay: Relay = (message) => reply({ op: 'relay', message });
    let work: Promise<Response | undefined>;
    try {
      if (m.op === 'close') work = this.#home.close(m.nonce, m.target).then(() => undefined);
      else {
        const conn = this.#home.connection(m.nonce, m.target, m.params);
        if (m.op === 'request')
          work = conn.request(m.message, {
            signal: ac.signal,
            timeoutMs: m.timeoutMs,
            relay: m.relay ? relay : undefined,
          });
        else if (m.op === 'send') work = conn.send(m.message).then(() => undefined);
        else work = conn.listen(relay, ac.signal).then(() => undefined);
      }
    } catch (err) {
      work = Promise.reject(err);
    }
    work
      .then(
        (response) => reply(response ? { op: 'done', response } : { op: 'done' }),
        (err: unknown) => reply(failure(m.target, err)),
      )
      .finally(() => this.#serving.delete(key));
  }

  /** Fails what this worker waits for and stops what it serves (the runtime is closing). */
  close(): void {
    this.#closed = true;
    for (const w of [...this.#waiting.values()])
      w({ op: 'fail', reason: 'closed', timeout: false, sessionGone: false });
    for (const ac of this.#serving.values()) ac.abort();
    this.#serving.clear();
    this.#ch.close();
  }
}

/** A failure as it crosses to the caller, who makes it a TargetError again. */
function failure(target: string, err: unknown): ReplyBody {
  if (!(err instanceof TargetError))
    return { op: 'fail', reason: (err as Error)?.message ?? String(err), timeout: false, sessionGone: false };
  // the caller's TargetError names the target again
  const prefix = `target ${target}: `;
  const reason = err.message.startsWith(prefix) ? err.message.slice(prefix.length) : err.message;
  return { op: 'fail', reason, timeout: err.timeout, sessionGone: err.sessionGone };
}

/** A session's connection to a target that lives in its home worker. */
class RemoteConnection implements TargetConnection {
  readonly target: string;
  readonly sessionId = null;
  readonly #link: HomeLink;
  readonly #home: number;
  readonly #where: Where;

  constructor(link: HomeLink, home: number, where: Where) {
    this.target = where.target;
    this.#link = link;
    this.#home = home;
    this.#where = where;
  }

  async request(req: Request, opts: RequestOptions = {}): Promise<Response> {
    const work: Work = {
      op: 'request',
      message: req,
      relay: opts.relay !== undefined,
      timeoutMs: opts.timeoutMs ?? 0,
    };
    const r = await this.#link.run(this.#home, this.#where, work, opts);
    if (!r) throw new TargetError(this.target, 'no answer');
    return r;
  }

  async send(m: Notification | Response): Promise<void> {
    await this.#link.run(this.#home, this.#where, { op: 'send', message: m });
  }

  async listen(relay: Relay, signal: AbortSignal): Promise<void> {
    await this.#link
      .run(this.#home, this.#where, { op: 'listen' }, { signal, relay })
      .catch((err: unknown) => {
        // the client closed its stream: listening ended as it should
        if (!signal.aborted) throw err;
      });
  }

  async close(): Promise<void> {
    await this.#link.run(this.#home, this.#where, { op: 'close' });
  }
}
