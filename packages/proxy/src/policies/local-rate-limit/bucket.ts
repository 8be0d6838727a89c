// A token bucket in shared memory, so every worker thread of a proxy draws from the same bucket and
// the limit is exact per replica. A tiny spin lock guards the two fields; the critical section is a
// few arithmetic operations, so contention between a handful of threads is negligible.

const LOCK = 0;
/** Int32 slots: [lock]; Float64 slots (after 8 bytes): [tokens, lastRefillMs]. */
export const BUCKET_BYTES = 8 + 16;

export class SharedBucket {
  readonly capacity: number;
  readonly refillPerMs: number;
  readonly #lock: Int32Array;
  readonly #state: Float64Array;

  /** `memory` must be BUCKET_BYTES long and zeroed for a new bucket; it is full when first used. */
  constructor(memory: SharedArrayBuffer, capacity: number, refillPerMs: number) {
    this.capacity = capacity;
    this.refillPerMs = refillPerMs;
    this.#lock = new Int32Array(memory, 0, 1);
    this.#state = new Float64Array(memory, 8, 2);
  }

  #withLock<T>(fn: (s: Float64Array, now: number) => T): T {
    while (Atomics.compareExchange(this.#lock, LOCK, 0, 1) !== 0) {
      // Another thread holds it for a few instructions; spinning beats a context switch.
    }
    try {
      const s = this.#state;
      const now = Date.now();
      if (s[1] === 0) {
        s[0] = this.capacity;
        s[1] = now;
      } else {
        const elapsed = now - (s[1] as number);
        if (elapsed > 0) {
          s[0] = Math.min(this.capacity, (s[0] as number) + elapsed * this.refillPerMs);
          s[1] = now;
        }
      }
      return fn(s, now);
    } finally {
      Atomics.store(this.#lock, LOCK, 0);
    }
  }

  /** Takes `n` tokens if at least one is left (the request that crosses the limit still passes). */
  take(n: number): { ok: boolean; remaining: number; resetSeconds: number } {
    return this.#withLock((s) => {
      const tokens = s[0] as number;
      if (tokens < 1) return { ok: false, remaining: 0, resetSeconds: this.#reset(tokens) };
      s[0] = tokens - n;
      return {
        ok: true,
        remaining: Math.max(0, Math.floor(tokens - n)),
        resetSeconds: this.#reset(tokens - n),
      };
    });
  }

  /** Whether a token is left, without taking one (token budgets are debited after the response). */
  peek(): { ok: boolean; remaining: number; resetSeconds: number } {
    return this.#withLock((s) => {
      const tokens = s[0] as number;
      return {
        ok: tokens >= 1,
        remaining: Math.max(0, Math.floor(tokens)),
        resetSeconds: this.#reset(tokens),
      };
    });
  }

  debit(n: number): void {
    this.#withLock((s) => {
      s[0] = (s[0] as number) - n;
    });
  }

  /** Seconds until the bucket is full again. */
  #reset(tokens: number): number {
    return Math.max(0, Math.ceil((this.capacity - tokens) / this.refillPerMs / 1000));
  }
}
