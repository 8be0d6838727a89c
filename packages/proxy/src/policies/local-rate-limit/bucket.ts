// A token bucket in shared memory, so every worker thread of a proxy draws from the same bucket and
// the limit is exact per replica. It fills as Envoy's and agentgateway's do, `tokensPerFill` at a
// time once every `fillInterval` (the spec's window: a limit of 10 a minute is 10 more each minute),
// not continuously: an emptied bucket takes nothing until its next fill. A tiny spin lock guards the two fields (shared-lock.ts, taken over
// from a thread that died holding it); the critical section is a few arithmetic operations, so
// contention between a handful of threads is negligible.
import { lockShared, unlockShared } from '../shared-lock.ts';

const LOCK = 0;
/** Int32 slots: [lock]; Float64 slots (after 8 bytes): [tokens, lastFillMs]. */
export const BUCKET_BYTES = 8 + 16;

/** How a bucket fills: `tokens` at once, every `everyMs`. */
export interface Fill {
  tokens: number;
  everyMs: number;
}

/**
 * A bucket holding `tokens` after its fill at `last`, filled to `now`: the fills due since, whole,
 * and the time of the latest of them (so the next is a whole interval after it).
 */
export function filled(
  capacity: number,
  fill: Fill,
  tokens: number,
  last: number,
  now: number,
): [number, number] {
  if (fill.tokens <= 0 || now - last < fill.everyMs) return [tokens, last];
  const fills = Math.floor((now - last) / fill.everyMs);
  return [Math.min(capacity, tokens + fills * fill.tokens), last + fills * fill.everyMs];
}

export class SharedBucket {
  readonly capacity: number;
  readonly fill: Fill;
  readonly #lock: Int32Array;
  readonly #state: Float64Array;

  /** `memory` must be BUCKET_BYTES long and zeroed for a new bucket; it is full when first used. */
  constructor(memory: SharedArrayBuffer, capacity: number, fill: Fill) {
    this.capacity = capacity;
    this.fill = fill;
    this.#lock = new Int32Array(memory, 0, 1);
    this.#state = new Float64Array(memory, 8, 2);
  }

  #withLock<T>(fn: (s: Float64Array, now: number) => T): T {
    // another thread holds it for a few instructions: spinning beats a context switch
    lockShared(this.#lock, LOCK);
    try {
      const s = this.#state;
      const now = Date.now();
      if (s[1] === 0) {
        s[0] = this.capacity;
        s[1] = now;
      } else {
        const [tokens, last] = filled(this.capacity, this.fill, s[0] as number, s[1] as number, now);
        s[0] = tokens;
        s[1] = last;
      }
      return fn(s, now);
    } finally {
      unlockShared(this.#lock, LOCK);
    }
  }

  /** Takes `n` tokens if at least one is left (the request that crosses the limit still passes). */
  take(n: number): { ok: boolean; remaining: number; resetSeconds: number } {
    return this.#withLock((s, now) => {
      const tokens = s[0] as number;
      const last = s[1] as number;
      if (tokens < 1) return { ok: false, remaining: 0, resetSeconds: this.#reset(tokens, last, now) };
      s[0] = tokens - n;
      return {
        ok: true,
        remaining: Math.max(0, Math.floor(tokens - n)),
        resetSeconds: this.#reset(tokens - n, last, now),
      };
    });
  }

  /** Whether a token is left, without taking one (token budgets are debited after the response). */
  peek(): { ok: boolean; remaining: number; resetSeconds: number } {
    return this.#withLock((s, now) => {
      const tokens = s[0] as number;
      return {
        ok: tokens >= 1,
        remaining: Math.max(0, Math.floor(tokens)),
        resetSeconds: this.#reset(tokens, s[1] as number, now),
      };
    });
  }

  debit(n: number): void {
    this.#withLock((s) => {
      s[0] = (s[0] as number) - n;
    });
  }

  /** Seconds until the bucket takes a request again (when it would not), else until it is full. */
  #reset(tokens: number, last: number, now: number): number {
    return resetSeconds(this.capacity, this.fill, tokens, last, now);
  }
}

/**
 * x-ratelimit-reset of a bucket holding `tokens` since its fill at `last`: when it holds less than
 * one (the next request would be refused), the seconds until the fill that gives it one, which is
 * what a refused client waits for; else the seconds until the fill that makes it full. A bucket that
 * never fills (tokensPerFill 0) and is not full reports -1, which the headers leave out.
 */
export function resetSeconds(
  capacity: number,
  fill: Fill,
  tokens: number,
  last: number,
  now: number,
): number {
  if (tokens >= capacity) return 0;
  if (fill.tokens <= 0) return -1;
  const until = tokens < 1 ? 1 : capacity;
  const fills = Math.ceil((until - tokens) / fill.tokens);
  return Math.max(0, Math.ceil((last + fills * fill.everyMs - now) / 1000));
}

/**
 * Token buckets by key (localRateLimit's `key`: `jwt.sub`, one bucket per user), in memory every
 * worker shares, so each key's limit is exact per replica. The table is set-associative: a key's two
 * 32-bit hashes pick one set of KEYED_WAYS slots (distinct keys share a bucket only if both hashes
 * collide), and a key not in its set takes an empty slot there, else one whose bucket has filled to
 * full (forgetting it loses nothing: a new bucket starts full), else the one least recently used, whose
 * key starts afresh. So at most KEYED_SETS × KEYED_WAYS keys are remembered per limit, the busiest
 * ones. One spin lock guards the table, as SharedBucket's guards its bucket.
 */
