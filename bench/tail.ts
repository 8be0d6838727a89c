// Where gw's latency tail at a fixed rate comes from (issue 17): bin/gw pinned to core 0 in front of
// a Node upstream, h2load at 1,000 req/s on core 1, and inside gw a probe (--import) that records
// the event loop's delay, every stall of the loop longer than 4 ms and every garbage collection
// (perf_hooks' gc entries). The report puts the stalls beside the collections, and beside the
// stalls of a bare loop on the same core with no I/O (what the host itself takes away).
//
//   node bench/tail.ts [seconds]      default 12; needs h2load and taskset (bench/setup.sh)
//   BENCH_GW_BIN=path                 another gw launcher (e.g. with other node flags)
//   TAIL_WARMUP=seconds               traffic before the measurement (default 10; 0: 3 s, one round)
//
// Nothing is written to bench/; the scratch directory is removed unless BENCH_KEEP=1.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { freePort } from '../packages/testkit/src/http-client.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const seconds = Number(process.argv[2] ?? 12);
if (!Number.isFinite(seconds) || seconds < 2) throw new Error('seconds must be a number ≥ 2');
const RATE = 1000;
const CONNECTIONS = 20;
/** A timer that fires this much later than due is a stall of the loop. */
const STALL_MS = 4;
const dir = mkdtempSync(join(tmpdir(), 'gw-tail-'));

/** The probe loaded into gw, and the bare loop: the same detector, its findings written on SIGUSR2. */
const PROBE = `
import { monitorEventLoopDelay, PerformanceObserver, constants, performance } from 'node:perf_hooks';
import { writeFileSync } from 'node:fs';
// each collection: when it started (performance.now()), how long it paused, what kind it was
let gcs = [];
const KINDS = { [constants.NODE_PERFORMANCE_GC_MINOR]: 'Scavenge', [constants.NODE_PERFORMANCE_GC_MAJOR]: 'Mark-Compact', [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental marking', [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weak callbacks' };
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) gcs.push([e.startTime, e.duration, KINDS[e.detail?.kind] ?? String(e.detail?.kind)]);
}).observe({ entryTypes: ['gc'] });
const h = monitorEventLoopDelay({ resolution: 1 });
h.enable();
let last = performance.now();
let stalls = [];
let from = performance.now();
setInterval(() => {
  const now = performance.now();
  if (now - last > ${STALL_MS} + 1) stalls.push([last, now - last]);
  last = now;
}, 1).unref();
if (process.env.TAIL_SPIN) {
  // the bare loop: a little work every millisecond, no I/O
  setInterval(() => { const end = performance.now() + 0.1; while (performance.now() < end); }, 1);
}
process.on('SIGUSR2', () => {
  const ms = (n) => n / 1e6;
  writeFileSync(process.env.TAIL_OUT + '.' + (process.env.TAIL_N = String(Number(process.env.TAIL_N ?? 0) + 1)), JSON.stringify({
    from, to: performance.now(), gcs,
    eld: { p50: ms(h.percentile(50)), p99: ms(h.percentile(99)), p999: ms(h.percentile(99.9)), max: ms(h.max) },
    stalls,
  }));
  h.reset(); stalls = []; gcs = []; from = performance.now();
});
`;

interface Probe {
  from: number;
  to: number;
  /** The collections: start (performance.now()), pause (ms), kind. */
  gcs: [number, number, string][];
  eld: { p50: number; p99: number; p999: number; max: number };
  stalls: [number, number][];
}

const children: ChildProcess[] = [];
function start(cmd: string, args: string[], env: Record<string, string> = {}): ChildProcess {
  const c = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const out: Buffer[] = [];
  c.stdout?.on('data', (d: Buffer) => out.push(d));
  c.stderr?.on('data', (d: Buffer) => out.push(d));
  (c as ChildProcess & { output: () => string }).output = () => Buffer.concat(out).toString();
  children.push(c);
  return c;
}
const output = (c: ChildProcess) => (c as ChildProcess & { output: () => string }).output();

