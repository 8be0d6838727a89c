// The real global rate limit service for tests: Debian's redis-server and envoyproxy/ratelimit (built from
// its Go module by hack/ratelimit/build.sh), both on loopback, with a config the test writes.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { freePort } from './http-client.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '../../..');

export interface RateLimitServiceOptions {
  /** The service's config file (YAML): `domain`, `descriptors` with `rate_limit`s. */
  config: string;
  /**
   * Names of the headers the service adds to every answer (LIMIT_RESPONSE_HEADERS_ENABLED);
   * `false` turns them off. Default: x-ratelimit-limit, x-ratelimit-remaining, x-ratelimit-reset.
   */
  headers?: { limit: string; remaining: string; reset: string } | false;
  /**
   * gRPC over TLS (GRPC_SERVER_USE_TLS) with this certificate and key (files); with `clientCa`, a
   * client certificate signed by it is required (GRPC_CLIENT_TLS_CACERT).
   */
  tls?: { certFile: string; keyFile: string; clientCaFile?: string };
}

export interface RateLimitService {
  /** The gRPC address (`127.0.0.1:port`) for `remoteRateLimit.host`. */
  host: string;
  /** What both processes printed, for failure messages. */
  logs(): string;
  /** Freezes the ratelimit process (SIGSTOP): connections stay open, answers stop — a hung service. */
  pause(): Promise<void>;
  resume(): void;
  close(): Promise<void>;
}

/**
 * The ratelimit binary's path, with Debian's redis-server installed and the binary built when missing
 * (hack/ratelimit/setup.sh; `make unit` runs it first, so a test normally finds both in place).
 */
export function rateLimitBinary(): string {
  return execFileSync(join(root, 'hack/ratelimit/setup.sh'), {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  }).trim();
}

interface Proc {
  child: ChildProcess;
  out: string[];
  exited: Promise<void>;
}

function run(cmd: string, args: string[], env: Record<string, string>, cwd: string): Proc {
  const child = spawn(cmd, args, { cwd, env: { PATH: process.env.PATH ?? '', ...env }, stdio: 'pipe' });
  const out: string[] = [];
  const keep = (c: Buffer) => {
    out.push(c.toString());
    if (out.length > 400) out.splice(0, out.length - 400);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  // A test run that ends without close() (a crash, --test-force-exit) must not leave servers behind.
  const reap = () => child.kill('SIGKILL');
  process.once('exit', reap);
  const exited = new Promise<void>((r) =>
    child.once('exit', () => {
      process.off('exit', reap);
      r();
    }),
  );
  return { child, out, exited };
}

async function stop(p: Proc): Promise<void> {
  if (p.child.exitCode !== null || p.child.signalCode !== null) return;
  // A paused process handles SIGTERM only once it runs again.
  p.child.kill('SIGCONT');
  p.child.kill('SIGTERM');
  const t = setTimeout(() => p.child.kill('SIGKILL'), 3_000);
  await p.exited;
  clearTimeout(t);
}

/** SIGSTOP takes effect asynchronously, thread by thread: wait until the kernel reports every one stopped. */
async function freeze(p: Proc): Promise<void> {
  p.child.kill('SIGSTOP');
  const tasks = `/proc/${p.child.pid}/task`;
  // The state follows the parenthesised command name: `tid (comm) T ...`.
  const stopped = (tid: string) =>
    /^[Tt]/.test(readFileSync(`${tasks}/${tid}/stat`, 'utf8').replace(/^.*\) /s, ''));
  for (let i = 0; i < 200; i++) {
    if (readdirSync(tasks).every(stopped)) return;
    await sleep(5);
  }
  throw new Error('ratelimit did not stop');
}

/** Polls `probe` until it holds, the process exits, or the deadline passes. */
async function waitFor(p: Proc, what: string, probe: () => Promise<boolean>, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  let exited = false;
  void p.exited.then(() => {
    exited = true;
  });
  while (Date.now() < end) {
    if (exited) throw new Error(`${what} exited:\n${p.out.join('')}`);
    if (await probe().catch(() => false)) return;
    await sleep(50);
  }
  throw new Error(`${what} not ready after ${ms}ms:\n${p.out.join('')}`);
}

function redisPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.setTimeout(500, () => s.destroy());
    s.once('connect', () => s.write('PING\r\n'));
    s.once('data', (d) => {
      resolve(d.toString().startsWith('+PONG'));
      s.destroy();
    });
    s.once('error', () => resolve(false));
    s.once('close', () => resolve(false));
  });
}

async function healthy(port: number): Promise<boolean> {
  const r = await fetch(`http://127.0.0.1:${port}/healthcheck`, { signal: AbortSignal.timeout(1_000) });
  await r.arrayBuffer();
  return r.status === 200;
}

async function startOnce(bin: string, dir: string, opts: RateLimitServiceOptions): Promise<RateLimitService> {
  const [redisPort, grpcPort, httpPort, debugPort] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  // No persistence: counters live only as long as the test.
  const redis = run(
    'redis-server',
    ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
    {},
    dir,
  );
  const procs = [redis];
  try {
    await waitFor(redis, 'redis-server', () => redisPing(redisPort));
    const h = opts.headers ?? {
      limit: 'x-ratelimit-limit',
      remaining: 'x-ratelimit-remaining',
      reset: 'x-ratelimit-reset',
    };
    const rl = run(
      bin,
      [],
      {
        HOST: '127.0.0.1',
        PORT: String(httpPort),
        GRPC_HOST: '127.0.0.1',
        GRPC_PORT: String(grpcPort),
        DEBUG_HOST: '127.0.0.1',
        DEBUG_PORT: String(debugPort),
        USE_STATSD: 'false',
        LOG_LEVEL: 'warn',
        BACKEND_TYPE: 'redis',
        REDIS_SOCKET_TYPE: 'tcp',
        REDIS_URL: `127.0.0.1:${redisPort}`,
        RUNTIME_ROOT: dir,
        RUNTIME_SUBDIRECTORY: 'ratelimit',
        RUNTIME_WATCH_ROOT: 'false',
        // Healthy only once the config is loaded, so the first request already sees the limits.
        HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED: 'true',
        ...(opts.tls
          ? {
              GRPC_SERVER_USE_TLS: 'true',
              GRPC_SERVER_TLS_CERT: opts.tls.certFile,
              GRPC_SERVER_TLS_KEY: opts.tls.keyFile,
              ...(opts.tls.clientCaFile ? { GRPC_CLIENT_TLS_CACERT: opts.tls.clientCaFile } : {}),
            }
          : {}),
        ...(h
          ? {
              LIMIT_RESPONSE_HEADERS_ENABLED: 'true',
              LIMIT_LIMIT_HEADER: h.limit,
              LIMIT_REMAINING_HEADER: h.remaining,
              LIMIT_RESET_HEADER: h.reset,
            }
          : {}),
      },
      dir,
    );
    procs.push(rl);
    await waitFor(rl, 'ratelimit', () => healthy(httpPort));
    return {
      host: `127.0.0.1:${grpcPort}`,
      logs: () => procs.map((p) => p.out.join('')).join('\n'),
      pause: () => freeze(rl),
      resume: () => rl.child.kill('SIGCONT'),
      close: async () => {
        for (const p of procs.reverse()) await stop(p);
      },
    };
  } catch (err) {
    for (const p of procs.reverse()) await stop(p);
    throw err;
  }
}

/** Starts redis-server and the ratelimit service on free loopback ports; `close()` stops both and cleans up. */
export async function startRateLimitService(opts: RateLimitServiceOptions): Promise<RateLimitService> {
  const bin = rateLimitBinary();
  const dir = mkdtempSync(join(tmpdir(), 'gw-ratelimit-'));
  const configDir = join(dir, 'ratelimit', 'config');
  mkdirSync(configDir, { recursive: true });
  writeFileSync(join(configDir, 'config.yaml'), opts.config);
  // A port picked as free may be taken before the server binds it: try again with new ones.
  let last: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const svc = await startOnce(bin, dir, opts);
      return {
        ...svc,
        close: async () => {
          await svc.close();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    } catch (err) {
      last = err;
    }
  }
  rmSync(dir, { recursive: true, force: true });
  throw last;
}

/**
 * The service counts in fixed windows aligned to the clock's minutes: a sequence that must stay in one
 * window starts only when at least `needMs` of the current one is left.
 */
export async function sameRateLimitWindow(needMs = 5_000): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < needMs) await new Promise((r) => setTimeout(r, left + 100));
}
