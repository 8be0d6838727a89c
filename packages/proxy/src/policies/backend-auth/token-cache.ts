// Tokens a backendAuth form fetched (from a cloud SDK or a token endpoint), kept until shortly before
// they expire. A token past 80% of its life is still served while a new one is fetched in the
// background; one in its last 10% (at most 30s) is not served: the request waits for a new one. One
// fetch per key at a time, however many requests ask. Oldest entries go first past maxEntries.

export interface Token {
  value: string;
  /** Date.now() at which it expires. */
  expiresAt: number;
}

interface Entry {
  token: Token;
  obtainedAt: number;
}

const MAX_SKEW_MS = 30_000;

export class TokenCache {
  readonly #entries = new Map<string, Entry>();
  readonly #inflight = new Map<string, Promise<Token>>();
  readonly #maxEntries: number;

  constructor(maxEntries: number) {
    this.#maxEntries = maxEntries;
  }

  /** A usable token for `key`: cached, or from `fetch` (one at a time per key). */
  async get(key: string, fetch: () => Promise<Token>): Promise<Token> {
    const now = Date.now();
    const e = this.#entries.get(key);
    if (e) {
      const life = e.token.expiresAt - e.obtainedAt;
      const staleAt = e.token.expiresAt - Math.min(MAX_SKEW_MS, life / 10);
      if (now < staleAt) {
        if (now >= e.obtainedAt + life * 0.8 && !this.#inflight.has(key))
          // refreshed in the background; a failure keeps the current token until it goes stale
          this.#fetch(key, fetch).catch(() => {});
        return e.token;
      }
      this.#entries.delete(key);
    }
    return this.#fetch(key, fetch);
  }

  #fetch(key: string, fetch: () => Promise<Token>): Promise<Token> {
    const running = this.#inflight.get(key);
    if (running) return running;
    const obtainedAt = Date.now();
    const p = fetch()
      .then((token) => {
        if (this.#maxEntries > 0) {
          this.#entries.delete(key);
          this.#entries.set(key, { token, obtainedAt });
          while (this.#entries.size > this.#maxEntries) {
            const oldest = this.#entries.keys().next().value as string;
            this.#entries.delete(oldest);
          }
        }
        return token;
      })
      .finally(() => this.#inflight.delete(key));
    this.#inflight.set(key, p);
    return p;
  }
}
