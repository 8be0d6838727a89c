// The cap on a bind's open connections (and, in a buffer of its own, on its requests in flight), exact
// across the workers of a replica: one shared count per bind, plus a slot per worker so that a crashed
// worker's connections are given back when the worker that replaces it starts.
import type { ProxyIR } from '../config/ir.ts';

/** Workers a replica may run (GlobalConfig.workerThreads allows up to 256). */
const SLOTS = 256;
const BYTES = (1 + SLOTS) * Int32Array.BYTES_PER_ELEMENT;

export function connectionMemoryKey(bindKey: string): string {
  return `bind-connections:${bindKey}`;
}

export function requestMemoryKey(bindKey: string): string {
  return `bind-requests:${bindKey}`;
}

/** The shared memory the main thread allocates for the connection and request counts of a config's binds. */
export function connectionMemoryOf(ir: ProxyIR): { key: string; bytes: number }[] {
  return ir.binds.flatMap((b) => [
    { key: connectionMemoryKey(b.key), bytes: BYTES },
    { key: requestMemoryKey(b.key), bytes: BYTES },
  ]);
}

export class ConnectionLimit {
  readonly memory: SharedArrayBuffer;
  /** [0]: open connections of the bind; [1 + worker]: those this worker holds. */
  readonly #counts: Int32Array;
  readonly #slot: number;

  /** Call once per worker lifetime and buffer: it takes back what a previous worker left in its slot. */
  constructor(memory: SharedArrayBuffer, worker: number) {
    this.memory = memory;
    this.#counts = new Int32Array(memory, 0, 1 + SLOTS);
    this.#slot = 1 + (worker % SLOTS);
    const stale = Atomics.exchange(this.#counts, this.#slot, 0);
    if (stale !== 0) Atomics.sub(this.#counts, 0, stale);
  }

  static memoryBytes = BYTES;

  /** Counts a new connection if the bind has room for it under `max`; false: refuse it. */
  tryOpen(max: number): boolean {
    if (Atomics.add(this.#counts, 0, 1) >= max) {
      Atomics.sub(this.#counts, 0, 1);
      return false;
    }
    Atomics.add(this.#counts, this.#slot, 1);
    return true;
  }

  close(): void {
    Atomics.sub(this.#counts, 0, 1);
    Atomics.sub(this.#counts, this.#slot, 1);
  }

  get open(): number {
    return Atomics.load(this.#counts, 0);
  }
}

/** How often a limit's refusals may be told per bind. */
const REFUSALS_TOLD_EVERY_MS = 10_000;

/**
 * A limit's refusals, told at most every 10 s: `tell` gets how many there were since it last was
 * (the first at once), so a burst is one log line.
 */
export class Refusals {
  #count = 0;
  #toldAt = -Infinity;
  readonly #tell: (refused: number) => void;

  constructor(tell: (refused: number) => void) {
    this.#tell = tell;
  }

  note(): void {
    this.#count++;
    const now = performance.now();
    if (now - this.#toldAt < REFUSALS_TOLD_EVERY_MS) return;
    this.#toldAt = now;
    this.#tell(this.#count);
    this.#count = 0;
  }
}
