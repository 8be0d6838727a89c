// Runs the real `bin/gw` as a child process for end-to-end tests: writes the YAML into a temp dir,
// learns the admin, stats and readiness addresses from the start-up log line, and stops it by pid.
import { type ChildProcess, spawn } from 'node:child_process';
import { renameSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ConfigDump } from '@gw/api';
import { tempDir as testkitTempDir } from '@gw/testkit/temp-dir';

export const GW_BIN = resolve(import.meta.dirname, '../../bin/gw');

/**
 * The `config:` block every test config starts with: admin, stats and readiness on loopback port 0
 * (the OS picks; the start-up line tells which), plus `extra` lines such as `logging: {format: json}`.
 */
export function configBlock(...extra: string[]): string {
  return [
    'config:',
    '  adminAddr: 127.0.0.1:0',
    '  statsAddr: 127.0.0.1:0',
    '  readinessAddr: 127.0.0.1:0',
    ...extra.map((l) => `  ${l}`),
    '',
  ].join('\n');
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface GwProcess {
  child: ChildProcess;
  pid: number;
  dir: string;
  file: string;
  /** `http://host:port` of the admin, stats and readiness servers. */
  admin: string;
  stats: string;
  readiness: string;
  stdout: string[];
  stderr: string[];
  exited: Promise<Exit>;
  /** Replaces the config file the way editors do: write a temp file, then rename it over. */
  write(yaml: string): void;
  configDump(): Promise<ConfigDump>;
  /** Bound port of the n-th bind, from the config dump. */
  proxyPort(n?: number): Promise<number>;
  /** Polls the config dump until `until` holds (default 5 s). */
  waitForDump(until: (d: ConfigDump) => boolean, timeoutMs?: number): Promise<ConfigDump>;
  /**
   * Waits until a line of stdout satisfies `match` (default 5 s) and returns it, or undefined when
   * none did: gw's logger writes asynchronously, so a line can trail what the admin API already shows.
   */
  waitForLine(match: (line: string) => boolean, timeoutMs?: number): Promise<string | undefined>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves with how it exited. */
  stop(graceMs?: number): Promise<Exit>;
}

export interface StartOptions {
  yaml?: string;
  args?: string[];
  env?: Record<string, string>;
  timeoutMs?: number;
  /** Wait until the readiness port answers 200 (default true; xDS mode is not ready before a config). */
  waitReady?: boolean;
}

const running = new Set<GwProcess>();

/** A temp dir, removed when the test file's process exits (@gw/testkit's tempDir). */
export function tempDir(prefix = 'gw-e2e-'): string {
  return testkitTempDir(prefix);
}

/** Stops every gw this module started; call from `after`. */
export async function cleanupGw(): Promise<void> {
  await Promise.all([...running].map((g) => g.stop(3000)));
}

function lines(stream: NodeJS.ReadableStream, into: string[], onLine: (l: string) => void): void {
  let buf = '';
  stream.setEncoding('utf8');
  stream.on('data', (c: string) => {
    buf += c;
    let i = buf.indexOf('\n');
    while (i !== -1) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      into.push(line);
      onLine(line);
      i = buf.indexOf('\n');
    }
  });
  stream.on('end', () => {
    if (buf) {
      into.push(buf);
      onLine(buf);
    }
  });
}

/** The addresses from the `gw … serving …` start-up line, in text or JSON format. */
function servingAddresses(line: string): { admin: string; stats: string; readiness: string } | undefined {
  if (line.startsWith('{')) {
    try {
      const o = JSON.parse(line) as Record<string, unknown>;
      if (typeof o.msg === 'string' && / serving /.test(o.msg)) {
        return { admin: String(o.admin), stats: String(o.stats), readiness: String(o.readiness) };
      }
    } catch {}
    return undefined;
  }
  const m = / serving .* admin=(\S+) stats=(\S+) readiness=(\S+)/.exec(line);
  return m ? { admin: m[1] as string, stats: m[2] as string, readiness: m[3] as string } : undefined;
}

const origin = (addr: string) => (addr === 'off' ? '' : `http://${addr}`);

