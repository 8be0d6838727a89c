// Starts, accounts for and always stops the processes a benchmark runs (proxies, upstreams, load
// generators): CPU ticks and RSS come from /proc over each process tree, cleanup is by recorded pid.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

export interface Tracked {
  readonly name: string;
  readonly pid: number;
  readonly child: ChildProcess;
  readonly logFile: string;
  /** Resolves with the exit code (or signal name) once the process has exited. */
  readonly exited: Promise<number | string>;
  exitStatus: number | string | undefined;
}

export interface SpawnOptions {
  /** `taskset -c` CPU list; undefined runs unpinned. */
  cpus: string | undefined;
  logFile: string;
  cwd?: string;
  /** Variables added to this process's environment. */
  env?: Record<string, string>;
}

const live = new Map<number, Tracked>();
let handlersInstalled = false;

/** Spawns argv (pinned through taskset, which execs, so the pid is the program's own). */
export function spawnTracked(name: string, argv: readonly string[], opts: SpawnOptions): Tracked {
  installExitHandlers();
  const full = opts.cpus === undefined ? [...argv] : ['taskset', '-c', opts.cpus, ...argv];
  const [cmd, ...args] = full;
  if (cmd === undefined) throw new Error(`${name}: empty command`);
  const fd = openSync(opts.logFile, 'a');
  let child: ChildProcess;
  try {
    child = spawn(cmd, args, {
      stdio: ['ignore', fd, fd],
      cwd: opts.cwd ?? process.cwd(),
      ...(opts.env ? { env: { ...process.env, ...opts.env } } : {}),
    });
  } finally {
    closeSync(fd);
  }
  if (child.pid === undefined) throw new Error(`${name}: could not start ${cmd}`);
  const pid = child.pid;
  let resolveExit: (v: number | string) => void = () => {};
  const exited = new Promise<number | string>((resolve) => {
    resolveExit = resolve;
  });
  const tracked: Tracked = { name, pid, child, logFile: opts.logFile, exited, exitStatus: undefined };
  child.on('exit', (code, signal) => {
    tracked.exitStatus = code ?? signal ?? 'unknown';
    live.delete(pid);
    resolveExit(tracked.exitStatus);
  });
  child.on('error', (err) => {
    tracked.exitStatus = `spawn error: ${err.message}`;
    live.delete(pid);
    resolveExit(tracked.exitStatus);
  });
  live.set(pid, tracked);
  return tracked;
}

/** Runs a short-lived tool to completion and returns its stdout; kills it if it overruns. */
export async function runTool(
  name: string,
  argv: readonly string[],
  opts: SpawnOptions & { timeoutMs: number },
): Promise<{ stdout: string; status: number | string }> {
  const t = spawnTracked(name, argv, opts);
  const timer = setTimeout(() => killTreeSync(t.pid, 'SIGKILL'), opts.timeoutMs);
  try {
    const status = await t.exited;
    return { stdout: readFileSync(opts.logFile, 'utf8'), status };
  } finally {
    clearTimeout(timer);
  }
}

/** SIGTERM, then SIGKILL for the whole tree after the grace period (nginx workers outlive a killed master). */
export async function stopTracked(t: Tracked, graceMs = 5000): Promise<void> {
  if (t.exitStatus !== undefined) return;
  // The tree must be read before the root dies: orphans are re-parented and can no longer be found.
  const tree = processTree(t.pid);
  signalPids([t.pid], 'SIGTERM');
  // Unref'd timers: a pending grace period must not keep the harness alive after everything exited.
  const timedOut = await Promise.race([
    t.exited.then(() => false),
    sleep(graceMs, undefined, { ref: false }).then(() => true),
  ]);
  const stragglers = tree.filter((p) => (timedOut || p !== t.pid) && sameProcess(p, startTimes.get(p)));
  signalPids(stragglers, 'SIGKILL');
  await Promise.race([t.exited, sleep(1000, undefined, { ref: false })]);
}

