// What an MCP backend keeps between requests in one worker: the connection-bound targets of each
// session (stdio processes, legacy SSE streams), the legacy SSE streams of clients, and which target
// owns a name or URI (for Never mode and resources). Everything else travels in the session id. A
// session's connection-bound targets live in its home worker only; the other workers reach them through
// it (remote-connection.ts). The proxy's pool registry holds the runtime while a config uses it and
// closes it (killing its processes) when none does.

import { BroadcastChannel } from 'node:worker_threads';
import { Refusals } from '../server/connection-limit.ts';
import type { Retained } from '../upstream/pools.ts';
import { sessionEnded } from './ended-sessions.ts';
import { mcpLog } from './log.ts';
import { HomeLink, type Where } from './remote-connection.ts';
import type { SessionState } from './session.ts';
import { type Relay, type TargetConnection, TargetError } from './upstream/connection.ts';
import type { StreamConnection } from './upstream/stream.ts';

/** Sessions unused this long lose their processes (agentgateway's default sessionTtl). */
export const SESSION_IDLE_MS = 30 * 60 * 1000;
/**
 * The sessions one worker keeps connection-bound targets for (a stdio process, a legacy SSE stream
 * each): past it, the session used least recently loses its own, so clients that start sessions
 * and walk away cannot start processes without bound.
 */
export const MAX_STREAM_SESSIONS = 100;
/** The session of stateless routing: every client's calls share its targets (federation.ts). */
export const STATELESS = 'stateless';

export interface RuntimeLimits {
  /** A session whose targets were unused this long loses them. */
  idleMs: number;
  /** config.mcp.sessionTtl: a session this old loses them; 0: no limit. */
  ttlMs: number;
  /** At most this many sessions hold connection-bound targets. */
  maxSessions: number;
}

/** A legacy SSE client's stream: its session once initialized, and the signal that ends with it. */
export interface ClientStream {
  /** Writes one message to the client's stream. */
  send: Relay;
  close(): void;
  signal: AbortSignal;
  state?: SessionState;
}

/** A legacy SSE message on its way to the worker holding its stream, with its request's CEL view. */
export interface RemoteMessage {
  nonce: string;
  message: unknown;
  cel: Record<string, unknown>;
  route: string | undefined;
}

export class McpRuntime implements Retained {
  /** Connection-bound targets by session nonce, then target name. */
  readonly streams = new Map<string, Map<string, StreamConnection>>();
  /** Which target serves a tool, prompt or resource, by session nonce (learned from lists). */
  readonly owners = new Map<string, { at: number; names: Map<string, string> }>();
  /** Requests in flight by session nonce + client id: the target that has it (to route a cancel). */
  readonly inflight = new Map<string, string>();
  /** Legacy SSE clients by session nonce: where that session's answers go. */
  readonly clientStreams = new Map<string, ClientStream>();
  #closed = false;
  #sweep: NodeJS.Timeout;
  #limits: RuntimeLimits = { idleMs: SESSION_IDLE_MS, ttlMs: 0, maxSessions: MAX_STREAM_SESSIONS };
  /** When each session in `streams` started its first connection-bound target. */
  readonly #started = new Map<string, number>();
  #channel: BroadcastChannel | undefined;
  /**
   * What the log says of sessions evicted for room and of sessions refused for want of it: one line
   * per 10 s at most of each, with how many since the last one (a client retrying in a loop would
   * otherwise write a line a request); the eviction's line describes the latest.
   */
  #evicted: Record<string, unknown> = {};
  readonly #evictions = new Refusals((count) =>
    mcpLog().info({ ...this.#evicted, count }, 'MCP session stopped its stdio processes and streams'),
  );
  #refusedFor = '';
  readonly #refusals = new Refusals((count) =>
    mcpLog().warn(
      { target: this.#refusedFor, limit: this.#limits.maxSessions, count },
      'MCP session refused: every session holding stdio processes or streams in this worker is in use',
    ),
  );
  /** Handles a legacy SSE message another worker received for a stream this worker holds. */
  onRemote: ((m: RemoteMessage) => void) | undefined;
  /** How this worker starts a target of a session it is the home of, when a sibling asks first. */
  #open: ((target: string, params: Record<string, unknown>) => StreamConnection) | undefined;
  #home: HomeLink | undefined;

  /** Names this runtime's config across workers. */
  readonly key: string;

  constructor(key: string) {
    this.key = key;
    this.#sweep = this.#schedule();
  }

  /** A sweep often enough for the limits: every minute, or a quarter of the shorter of them (1 s at least). */
  #schedule(): NodeJS.Timeout {
    const { idleMs, ttlMs } = this.#limits;
    const shortest = ttlMs > 0 ? Math.min(idleMs, ttlMs) : idleMs;
    const t = setInterval(
      () => this.sweep(Date.now()),
      Math.max(1000, Math.min(60_000, Math.floor(shortest / 4))),
    );
    t.unref();
    return t;
  }

