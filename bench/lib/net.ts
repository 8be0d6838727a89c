// Loopback helpers: free ports for each run's processes and readiness polling that fails fast when the
// process being waited on has already died.
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { logTail, type Tracked } from './procs.ts';

/** Ports the kernel hands out for 127.0.0.1:0; all held at once so they are distinct. */
export async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
          const s = createServer();
          s.once('error', reject);
          s.listen(0, '127.0.0.1', () => resolve(s));
        }),
    ),
  );
  const ports = servers.map((s) => {
    const addr = s.address();
    if (addr === null || typeof addr === 'string') throw new Error('no port assigned');
    return addr.port;
  });
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  return ports;
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
