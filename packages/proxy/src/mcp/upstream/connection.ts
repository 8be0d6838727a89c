// What the federation needs of one target: send it a request and get the answer (with the messages
// it sends about that request on the way: progress, sampling), send it notifications and answers,
// listen to what it says unasked, and end the session.
import type { Headers } from '../../pipeline/context.ts';
import type { Id, Message, Notification, Request, Response } from '../jsonrpc.ts';

/** Where messages for the client go: notifications and server-to-client requests of a target. */
export type Relay = (m: Message) => void;

export interface RequestOptions {
  signal?: AbortSignal | undefined;
  /** Messages the target sends about this request before its answer. */
  relay?: Relay | undefined;
  /** 0: none. */
  timeoutMs?: number | undefined;
  /**
   * The client's headers for a target that makes one HTTP request per call (openapi; a
   * streamable-HTTP connection is made with them, for its notifications and streams too).
   */
  headers?: Readonly<Headers> | undefined;
}

export interface TargetConnection {
  readonly target: string;
  /** The upstream session id (streamable HTTP), else null. */
  readonly sessionId: string | null;
  request(req: Request, opts?: RequestOptions): Promise<Response>;
  send(m: Notification | Response): Promise<void>;
  /** Messages the target sends outside any request, until `signal` aborts or the target ends them. */
  listen(relay: Relay, signal: AbortSignal): Promise<void>;
  /** Ends the upstream session (DELETE; a stdio process is stopped). */
  close(): Promise<void>;
}

/** A target that failed: unreachable, an HTTP error, a crash, too slow. The message names why. */
export class TargetError extends Error {
  readonly target: string;
  readonly timeout: boolean;
  /** The target said the session is gone (HTTP 404 on a session). */
  readonly sessionGone: boolean;
  constructor(
    target: string,
    message: string,
    opts: { timeout?: boolean; sessionGone?: boolean; cause?: unknown } = {},
  ) {
    super(`target ${target}: ${message}`, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'TargetError';
    this.target = target;
    this.timeout = opts.timeout ?? false;
    this.sessionGone = opts.sessionGone ?? false;
  }
}

/** The request's abort signal combined with its timeout; `timedOut` tells the two apart. */
export function deadline(
  signal: AbortSignal | undefined,
  timeoutMs: number | undefined,
): { signal: AbortSignal | undefined; timedOut: () => boolean; done: () => void } {
  if (!timeoutMs) return { signal, timedOut: () => false, done: () => {} };
  const ac = new AbortController();
  let fired = false;
  const timer = setTimeout(() => {
    fired = true;
    ac.abort(new Error('timeout'));
  }, timeoutMs);
  const onAbort = () => ac.abort(signal?.reason);
  signal?.addEventListener('abort', onAbort, { once: true });
  if (signal?.aborted) ac.abort(signal.reason);
  return {
    signal: ac.signal,
    timedOut: () => fired,
    done: () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    },
  };
}

export function idKey(id: Id): string {
  return typeof id === 'number' ? `n${id}` : `s${id}`;
}
