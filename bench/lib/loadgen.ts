// Drives the load generators: wrk for closed-loop saturation throughput, h2load --rps for fixed-rate
// latency, both parsed from machine-readable output rather than their human summaries.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LoadSpec } from '../scenarios/types.ts';
import { runTool } from './procs.ts';
import { percentileSorted } from './stats.ts';
import { resolveTool } from './tools.ts';

export interface SaturationResult {
  seconds: number;
  /** Responses received, any status. */
  requests: number;
  /** Responses with status < 400: the only ones counted as served. */
  ok: number;
  rps: number;
  errors: { connect: number; read: number; write: number; status: number; timeout: number };
  /** Closed-loop latency, context only: it hides queueing (coordinated omission). */
  p50Us: number;
  p99Us: number;
}

export interface LatencyResult {
  samples: number;
  non2xx: number;
  failed: number;
  targetRps: number;
  achievedRps: number;
  p50Us: number;
  p90Us: number;
  p99Us: number;
  p999Us: number;
  maxUs: number;
}

let counter = 0;

function luaString(s: string): string {
  return `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n').replace(/\r/g, '\\r')}"`;
}

function wrkScript(load: LoadSpec): string {
  const headers = Object.entries(load.headers)
    .map(([k, v]) => `wrk.headers[${luaString(k)}] = ${luaString(v)}\n`)
    .join('');
  const body = load.body === undefined ? '' : `wrk.body = ${luaString(load.body)}\n`;
  // wrk's done() hook is the only place with exact counts and error classes; one JSON line, marked.
  return `wrk.method = "${load.method}"
${headers}${body}done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('WRKJSON {"requests":%d,"duration_us":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"p50_us":%d,"p99_us":%d}\\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99)))
end
`;
}

export async function runWrk(opts: {
  url: string;
  load: LoadSpec;
  seconds: number;
  threads: number;
  cpus: string | undefined;
  dir: string;
}): Promise<SaturationResult> {
  const id = ++counter;
  const script = join(opts.dir, `wrk-${id}.lua`);
  writeFileSync(script, wrkScript(opts.load));
  const threads = Math.min(opts.threads, opts.load.connections);
  const argv = [
    resolveTool('wrk'),
    '-t',
    String(threads),
    '-c',
    String(opts.load.connections),
    '-d',
    `${opts.seconds}s`,
    '--timeout',
    '5s',
    '-s',
    script,
    opts.url + opts.load.path,
  ];
  const { stdout, status } = await runTool('wrk', argv, {
    cpus: opts.cpus,
    logFile: join(opts.dir, `wrk-${id}.log`),
    timeoutMs: (opts.seconds + 30) * 1000,
  });
  const line = /^WRKJSON (.*)$/m.exec(stdout)?.[1];
  if (status !== 0 || line === undefined) throw new Error(`wrk failed (${status}):\n${stdout.slice(-2000)}`);
  const j = JSON.parse(line) as Record<string, number>;
  const n = (k: string): number => j[k] ?? 0;
  const seconds = n('duration_us') / 1e6;
  const ok = n('requests') - n('status');
  return {
    seconds,
    requests: n('requests'),
    ok,
    rps: ok / seconds,
    errors: {
      connect: n('connect'),
      read: n('read'),
      write: n('write'),
      status: n('status'),
      timeout: n('timeout'),
    },
    p50Us: n('p50_us'),
    p99Us: n('p99_us'),
  };
}

/**
 * Fixed-rate latency with h2load: latencyConnections HTTP/1.1 connections, each sending rateRps/conns
 * requests per second on its own timer, whether or not earlier responses have come back on the other
 * connections. Connections are opened 1/rate apart (-r, --rate-period) so the sends interleave evenly
 * instead of arriving as one burst per period. h2load times a request from its actual send, so a stall
 * longer than one connection's period (conns/rate, 20 ms at 1000 rps over 20) would be under-reported;
 * achievedRps falling short of targetRps is the sign, and is flagged in the report.
 */
export async function runH2load(opts: {
  url: string;
  load: LoadSpec;
  seconds: number;
  cpus: string | undefined;
  dir: string;
}): Promise<LatencyResult> {
  const { load } = opts;
  if (load.rateRps % load.latencyConnections !== 0) {
    throw new Error(
      `rateRps ${load.rateRps} must be a multiple of latencyConnections ${load.latencyConnections}`,
    );
  }
  const id = ++counter;
  const logFile = join(opts.dir, `h2load-${id}.tsv`);
  const perConn = load.rateRps / load.latencyConnections;
  const total = Math.round(load.rateRps * opts.seconds);
  const argv = [
    resolveTool('h2load'),
    '--h1',
    '-n',
    String(total),
    '-c',
    String(load.latencyConnections),
    // --rate-period takes whole milliseconds only, so above 1000 rps several connections open per ms.
    '-r',
    String(Math.max(1, Math.round(load.rateRps / 1000))),
    '--rate-period',
    `${Math.max(1, Math.round(1000 / load.rateRps))}ms`,
    '--rps',
    String(perConn),
    '--log-file',
    logFile,
    ...Object.entries(load.headers).flatMap(([k, v]) => ['-H', `${k}: ${v}`]),
  ];
  if (load.body !== undefined) {
    const bodyFile = join(opts.dir, `h2load-${id}.body`);
    writeFileSync(bodyFile, load.body);
    argv.push('-d', bodyFile); // h2load sends POST when given a body.
  }
  argv.push(opts.url + load.path);
  const { stdout, status } = await runTool('h2load', argv, {
    cpus: opts.cpus,
    logFile: join(opts.dir, `h2load-${id}.log`),
    timeoutMs: (opts.seconds + 30) * 1000,
  });
  const counts = /requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed/.exec(
    stdout,
  );
  if (status !== 0 || counts === null) throw new Error(`h2load failed (${status}):\n${stdout.slice(-2000)}`);
  const rows = readFileSync(logFile, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => l.split('\t').map(Number));
  const latencies = rows.map((r) => r[2] ?? Number.NaN).sort((a, b) => a - b);
  let first = Number.POSITIVE_INFINITY;
  let last = Number.NEGATIVE_INFINITY;
  for (const r of rows) {
    first = Math.min(first, r[0] ?? first);
    last = Math.max(last, r[0] ?? last);
  }
  const spanS = rows.length > 1 ? (last - first) / 1e6 + 1 / load.rateRps : 0;
  return {
    samples: rows.length,
    non2xx: rows.filter((r) => (r[1] ?? 0) < 200 || (r[1] ?? 0) > 299).length,
    failed: Number(counts[5]),
    targetRps: load.rateRps,
    achievedRps: spanS > 0 ? rows.length / spanS : 0,
    p50Us: percentileSorted(latencies, 50),
    p90Us: percentileSorted(latencies, 90),
    p99Us: percentileSorted(latencies, 99),
    p999Us: percentileSorted(latencies, 99.9),
    maxUs: latencies[latencies.length - 1] ?? Number.NaN,
  };
}
