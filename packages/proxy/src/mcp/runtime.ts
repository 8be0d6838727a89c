// What an MCP backend keeps between requests in one worker: the connection-bound targets of each
// session (stdio processes, legacy SSE streams), the legacy SSE streams of clients, and which target
// owns a name or URI (for Never mode and resources). Everything else travels in the session id. The
// proxy's pool registry holds the runtime while a config uses it and closes it (killing its processes)
// when none does.

import { BroadcastChannel } from 'node:worker_threads';
import type { Retained } from '../upstream/pools.ts';
import type { SessionState } from './session.ts';
import type { Relay } from './upstream/connection.ts';
import type { StreamConnection } from './upstream/stream.ts';

/** Sessions unused this long lose their processes (agentgateway's default sessionTtl). */
export const SESSION_IDLE_MS = 30 * 60 * 1000;

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
  readonly #sweep: NodeJS.Timeout;
  #channel: BroadcastChannel | undefined;
  /** Handles a legacy SSE message another worker received for a stream this worker holds. */
  onRemote: ((m: RemoteMessage) => void) | undefined;

  /** Names this runtime's config across workers. */
  readonly key: string;

  constructor(key: string) {
    this.key = key;
    this.#sweep = setInterval(() => this.sweep(Date.now()), 60_000);
    this.#sweep.unref();
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

  connection(nonce: string, target: string, create: () => StreamConnection): StreamConnection {
    let m = this.streams.get(nonce);
    if (!m) {
      m = new Map();
      this.streams.set(nonce, m);
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

  /** Ends a session's connection-bound targets (DELETE, idle). */
  async endSession(nonce: string): Promise<void> {
    const m = this.streams.get(nonce);
    this.streams.delete(nonce);
    this.owners.delete(nonce);
    this.clientStreams.get(nonce)?.close();
    this.clientStreams.delete(nonce);
    if (m) await Promise.allSettled([...m.values()].map((c) => c.close()));
  }

  sweep(now: number): void {
    for (const [nonce, m] of this.streams) {
      let last = 0;
      for (const c of m.values()) last = Math.max(last, c.lastUsed);
      if (now - last > SESSION_IDLE_MS && !this.clientStreams.has(nonce)) void this.endSession(nonce);
    }
    for (const [nonce, o] of this.owners) if (now - o.at > SESSION_IDLE_MS) this.owners.delete(nonce);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#sweep);
    this.#channel?.close();
    await Promise.allSettled([...this.streams.keys()].map((n) => this.endSession(n)));
  }
}
