// Targets whose session is a live connection: a stdio process or a legacy SSE stream. The connection
// lives in this worker; it initializes itself (with the client's initialize params) when it starts
// and again after every restart, so a crash costs the session nothing but the time to restart.
// Restarts back off (250 ms doubling to 30 s, reset once a start succeeds).
import {
  type Id,
  isRequest,
  isResponse,
  type Message,
  type Notification,
  type Request,
  type Response,
} from '../jsonrpc.ts';
import { mcpLog } from '../log.ts';
import {
  deadline,
  idKey,
  type Relay,
  type RequestOptions,
  type TargetConnection,
  TargetError,
} from './connection.ts';

interface Pending {
  resolve(r: Response): void;
  reject(e: Error): void;
  relay: Relay | undefined;
  progressToken: unknown;
  method: string;
}

const MAX_BACKOFF_MS = 30_000;
const FIRST_BACKOFF_MS = 250;

export abstract class StreamConnection implements TargetConnection {
  readonly target: string;
  readonly sessionId = null;
  /** The answer to the latest initialize: what the client is told of this target. */
  initResult: Record<string, unknown> | undefined;
  readonly #pending = new Map<string, Pending>();
  readonly #listeners = new Set<Relay>();
  readonly #initParams: Record<string, unknown>;
  readonly #initTimeoutMs: number;
  #ready: Promise<void> | undefined;
  #state: 'starting' | 'up' | 'down' | 'closed' = 'starting';
  #lastError = '';
  #backoff = FIRST_BACKOFF_MS;
  #restartTimer: NodeJS.Timeout | undefined;
  #seq = 0;
  /** When the connection was last used (ms), for the idle sweep. */
  lastUsed = Date.now();

  /** Whether a request to the target is waiting for its answer (a session that is not to be ended). */
  get busy(): boolean {
    return this.#pending.size > 0;
  }

  constructor(target: string, initParams: Record<string, unknown>, initTimeoutMs: number) {
    this.target = target;
    this.#initParams = initParams;
    this.#initTimeoutMs = initTimeoutMs;
  }

  /** Starts the transport and initializes the target (once; later starts are restarts). */
  start(): this {
    if (!this.#ready) {
      this.#ready = this.#start();
      this.#ready.catch(() => {});
    }
    return this;
  }

  /** Opens the transport; messages go to deliver(), its end to lost(). */
  protected abstract open(): Promise<void>;
  protected abstract write(m: Message): Promise<void>;
  /** Stops the transport for good (kills the process). */
  protected abstract shut(): Promise<void>;
  protected abstract describe(): string;

  get state(): string {
    return this.#state;
  }

  async #start(): Promise<void> {
    this.#state = 'starting';
    try {
      await this.open();
      const id = `gw-init-${++this.#seq}`;
      const init = await this.#send(
        { jsonrpc: '2.0', id, method: 'initialize', params: this.#initParams },
        {
          timeoutMs: this.#initTimeoutMs,
        },
      );
      if (init.error) throw new TargetError(this.target, `initialize failed: ${init.error.message}`);
      this.initResult = init.result;
      await this.write({ jsonrpc: '2.0', method: 'notifications/initialized' });
      if (this.#state === 'starting') this.#state = 'up';
      this.#backoff = FIRST_BACKOFF_MS;
    } catch (err) {
      const e = err instanceof TargetError ? err : new TargetError(this.target, (err as Error).message);
      this.lost(e.message);
      throw e;
    }
  }

