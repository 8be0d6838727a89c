// Runs `bin/gwctl` as a child process for end-to-end tests: to completion with a bound wait, or in the
// background (watch mode) with its output collected line by line and a way to wait for a line.
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import type { Exit } from './gw-process.ts';

export const GWCTL_BIN = join(import.meta.dirname, '..', '..', 'bin', 'gwctl');

export interface GwctlResult extends Exit {
  stdout: string;
  stderr: string;
}

export interface GwctlChild {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  /** Resolves when stderr holds a line matching `re`; rejects after `timeoutMs` or if gwctl exits. */
  waitForStderr(re: RegExp, timeoutMs?: number): Promise<void>;
  /** Resolves with how gwctl ended; kills it (by pid) after `timeoutMs`. */
  result(timeoutMs?: number): Promise<GwctlResult>;
  kill(): void;
}

const started = new Set<ChildProcess>();

export function startGwctl(args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): GwctlChild {
  const child = spawn(GWCTL_BIN, args, {
    ...(opts.cwd ? { cwd: opts.cwd } : {}),
    ...(opts.env ? { env: opts.env } : {}),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.add(child);
  let out = '';
  let err = '';
  child.stdout?.setEncoding('utf8').on('data', (c: string) => {
    out += c;
  });
  child.stderr?.setEncoding('utf8').on('data', (c: string) => {
    err += c;
  });
  const closed = new Promise<Exit>((resolve) =>
    child.on('close', (code, signal) => {
      started.delete(child);
      resolve({ code, signal });
    }),
  );
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    async waitForStderr(re, timeoutMs = 15_000) {
      const end = Date.now() + timeoutMs;
      let exited = false;
      closed.then(() => {
        exited = true;
      });
      while (!re.test(err)) {
        if (exited) throw new Error(`gwctl exited before printing ${re}:\n${err}`);
        if (Date.now() > end) throw new Error(`gwctl did not print ${re} within ${timeoutMs} ms:\n${err}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    async result(timeoutMs = 30_000) {
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      const e = await closed;
      clearTimeout(timer);
      return { ...e, stdout: out, stderr: err };
    },
    kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}

/** Runs gwctl to completion (killed after `timeoutMs`). */
export function runGwctl(
  args: string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<GwctlResult> {
  return startGwctl(args, opts).result(opts.timeoutMs);
}

/** Kills every gwctl this module started that is still running; call from `after`. */
export function cleanupGwctl(): void {
  for (const c of started) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  started.clear();
}
