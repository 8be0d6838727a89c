// Loopback helpers: free ports for each run's processes and readiness polling that fails fast when the
// process being waited on has already died.

import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '@gw/testkit/http-client';
import { logTail, type Tracked } from './procs.ts';

/**
 * Distinct loopback ports for a run's processes, from testkit's freePort: below the kernel's ephemeral
 * range, so no other program's listen(0) or connection takes one in the seconds before the process
 * that is to bind it has started.
 */
export async function freePorts(count: number): Promise<number[]> {
  return Promise.all(Array.from({ length: count }, () => freePort()));
}

export async function httpGet(url: string, timeoutMs = 2000): Promise<{ status: number; body: string }> {
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  return { status: res.status, body: await res.text() };
}

/** Polls url until it answers with `status` (any status when undefined) or the process exits. */
export async function waitForHttp(
  url: string,
  proc: Tracked,
  opts: { timeoutMs: number; status?: number },
): Promise<void> {
  const deadline = Date.now() + opts.timeoutMs;
  let last = 'no answer';
  while (Date.now() < deadline) {
    if (proc.exitStatus !== undefined) {
      throw new Error(
        `${proc.name} exited (${proc.exitStatus}) before ready; log ${proc.logFile}:\n${logTail(proc.logFile)}`,
      );
    }
    try {
      const res = await httpGet(url, 500);
      if (opts.status === undefined || res.status === opts.status) return;
      last = `status ${res.status}`;
    } catch (err) {
      last = (err as Error).message;
    }
    await sleep(50);
  }
  throw new Error(
    `${proc.name} not ready at ${url} after ${opts.timeoutMs} ms (${last}); log ${proc.logFile}:\n${logTail(proc.logFile)}`,
  );
}
