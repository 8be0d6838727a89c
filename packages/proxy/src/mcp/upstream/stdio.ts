// A stdio target: a child process speaking newline-delimited JSON-RPC on stdin/stdout. Its stderr goes
// to the log line by line; it is stopped (SIGTERM, then SIGKILL) when its session, its config or the
// proxy ends, and restarted with back-off when it exits on its own.
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { asMessage, type Message } from '../jsonrpc.ts';
import { mcpLog } from '../log.ts';
import { StreamConnection } from './stream.ts';

export interface StdioSpec {
  name: string;
  cmd: string;
  args: string[];
  env: Record<string, string>;
  clearEnv: boolean;
}

/** Every live child of this thread, so none outlives the proxy. */
const children = new Set<ChildProcess>();
let exitHook = false;

function killAllOnExit(): void {
  if (exitHook) return;
  exitHook = true;
  process.once('exit', () => {
    for (const c of children) c.kill('SIGKILL');
  });
}

/** The child's environment: the proxy's (without the session key) unless clear_env, then the target's. */
function childEnv(spec: StdioSpec): Record<string, string> {
  const base: Record<string, string> = {};
  if (!spec.clearEnv) {
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== 'SESSION_KEY') base[k] = v;
  } else if (process.env.PATH) base.PATH = process.env.PATH;
  return { ...base, ...spec.env };
}

export class StdioConnection extends StreamConnection {
  readonly #spec: StdioSpec;
  #child: ChildProcess | undefined;

  constructor(spec: StdioSpec, initParams: Record<string, unknown>, initTimeoutMs: number) {
    super(spec.name, initParams, initTimeoutMs);
    this.#spec = spec;
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  protected describe(): string {
    return `${this.target} (stdio: ${this.#spec.cmd})`;
  }

  protected open(): Promise<void> {
    killAllOnExit();
    return new Promise<void>((resolve, reject) => {
      const spec = this.#spec;
      const child = spawn(spec.cmd, spec.args, { env: childEnv(spec), stdio: ['pipe', 'pipe', 'pipe'] });
      this.#child = child;
      children.add(child);
      const log = mcpLog();
      child.once('spawn', () => {
        log.debug({ target: spec.name, pid: child.pid }, 'MCP stdio target started');
        resolve();
      });
      child.once('error', (err) => {
        children.delete(child);
        reject(new Error(`cannot start ${spec.cmd}: ${err.message}`));
        if (this.#child === child) this.lost(`cannot start ${spec.cmd}: ${err.message}`);
      });
      child.once('exit', (code, signal) => {
        children.delete(child);
        if (this.#child === child) this.lost(`process exited (${signal ?? `code ${code}`})`);
      });
      child.stdin?.on('error', () => {});
      createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
        if (!line.trim()) return;
        let v: unknown;
        try {
          v = JSON.parse(line);
        } catch {
          log.debug(
            { target: spec.name, line: line.slice(0, 500) },
            'MCP stdio target wrote a line that is not JSON',
          );
          return;
        }
        const m = asMessage(v);
        if (m) this.deliver(m);
      });
      createInterface({ input: child.stderr as NodeJS.ReadableStream }).on('line', (line) => {
        log.info(
          { target: spec.name, pid: child.pid, stderr: line.slice(0, 4000) },
          'MCP stdio target stderr',
        );
      });
    });
  }

  protected write(m: Message): Promise<void> {
    const child = this.#child;
    if (!child?.stdin || child.stdin.destroyed)
      return Promise.reject(new Error('the process is not running'));
    return new Promise((resolve, reject) => {
      child.stdin?.write(`${JSON.stringify(m)}\n`, (err) => (err ? reject(err) : resolve()));
    });
  }

  protected async shut(): Promise<void> {
    const child = this.#child;
    this.#child = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      const kill = setTimeout(() => child.kill('SIGKILL'), 2000);
      child.once('exit', () => {
        clearTimeout(kill);
        resolve();
      });
      child.stdin?.end();
      child.kill('SIGTERM');
    });
  }
}
