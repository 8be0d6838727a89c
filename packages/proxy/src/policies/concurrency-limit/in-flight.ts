// Requests in flight, counted in memory every worker of the proxy shares, so a limit holds for the
// proxy as a whole, not per worker.
//
// One counter (a limit without a key) is a single Int32 changed with compare-and-swap. Counters by
// key live in a hash table: open addressing with linear probing, each slot two 32-bit hashes of the
// key (distinct keys share a counter only if both hashes collide) and its count. A slot whose count
// drops to 0 is emptied at once, by backward-shift deletion, so the table holds only keys with
// requests in flight and never fills with old ones. The table is changed under a lock in its first
// Int32 (shared-lock.ts: taken over from a holder that is gone): each change is a few dozen loads and
// stores.
import { hashes } from '../limit-keys.ts';
import { lockShared, unlockShared } from '../shared-lock.ts';

/** Slots of a table by key: keys with requests in flight at once, per limit. */
export const KEYED_SLOTS = 8192;
const INTS_PER_SLOT = 3;
const LOCK = 0;
const FIRST = 1;

/** The bytes of a limit's counters: one Int32, or the lock and the slots of a table by key. */
export function inFlightBytes(keyed: boolean): number {
  return (keyed ? FIRST + KEYED_SLOTS * INTS_PER_SLOT : 1) * Int32Array.BYTES_PER_ELEMENT;
}

/** What a take gives back: a slot to release, no slot (over the limit), or a full table. */
export type Taken = { release: () => void } | 'over' | 'full';

/** One counter for every request (a limit without a key). */
export class InFlightCounter {
  readonly #count: Int32Array;

  constructor(buffer: SharedArrayBuffer) {
    this.#count = new Int32Array(buffer, 0, 1);
  }

  take(max: number): Taken {
    // compare-and-swap: a take that is refused never counts, even for a moment
    for (;;) {
      const n = Atomics.load(this.#count, 0);
      if (n >= max) return 'over';
      if (Atomics.compareExchange(this.#count, 0, n, n + 1) === n) break;
    }
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        Atomics.sub(this.#count, 0, 1);
      },
    };
  }

  get inFlight(): number {
    return Atomics.load(this.#count, 0);
  }
}

/** Counters by key. */
export class InFlightTable {
  readonly #a: Int32Array;
  readonly #slots: number;

  constructor(buffer: SharedArrayBuffer) {
    this.#a = new Int32Array(buffer);
    this.#slots = Math.floor((this.#a.length - FIRST) / INTS_PER_SLOT);
  }

  take(key: string, max: number): Taken {
    const [h1, h2] = hashes(key);
    this.#lock();
    let taken: boolean | 'full';
    try {
      taken = this.#increment(h1, h2, max);
    } finally {
      this.#unlock();
    }
    if (taken !== true) return taken === 'full' ? 'full' : 'over';
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.#lock();
        try {
          this.#decrement(h1, h2);
        } finally {
          this.#unlock();
        }
      },
    };
  }

  /** In flight for `key` (tests). */
  inFlight(key: string): number {
    const [h1, h2] = hashes(key);
    const i = this.#find(h1, h2);
    return i === -1 ? 0 : (this.#a[this.#at(i) + 2] as number);
  }

  /** Keys with requests in flight (tests). */
  get keys(): number {
    let n = 0;
    for (let i = 0; i < this.#slots; i++) if ((this.#a[this.#at(i) + 2] as number) > 0) n++;
    return n;
  }

  #at(slot: number): number {
    return FIRST + slot * INTS_PER_SLOT;
  }

  #home(h1: number): number {
    return (h1 >>> 0) % this.#slots;
  }

  /** The slot holding the key, or -1. */
  #find(h1: number, h2: number): number {
    const a = this.#a;
    for (let n = 0, i = this.#home(h1); n < this.#slots; n++, i = (i + 1) % this.#slots) {
      const at = this.#at(i);
      if (a[at + 2] === 0) return -1;
      if (a[at] === h1 && a[at + 1] === h2) return i;
    }
    return -1;
  }

  #increment(h1: number, h2: number, max: number): boolean | 'full' {
    const a = this.#a;
    for (let n = 0, i = this.#home(h1); n < this.#slots; n++, i = (i + 1) % this.#slots) {
      const at = this.#at(i);
      const count = a[at + 2] as number;
      if (count === 0) {
        if (max < 1) return false;
        a[at] = h1;
        a[at + 1] = h2;
        a[at + 2] = 1;
        return true;
      }
      if (a[at] === h1 && a[at + 1] === h2) {
        if (count >= max) return false;
        a[at + 2] = count + 1;
        return true;
      }
    }
    return 'full';
  }

  #decrement(h1: number, h2: number): void {
    const a = this.#a;
    let i = this.#find(h1, h2);
    if (i === -1) return;
    const at = this.#at(i);
    const count = (a[at + 2] as number) - 1;
    a[at + 2] = count;
    if (count > 0) return;
    // Backward-shift deletion: later entries of the same run move up into the hole when the hole lies
    // on their way from their home slot, so that every key is still found before an empty slot.
    for (let j = (i + 1) % this.#slots; ; j = (j + 1) % this.#slots) {
      const bt = this.#at(j);
      if (a[bt + 2] === 0) break;
      const home = this.#home(a[bt] as number);
      const between = i <= j ? i < home && home <= j : i < home || home <= j;
      if (between) continue;
      const hole = this.#at(i);
      a[hole] = a[bt] as number;
      a[hole + 1] = a[bt + 1] as number;
      a[hole + 2] = a[bt + 2] as number;
      a[bt + 2] = 0;
      i = j;
    }
    a[this.#at(i) + 2] = 0;
  }

  #lock(): void {
    lockShared(this.#a, LOCK);
  }

  #unlock(): void {
    // a lock taken over from this thread is no longer its to release
    unlockShared(this.#a, LOCK);
  }
}