export const KEYED_SETS = 512;
export const KEYED_WAYS = 8;
/**
 * Bytes of a slot: the key's two hashes (Int32), then tokens, the last fill and the last use
 * (Float64; a slot is empty while its last fill is 0).
 */
const SLOT_BYTES = 32;
/** The lock (padded to 8 bytes), then the slots. */
export const KEYED_BUCKET_BYTES = 8 + KEYED_SETS * KEYED_WAYS * SLOT_BYTES;

export class KeyedBuckets {
  readonly capacity: number;
  readonly fill: Fill;
  readonly #lock: Int32Array;
  readonly #ints: Int32Array;
  readonly #floats: Float64Array;

  /** `memory` must be KEYED_BUCKET_BYTES long and zeroed for a new table. */
  constructor(memory: SharedArrayBuffer, capacity: number, fill: Fill) {
    this.capacity = capacity;
    this.fill = fill;
    this.#lock = new Int32Array(memory, 0, 1);
    this.#ints = new Int32Array(memory);
    this.#floats = new Float64Array(memory);
  }

  /** Takes `n` tokens from the key's bucket if at least one is left. */
  take(h: [number, number], n: number): { ok: boolean; remaining: number; resetSeconds: number } {
    return this.#withBucket(h, (tokens, set, reset) => {
      if (tokens < 1) return { ok: false, remaining: 0, resetSeconds: reset(tokens) };
      set(tokens - n);
      return {
        ok: true,
        remaining: Math.max(0, Math.floor(tokens - n)),
        resetSeconds: reset(tokens - n),
      };
    });
  }

  /** Whether the key's bucket has a token left, without taking one. */
  peek(h: [number, number]): { ok: boolean; remaining: number; resetSeconds: number } {
    return this.#withBucket(h, (tokens, _set, reset) => ({
      ok: tokens >= 1,
      remaining: Math.max(0, Math.floor(tokens)),
      resetSeconds: reset(tokens),
    }));
  }

  debit(h: [number, number], n: number): void {
    this.#withBucket(h, (tokens, set) => set(tokens - n));
  }

  /** Keys remembered now (tests). */
  get keys(): number {
    let n = 0;
    for (let i = 0; i < KEYED_SETS * KEYED_WAYS; i++)
      if ((this.#floats[this.#at(i) / 8 + 2] as number) !== 0) n++;
    return n;
  }

  /** Byte offset of slot `i`. */
  #at(i: number): number {
    return 8 + i * SLOT_BYTES;
  }

  /**
   * Runs `fn` on the key's bucket, filled to now, under the lock: the slot holding the key, or the
   * one it takes over (see the class comment). `set` stores the bucket's new token count; `reset`
   * is resetSeconds for a count of this bucket.
   */
  #withBucket<T>(
    [h1, h2]: [number, number],
    fn: (tokens: number, set: (t: number) => void, reset: (t: number) => number) => T,
  ): T {
    // another thread holds it for a few dozen instructions (taken over if that thread is gone)
    lockShared(this.#lock, 0);
    try {
      const now = Date.now();
      const ints = this.#ints;
      const f = this.#floats;
      const first = keyedSet(h1) * KEYED_WAYS;
      let slot = -1;
      let free = -1;
      let full = -1;
      let oldest = -1;
      for (let w = 0; w < KEYED_WAYS; w++) {
        const i = first + w;
        const at = this.#at(i);
        const last = f[at / 8 + 2] as number;
        if (last === 0) {
          if (free === -1) free = i;
          continue;
        }
        if (ints[at / 4] === h1 && ints[at / 4 + 1] === h2) {
          slot = i;
          break;
        }
        if (
          full === -1 &&
          filled(this.capacity, this.fill, f[at / 8 + 1] as number, last, now)[0] >= this.capacity
        )
          full = i;
        if (oldest === -1 || (f[at / 8 + 3] as number) < (f[this.#at(oldest) / 8 + 3] as number)) oldest = i;
      }
      let tokens: number;
      let last: number;
      if (slot === -1) {
        slot = free !== -1 ? free : full !== -1 ? full : oldest;
        const at = this.#at(slot);
        ints[at / 4] = h1;
        ints[at / 4 + 1] = h2;
        tokens = this.capacity;
        last = now;
      } else {
        const at = this.#at(slot);
        [tokens, last] = filled(
          this.capacity,
          this.fill,
          f[at / 8 + 1] as number,
          f[at / 8 + 2] as number,
          now,
        );
      }
      const base = this.#at(slot) / 8;
      f[base + 1] = tokens;
      f[base + 2] = last;
      f[base + 3] = now;
      return fn(
        tokens,
        (t) => {
          f[base + 1] = t;
        },
        (t) => resetSeconds(this.capacity, this.fill, t, last, now),
      );
    } finally {
      unlockShared(this.#lock, 0);
    }
  }
}

/** The set a key's first hash picks. */
export function keyedSet(h1: number): number {
  return mix(h1) % KEYED_SETS;
}

/**
 * murmur3's finaliser: every bit of the hash reaches the low bits the set index is taken from (an
 * FNV-1a hash's low bits follow only the low bits of each character).
 */
function mix(h: number): number {
  let x = h >>> 0;
  x ^= x >>> 16;
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  x ^= x >>> 16;
  return x >>> 0;
}