  /** The limits of the config that uses this runtime (a reload that keeps its targets may change them). */
  setLimits(l: Partial<RuntimeLimits>): void {
    const next = { ...this.#limits, ...l };
    if (next.idleMs === this.#limits.idleMs && next.ttlMs === this.#limits.ttlMs) {
      this.#limits = next;
      return;
    }
    this.#limits = next;
    if (this.#closed) return;
    clearInterval(this.#sweep);
    this.#sweep = this.#schedule();
  }

  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Legacy SSE clients POST on a connection of their own, which may reach another worker than the
   * one holding their stream: that worker passes the message on to all, and the holder handles it.
   */
  forward(m: RemoteMessage): void {
    this.#remoteChannel().postMessage(m);
  }

  /** Listens for forwarded messages (the worker that holds a legacy stream). */
  listenRemote(): void {
    this.#remoteChannel();
  }

  #remoteChannel(): BroadcastChannel {
    if (!this.#channel) {
      const ch = new BroadcastChannel(`gw-mcp-legacy:${this.key}`);
      ch.onmessage = (e) => {
        const m = (e as { data: RemoteMessage }).data;
        if (this.clientStreams.has(m.nonce)) this.onRemote?.(m);
      };
      ch.unref();
      this.#channel = ch;
    }
    return this.#channel;
  }

  /**
   * Serves the sessions whose home is this worker to its siblings, starting a target with `open` when
   * a sibling asks for one this worker has not started (after an eviction, a reload, a restart).
   */
  serve(open: (target: string, params: Record<string, unknown>) => StreamConnection): void {
    this.#open = open;
    this.#homeLink();
  }

  /** A session's target that lives in worker `home` of this process, reached through it. */
  remote(home: number, where: Where): TargetConnection {
    return this.#homeLink().connection(home, where);
  }

  /** Ends, in its home worker, a session whose targets live there. */
  endAt(home: number, nonce: string): void {
    this.#homeLink().end(home, nonce);
  }

  #homeLink(): HomeLink {
    this.#home ??= new HomeLink(`gw-mcp-home:${this.key}`, {
      connection: (nonce, target, params) => {
        const open = this.#open;
        if (!open) throw new TargetError(target, 'the gateway worker holding the session does not serve it');
        // a sibling's request that crossed the session's DELETE must not start the process again
        if (sessionEnded(nonce)) throw new TargetError(target, 'session ended', { sessionGone: true });
        return this.connection(nonce, target, () => open(target, params));
      },
      close: async (nonce, target) => {
        const m = this.streams.get(nonce);
        const c = m?.get(target);
        m?.delete(target);
        await c?.close();
      },
      end: (nonce) => this.endSession(nonce),
    });
    return this.#home;
  }

  connection(nonce: string, target: string, create: () => StreamConnection): StreamConnection {
    let m = this.streams.get(nonce);
    if (!m) {
      if (nonce !== STATELESS && this.#sessions() >= this.#limits.maxSessions) this.#endLeastUsed(target);
      m = new Map();
      this.streams.set(nonce, m);
      this.#started.set(nonce, Date.now());
    }
    let c = m.get(target);
    if (!c) {
      c = create().start();
      m.set(target, c);
    }
    return c;
  }

  owner(nonce: string, key: string): string | undefined {
    return this.owners.get(nonce)?.names.get(key);
  }

  learn(nonce: string, entries: [string, string][]): void {
    let o = this.owners.get(nonce);
    if (!o) {
      o = { at: Date.now(), names: new Map() };
      this.owners.set(nonce, o);
    }
    o.at = Date.now();
    for (const [k, t] of entries) o.names.set(k, t);
    // A bound on memory, not a cache policy: a busy worker forgets the oldest sessions' names.
    if (this.owners.size > 10_000) {
      const first = this.owners.keys().next().value;
      if (first !== undefined) this.owners.delete(first);
    }
  }

  /** The client sessions holding connection-bound targets (the shared stateless ones not counted). */
  #sessions(): number {
    return this.streams.size - (this.streams.has(STATELESS) ? 1 : 0);
  }

  /**
   * Makes room for a new session: the one whose targets were used least recently loses them, unless
   * it is in use (a call waiting for its answer, a legacy SSE client listening). With every session
   * in use the new one is refused.
   */
  #endLeastUsed(target: string): void {
    let oldest: string | undefined;
    let at = Number.POSITIVE_INFINITY;
    for (const [nonce, m] of this.streams) {
      if (nonce === STATELESS || this.clientStreams.has(nonce) || [...m.values()].some((c) => c.busy))
        continue;
      const last = lastUsed(m);
      if (last < at) {
        at = last;
        oldest = nonce;
      }
    }
    // the client is told as for a target that cannot be reached (a JSON-RPC error)
    if (oldest === undefined) {
      this.#refusedFor = target;
      this.#refusals.note();
      throw new TargetError(
        target,
        `this gateway worker holds targets for ${this.#limits.maxSessions} MCP sessions, all in use: try again later`,
      );
    }
    // the client finds out when it comes back (its session is gone); the operator, here
    this.#logEnd(oldest, 'evicted', Date.now());
    void this.endSession(oldest);
  }

  /**
   * Why a session lost its connection-bound targets: `evicted` (room for a new session, past
   * maxSessions), `idle` (unused for idleMs) or `expired` (config.mcp.sessionTtl). The session id is
   * left out: it is what a client presents to use the session.
   */
  #logEnd(nonce: string, reason: 'evicted' | 'idle' | 'expired', now: number): void {
    const m = this.streams.get(nonce);
    if (!m) return;
    const started = this.#started.get(nonce) ?? now;
    const fields = {
      reason,
      targets: [...m.keys()],
      ageSeconds: Math.round((now - started) / 1000),
      idleSeconds: Math.round((now - lastUsed(m)) / 1000),
    };
    if (reason === 'evicted') {
      this.#evicted = { ...fields, limit: this.#limits.maxSessions };
      this.#evictions.note();
    } else mcpLog().debug(fields, 'MCP session stopped its stdio processes and streams');
  }

  /** Ends a session's connection-bound targets (DELETE, idle, its ttl, room for another). */
  async endSession(nonce: string): Promise<void> {
    const m = this.streams.get(nonce);
    this.streams.delete(nonce);
    this.#started.delete(nonce);
    this.owners.delete(nonce);
    this.clientStreams.get(nonce)?.close();
    this.clientStreams.delete(nonce);
    if (m) await Promise.allSettled([...m.values()].map((c) => c.close()));
  }

  sweep(now: number): void {
    const { idleMs, ttlMs } = this.#limits;
    for (const [nonce, m] of this.streams) {
      const idle = now - lastUsed(m) > idleMs && !this.clientStreams.has(nonce);
      // the ttl is a client session's; the stateless targets are everyone's
      const expired = ttlMs > 0 && nonce !== STATELESS && now - (this.#started.get(nonce) ?? now) > ttlMs;
      if (idle || expired) {
        // the stateless targets are everyone's, not a session's
        if (nonce !== STATELESS) this.#logEnd(nonce, expired ? 'expired' : 'idle', now);
        void this.endSession(nonce);
      }
    }
    for (const [nonce, o] of this.owners) if (now - o.at > idleMs) this.owners.delete(nonce);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#sweep);
    this.#channel?.close();
    this.#home?.close();
    await Promise.allSettled([...this.streams.keys()].map((n) => this.endSession(n)));
  }
}

/** When a session's connection-bound targets were last used. */
function lastUsed(m: Map<string, StreamConnection>): number {
  let last = 0;
  for (const c of m.values()) last = Math.max(last, c.lastUsed);
  return last;
}
