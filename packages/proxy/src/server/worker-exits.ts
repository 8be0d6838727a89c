// Data-plane workers that exited, as their siblings learn of them. Something a worker holds for the
// others (an MCP session's stdio process or legacy SSE stream, at its home) dies with it; a sibling
// that knows the worker is gone answers at once (a 404 that makes an MCP client start a new session)
// instead of waiting for a reply that never comes. The supervisor announces each exit on a
// BroadcastChannel and gives a worker it starts the exits before it; thread ids are never reused
// within a process, so a remembered id stays true.
import { BroadcastChannel } from 'node:worker_threads';

const CHANNEL = 'gw-worker-exits';
/** Ids remembered: restarts are rare, and a bound keeps a crash loop from growing the set forever. */
const KEPT = 1024;

const exited = new Set<number>();
let channel: BroadcastChannel | undefined;

function remember(id: number): void {
  if (exited.has(id)) return;
  if (exited.size >= KEPT) exited.delete(exited.values().next().value as number);
  exited.add(id);
}

/** In a worker: remembers `before` (exits before it started) and hears of later ones. */
export function watchWorkerExits(before: readonly number[] = []): void {
  for (const id of before) remember(id);
  if (channel) return;
  channel = new BroadcastChannel(CHANNEL);
  channel.onmessage = (e) => {
    const id = (e as { data: unknown }).data;
    if (typeof id === 'number') remember(id);
  };
  // it must not keep a worker alive on its own
  channel.unref();
}

/** In the supervisor: tells the workers that the worker of thread `id` exited. */
export function announceWorkerExit(id: number): void {
  remember(id);
  if (!channel) {
    channel = new BroadcastChannel(CHANNEL);
    channel.unref();
  }
  channel.postMessage(id);
}

/** The exits announced so far, for a worker about to start. */
export function workerExits(): number[] {
  return [...exited];
}

/** Whether the worker of thread `id` is known to have exited. */
export function workerExited(id: number): boolean {
  return exited.has(id);
}
