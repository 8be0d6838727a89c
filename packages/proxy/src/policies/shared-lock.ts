// A lock in memory every worker thread shares (one Int32), for the tables and buckets policies keep
// there (rate limits, concurrency limits). It holds its holder's thread id + 1. A thread stopped
// while holding it (a worker terminated mid-change, one out of heap) would leave it held for ever, so
// a waiter that has seen the same holder hold it for LOCK_PATIENCE_MS takes it over, by
// compare-and-swap on that holder (one waiter wins); a holder releases only a lock still its own.
import { threadId } from 'node:worker_threads';

/** Far longer than any change takes, even on a starved CPU: only a holder that is gone waits so long. */
const LOCK_PATIENCE_MS = 500;
/** This thread's mark in a lock it holds. */
const ME = threadId + 1;

/** Takes the lock at `a[i]`, spinning while another thread holds it. */
export function lockShared(a: Int32Array, i: number): void {
  let holder = Atomics.compareExchange(a, i, 0, ME);
  if (holder === 0) return;
  let since = performance.now();
  for (;;) {
    for (let spin = 0; spin < 1000; spin++) {
      const now = Atomics.compareExchange(a, i, 0, ME);
      if (now === 0) return;
      if (now !== holder) {
        // another holder: its own time starts now
        holder = now;
        since = performance.now();
      }
    }
    // the same holder for far longer than a change takes: it is gone; one waiter takes it over
    if (performance.now() - since > LOCK_PATIENCE_MS && Atomics.compareExchange(a, i, holder, ME) === holder)
      return;
  }
}

/** Releases the lock at `a[i]`, unless another thread took it over meanwhile. */
export function unlockShared(a: Int32Array, i: number): void {
  Atomics.compareExchange(a, i, ME, 0);
}