async function probe(c: ChildProcess, out: string, n: number): Promise<Probe> {
  c.kill('SIGUSR2');
  for (let i = 0; i < 50; i++) {
    try {
      return JSON.parse(readFileSync(`${out}.${n}`, 'utf8')) as Probe;
    } catch {
      await sleep(20);
    }
  }
  throw new Error(`no probe output from pid ${c.pid}`);
}

/** h2load at RATE over CONNECTIONS for `secs`, on core 1: request durations in µs, sorted. */
function h2load(url: string, secs: number, logFile?: string): number[] {
  const args = ['-c', '1', 'h2load', '--h1', '-n', String(RATE * secs), '-c', String(CONNECTIONS), '-r', '1'];
  args.push('--rate-period', '1ms', '--rps', String(RATE / CONNECTIONS));
  if (logFile) args.push('--log-file', logFile);
  execFileSync('taskset', [...args, url], { stdio: 'ignore' });
  if (!logFile) return [];
  return readFileSync(logFile, 'utf8')
    .trim()
    .split('\n')
    .map((l) => Number(l.split('\t')[2]))
    .sort((a, b) => a - b);
}

/** A process's page faults (minor, major) and context switches (voluntary, involuntary), from /proc. */
function counters(pid: number): { minflt: number; majflt: number; vcs: number; ivcs: number } {
  // /proc/<pid>/stat: fields after the command's closing parenthesis, minflt the 8th, majflt the 10th
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
  return {
    minflt: Number(f[7]),
    majflt: Number(f[9]),
    vcs: field('voluntary_ctxt_switches'),
    ivcs: field('nonvoluntary_ctxt_switches'),
  };
}

const q = (rows: number[], p: number) => rows[Math.min(rows.length - 1, Math.floor(p * rows.length))] ?? 0;
const us = (rows: number[]) =>
  `p50 ${q(rows, 0.5)} µs, p99 ${q(rows, 0.99)} µs, p99.9 ${q(rows, 0.999)} µs, max ${rows.at(-1)} µs`;
const f1 = (n: number) => n.toFixed(1);