/** Starts `bin/gw -f <dir>/config.yaml` (or with `args` only when no yaml) and waits until ready. */
export async function startGw(opts: StartOptions = {}): Promise<GwProcess> {
  const dir = tempDir();
  const file = join(dir, 'config.yaml');
  if (opts.yaml !== undefined) writeFileSync(file, opts.yaml);
  const args = [...(opts.yaml !== undefined ? ['-f', file] : []), ...(opts.args ?? [])];
  const child = spawn(GW_BIN, args, {
    cwd: dir,
    env: { ...process.env, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stdout: string[] = [];
  const stderr: string[] = [];
  let found: ((a: { admin: string; stats: string; readiness: string }) => void) | undefined;
  const announced = new Promise<{ admin: string; stats: string; readiness: string }>((r) => {
    found = r;
  });
  lines(child.stdout as NodeJS.ReadableStream, stdout, (l) => {
    const a = servingAddresses(l);
    if (a) found?.(a);
  });
  lines(child.stderr as NodeJS.ReadableStream, stderr, () => {});
  // 'close' rather than 'exit': it comes once stdout and stderr are read to the end, so a test that
  // awaits the exit sees every line gw wrote.
  const exited = new Promise<Exit>((r) => child.once('close', (code, signal) => r({ code, signal })));
  let tmp = 0;

  const g: GwProcess = {
    child,
    pid: child.pid as number,
    dir,
    file,
    admin: '',
    stats: '',
    readiness: '',
    stdout,
    stderr,
    exited,
    write(yaml) {
      const t = join(dir, `.config.yaml.${tmp++}.tmp`);
      writeFileSync(t, yaml);
      renameSync(t, file);
    },
    async configDump() {
      const res = await fetch(`${g.admin}/config_dump`);
      if (res.status !== 200) throw new Error(`/config_dump answered ${res.status}`);
      // Every dump an end-to-end test reads is held to the shared wire schema.
      return ConfigDump.parse(await res.json());
    },
    async proxyPort(n = 0) {
      const d = await g.configDump();
      const b = d.binds[n];
      if (!b) throw new Error(`no bind ${n} in the config dump`);
      return b.port;
    },
    async waitForDump(until, timeoutMs = 5000) {
      const end = Date.now() + timeoutMs;
      let last: ConfigDump | undefined;
      while (Date.now() < end) {
        last = await g.configDump();
        if (until(last)) return last;
        await sleep(20);
      }
      throw new Error(
        `config dump did not reach the expected state in ${timeoutMs} ms; last version ${last?.version}, lastReloadError ${last?.lastReloadError}`,
      );
    },
    async waitForLine(match, timeoutMs = 5000) {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const line = stdout.find(match);
        if (line !== undefined || Date.now() >= end) return line;
        await sleep(20);
      }
    },
    async stop(graceMs = 10_000) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
        const e = await exited;
        clearTimeout(timer);
        running.delete(g);
        return e;
      }
      running.delete(g);
      return await exited;
    },
  };
  running.add(g);

  const timeoutMs = opts.timeoutMs ?? 15_000;
  let timer: NodeJS.Timeout | undefined;
  const addrs = await Promise.race([
    announced,
    exited.then((e) => {
      throw new Error(
        `gw exited (${e.code ?? e.signal}) before serving:\n${stderr.join('\n')}\n${stdout.join('\n')}`,
      );
    }),
    new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new Error(`gw did not announce its addresses within ${timeoutMs} ms:\n${stdout.join('\n')}`),
          ),
        timeoutMs,
      );
    }),
  ])
    .catch(async (err) => {
      await g.stop(1000);
      throw err;
    })
    .finally(() => clearTimeout(timer));
  g.admin = origin(addrs.admin);
  g.stats = origin(addrs.stats);
  g.readiness = origin(addrs.readiness);
  if (g.readiness && opts.waitReady !== false) {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const status = await fetch(`${g.readiness}/healthz/ready`).then(
        (r) => r.status,
        () => 0,
      );
      if (status === 200) break;
      if (Date.now() > end) {
        await g.stop(1000);
        throw new Error(`readiness still ${status} after ${timeoutMs} ms`);
      }
      await sleep(25);
    }
  }
  return g;
}

/** Runs gw to completion (for --validate-only and start-up failures). */
export function runGw(
  args: string[],
  opts: { cwd?: string; timeoutMs?: number } = {},
): Promise<Exit & { stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(GW_BIN, args, { cwd: opts.cwd ?? tmpdir(), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      stdout += c;
    });
    child.stderr.setEncoding('utf8').on('data', (c: string) => {
      stderr += c;
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`gw ${args.join(' ')} did not exit within ${opts.timeoutMs ?? 15_000} ms`));
    }, opts.timeoutMs ?? 15_000);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** Whether `port` can be bound on `host` right now. */
export function portIsFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen({ port, host, exclusive: true }, () => s.close(() => resolve(true)));
  });
}

/** From @gw/testkit: a loopback port free now, never one handed out before in this process. */
export { freePort } from '@gw/testkit';

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