export async function stopAll(): Promise<void> {
  await Promise.all([...live.values()].map((t) => stopTracked(t, 3000)));
}

function installExitHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  // Last resort for crashes and early exits: 'exit' handlers must be synchronous, so SIGKILL.
  process.on('exit', () => {
    for (const pid of live.keys()) killTreeSync(pid, 'SIGKILL');
  });
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(sig, () => {
      process.stderr.write(`\nbench: ${sig}, stopping ${live.size} process(es)\n`);
      void stopAll().finally(() => process.exit(130));
    });
  }
}

// Start times recorded when a tree is listed, so a later kill never hits a recycled pid.
const startTimes = new Map<number, string>();

function killTreeSync(pid: number, signal: NodeJS.Signals): void {
  signalPids(processTree(pid), signal);
}

function signalPids(pids: readonly number[], signal: NodeJS.Signals): void {
  for (const p of pids) {
    try {
      process.kill(p, signal);
    } catch {
      // Already gone.
    }
  }
}

function sameProcess(pid: number, start: string | undefined): boolean {
  return start !== undefined && readStatFields(pid)?.[19] === start;
}

/** Fields of /proc/<pid>/stat after the `(comm)`; index 0 is field 3 (state). */
function readStatFields(pid: number): string[] | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return text.slice(text.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** The pid and all its live descendants, root first. */
export function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(entry)) continue;
    const pid = Number(entry);
    const f = readStatFields(pid);
    const ppid = f === undefined ? undefined : Number(f[1]);
    if (ppid === undefined || f === undefined) continue;
    startTimes.set(pid, f[19] ?? '');
    const list = children.get(ppid);
    if (list === undefined) children.set(ppid, [pid]);
    else list.push(pid);
  }
  if (readStatFields(root) === undefined) return [];
  const out: number[] = [];
  const queue = [root];
  for (let pid = queue.shift(); pid !== undefined; pid = queue.shift()) {
    out.push(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return out;
}

let clkTck: number | undefined;

/** Kernel clock ticks per second, the unit of utime/stime in /proc/<pid>/stat. */
export function clockTicksPerSecond(): number {
  if (clkTck === undefined) {
    try {
      clkTck = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clkTck = 100;
    }
  }
  return clkTck;
}

/**
 * CPU ticks (user + system) used by a set of processes, including reaped children's (cutime/cstime),
 * so a worker that exits mid-run is still counted through its parent.
 */
export function cpuTicks(pids: readonly number[]): number {
  let total = 0;
  for (const pid of pids) {
    const f = readStatFields(pid);
    if (f === undefined) continue;
    total += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
  }
  return total;
}

/** Sum of a /proc/<pid>/status field in KiB (VmRSS, VmHWM) over the pids. */
export function statusKiB(pids: readonly number[], field: 'VmRSS' | 'VmHWM'): number {
  let total = 0;
  for (const pid of pids) {
    try {
      const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      total += Number(m?.[1] ?? 0);
    } catch {
      // Exited between listing and reading.
    }
  }
  return total;
}

/**
 * Samples the summed VmRSS of a process tree every 100 ms and keeps the peak; the tree is re-listed
 * now and then so workers started late are counted.
 */
export class RssSampler {
  peakKiB = 0;
  private tree: number[];
  private ticks = 0;
  private readonly timer: NodeJS.Timeout;
  private readonly root: number;

  constructor(root: number) {
    this.root = root;
    this.tree = processTree(root);
    this.sample();
    this.timer = setInterval(() => this.sample(), 100);
    this.timer.unref();
  }

  private sample(): void {
    if (++this.ticks % 20 === 0) this.tree = processTree(this.root);
    this.peakKiB = Math.max(this.peakKiB, statusKiB(this.tree, 'VmRSS'));
  }

  stop(): void {
    clearInterval(this.timer);
    this.sample();
  }
}

/** Tail of a process's log, for error messages. */
export function logTail(file: string, lines = 20): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}