async function main(): Promise<void> {
  const [upPort, gwPort, adminPort, statsPort, readyPort] = await Promise.all(
    [0, 1, 2, 3, 4].map(() => freePort()),
  );
  const node = join(root, '.tools/bin/node');
  const upstream = `require('http').createServer((q,s)=>{q.resume();q.on('end',()=>s.end('hello from the upstream\\n'))}).listen(${upPort},'127.0.0.1')`;
  start('taskset', ['-c', '1', node, '-e', upstream]);
  const probeFile = join(dir, 'probe.mjs');
  writeFileSync(probeFile, PROBE);
  writeFileSync(
    join(dir, 'gw.yaml'),
    `config:
  adminAddr: 127.0.0.1:${adminPort}
  statsAddr: 127.0.0.1:${statsPort}
  readinessAddr: 127.0.0.1:${readyPort}
  workerThreads: 1
  logging: {level: "info,request=warn"}
binds:
- port: ${gwPort}
  address: 127.0.0.1
  listeners:
  - routes:
    - backends: [{host: "127.0.0.1:${upPort}"}]
`,
  );
  const gwOut = join(dir, 'gw-probe');
  const gw = start(
    'taskset',
    ['-c', '0', process.env.BENCH_GW_BIN || join(root, 'bin/gw'), '-f', join(dir, 'gw.yaml')],
    {
      NODE_OPTIONS: `--import=${probeFile}`,
      TAIL_OUT: gwOut,
    },
  );
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`http://127.0.0.1:${gwPort}/`)).ok) break;
    } catch {}
    if (i > 100) throw new Error(`gw did not start:\n${output(gw)}`);
    await sleep(100);
  }
  const direct = h2load(`http://127.0.0.1:${upPort}/`, Math.min(seconds, 6), join(dir, 'direct.tsv'));
  // Warm up: the first connections to close deoptimize the socket code (V8: "dependent prototype
  // chain changed"), which TurboFan compiles again some seconds of traffic later, on a worker thread
  // that shares gw's core. Both happen before the measurement (TAIL_WARMUP=0: they may fall in it).
  const warmup = Number(process.env.TAIL_WARMUP ?? 10);
  if (warmup > 0) {
    h2load(`http://127.0.0.1:${gwPort}/`, 2);
    h2load(`http://127.0.0.1:${gwPort}/`, Math.max(1, warmup - 2));
  } else h2load(`http://127.0.0.1:${gwPort}/`, 3);
  await probe(gw, gwOut, 1);
  const before = counters(gw.pid as number);
  const through = h2load(`http://127.0.0.1:${gwPort}/`, seconds, join(dir, 'gw.tsv'));
  const after = counters(gw.pid as number);
  const inGw = await probe(gw, gwOut, 2);
  writeFileSync(join(dir, 'gw.log'), output(gw));

  const gcs = inGw.gcs.map(([at, pause, kind]) => ({ at, pause, kind }));
  const near = (s: [number, number]) => gcs.some((g) => g.at >= s[0] - 2 && g.at <= s[0] + s[1] + 2);
  const withGc = inGw.stalls.filter(near);
  const without = inGw.stalls.filter((s) => !near(s));

  const bareOut = join(dir, 'bare-probe');
  const bare = start(
    'taskset',
    ['-c', '0', node, '--import', probeFile, '-e', 'setInterval(() => {}, 1000)'],
    {
      TAIL_SPIN: '1',
      TAIL_OUT: bareOut,
    },
  );
  await sleep(500);
  await probe(bare, bareOut, 1);
  await sleep(seconds * 1000);
  const host = await probe(bare, bareOut, 2);

  const scavenges = gcs.filter((g) => g.kind === 'Scavenge');
  const others = gcs.filter((g) => g.kind !== 'Scavenge');
  const eld = (e: Probe['eld']) =>
    `p50 ${f1(e.p50)} ms, p99 ${f1(e.p99)} ms, p99.9 ${f1(e.p999)} ms, max ${f1(e.max)} ms`;
  const longest = (ss: [number, number][]) =>
    ss.length ? `, longest ${f1(Math.max(...ss.map((s) => s[1])))} ms` : '';
  console.log(`tail at ${RATE} req/s over ${CONNECTIONS} connections, ${seconds} s (gw on core 0, load and upstream on core 1)
  latency direct to the upstream:  ${us(direct)}
  latency through gw:              ${us(through)}
  gw's event loop delay (1 ms timer): ${eld(inGw.eld)}
  a bare loop on core 0, no I/O:      ${eld(host.eld)}
  collections in gw: ${scavenges.length} scavenges (${f1(scavenges.reduce((n, g) => n + g.pause, 0))} ms in all, longest ${f1(Math.max(0, ...scavenges.map((g) => g.pause)))} ms), ${others.length} others (${others.map((g) => `${g.kind} ${f1(g.pause)} ms`).join(', ') || 'none'})
  stalls over ${STALL_MS} ms in gw: ${inGw.stalls.length}: ${withGc.length} at a collection, ${without.length} at none${longest(without)}
  stalls over ${STALL_MS} ms in the bare loop: ${host.stalls.length}${longest(host.stalls)}
  gw while measured: ${after.minflt - before.minflt} minor and ${after.majflt - before.majflt} major page faults, ${after.vcs - before.vcs} voluntary and ${after.ivcs - before.ivcs} involuntary context switches`);
}

try {
  await main();
} finally {
  for (const c of children) c.kill('SIGTERM');
  if (process.env.BENCH_KEEP) console.log(`scratch: ${dir}`);
  else rmSync(dir, { recursive: true, force: true });
}