  /** The transport ended: requests in flight fail, and the target restarts after a back-off. */
  protected lost(reason: string): void {
    if (this.#state === 'closed' || this.#state === 'down') return;
    this.#state = 'down';
    this.#lastError = reason;
    const err = new TargetError(this.target, reason);
    for (const p of this.#pending.values()) p.reject(err);
    this.#pending.clear();
    const wait = this.#backoff;
    this.#backoff = Math.min(this.#backoff * 2, MAX_BACKOFF_MS);
    mcpLog().warn(
      { target: this.target, reason, restartInMs: wait },
      `MCP target ${this.describe()} failed; restarting`,
    );
    this.#restartTimer = setTimeout(() => {
      this.#restartTimer = undefined;
      if (this.#state !== 'down') return;
      this.shut()
        .catch(() => {})
        .then(() => {
          if (this.#state !== 'down') return;
          this.#ready = this.#start();
          this.#ready.catch(() => {});
        });
    }, wait);
    this.#restartTimer.unref();
  }

  /** Ready to take requests: started, or an error at once while it waits to restart. */
  async ready(): Promise<void> {
    this.lastUsed = Date.now();
    if (this.#state === 'closed') throw new TargetError(this.target, 'closed');
    if (this.#state === 'down') throw new TargetError(this.target, `down (${this.#lastError}); restarting`);
    await this.start().#ready;
  }

  protected deliver(m: Message): void {
    if (isResponse(m)) {
      if (m.id === null) return;
      const key = idKey(m.id);
      const p = this.#pending.get(key);
      if (!p) return;
      this.#pending.delete(key);
      p.resolve(m);
      return;
    }
    // Progress names its request by token; a server request during a call belongs to that call.
    const token = (m as Notification).params?.progressToken;
    if (token !== undefined) {
      for (const p of this.#pending.values()) {
        if (p.progressToken === token && p.relay) {
          p.relay(m);
          return;
        }
      }
    }
    if (isRequest(m)) {
      let latest: Pending | undefined;
      for (const p of this.#pending.values()) if (p.relay && p.method !== 'initialize') latest = p;
      if (latest?.relay) {
        latest.relay(m);
        return;
      }
      if (this.#listeners.size === 0) {
        // Nobody can answer it: say so instead of leaving the target waiting.
        void this.write({
          jsonrpc: '2.0',
          id: (m as Request).id,
          error: { code: -32601, message: 'the client has no open stream to take this request' },
        }).catch(() => {});
        return;
      }
    }
    for (const l of this.#listeners) l(m);
  }

  #send(req: Request, opts: RequestOptions): Promise<Response> {
    const key = idKey(req.id as Id);
    const d = deadline(opts.signal, opts.timeoutMs);
    return new Promise<Response>((resolve, reject) => {
      const done = () => {
        d.done();
        d.signal?.removeEventListener('abort', onAbort);
      };
      const onAbort = () => {
        this.#pending.delete(key);
        done();
        reject(
          d.timedOut()
            ? new TargetError(this.target, `no answer within ${opts.timeoutMs} ms`, { timeout: true })
            : new TargetError(this.target, 'cancelled'),
        );
      };
      if (d.signal?.aborted) return onAbort();
      d.signal?.addEventListener('abort', onAbort, { once: true });
      this.#pending.set(key, {
        resolve: (r) => {
          done();
          resolve(r);
        },
        reject: (e) => {
          done();
          reject(e);
        },
        relay: opts.relay,
        progressToken: req.params?._meta?.progressToken,
        method: req.method,
      });
      this.write(req).catch((err) => {
        this.#pending.delete(key);
        done();
        reject(new TargetError(this.target, `cannot send: ${(err as Error).message}`));
      });
    });
  }

  async request(req: Request, opts: RequestOptions = {}): Promise<Response> {
    await this.ready();
    // The client's initialize was answered when the connection started.
    if (req.method === 'initialize' && this.initResult)
      return { jsonrpc: '2.0', id: req.id, result: this.initResult };
    return this.#send(req, opts);
  }

  async send(m: Notification | Response): Promise<void> {
    // Started connections said initialized already.
    if ('method' in m && m.method === 'notifications/initialized') return;
    await this.ready();
    await this.write(m);
  }

  listen(relay: Relay, signal: AbortSignal): Promise<void> {
    this.#listeners.add(relay);
    return new Promise((resolve) => {
      const end = () => {
        this.#listeners.delete(relay);
        resolve();
      };
      if (signal.aborted) end();
      else signal.addEventListener('abort', end, { once: true });
    });
  }

  async close(): Promise<void> {
    if (this.#state === 'closed') return;
    this.#state = 'closed';
    if (this.#restartTimer) clearTimeout(this.#restartTimer);
    const err = new TargetError(this.target, 'session closed');
    for (const p of this.#pending.values()) p.reject(err);
    this.#pending.clear();
    await this.shut();
  }
}
