// Sessions a client ended with DELETE. A session id is sealed state that any worker (or replica) can
// open, so ending one is remembered: each worker keeps the nonces of the sessions ended lately, and
// a worker that ends one tells the others over a BroadcastChannel, so a request with that id is then
// a 404 on every worker of the process (the MCP transport's answer for a session that is gone).
// Other replicas are not told: there the session lasts until its sessionTtl.
import { BroadcastChannel } from 'node:worker_threads';

/** Nonces remembered per worker; the oldest go first (sessionTtl ends them anyway). */
const KEPT = 10_000;
const CHANNEL = 'gw-mcp-ended-sessions';

const ended = new Set<string>();
let channel: BroadcastChannel | undefined;

function remember(nonce: string): void {
  if (ended.has(nonce)) return;
  if (ended.size >= KEPT) ended.delete(ended.values().next().value as string);
  ended.add(nonce);
}

/** Opened on first use: a process without MCP sessions holds no channel. */
function open(): BroadcastChannel {
  if (channel) return channel;
  const c = new BroadcastChannel(CHANNEL);
  c.onmessage = (e) => {
    const nonce = (e as { data: unknown }).data;
    if (typeof nonce === 'string') remember(nonce);
  };
  // it must not keep a worker (or the process) alive on its own
  c.unref();
  channel = c;
  return c;
}

/** Marks the session of `nonce` ended here and on the process's other workers. */
export function endSession(nonce: string): void {
  remember(nonce);
  open().postMessage(nonce);
}

/** Whether the session of `nonce` was ended by DELETE (here or on another worker). */
export function sessionEnded(nonce: string): boolean {
  // the first session seen opens the channel, so that ends on other workers reach this one
  if (!channel) open();
  return ended.has(nonce);
}
