// The benchmark protocol for any "client → proxy → upstream" scenario: direct, gw and nginx measured in
// interleaved rounds (saturation with wrk, then a fixed rate with h2load), reduced to per-round ratios.
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type {
  Figure,
  LoadSpec,
  Mode,
  ModeResult,
  Ports,
  RunContext,
  Scenario,
  ScenarioConfig,
  ScenarioResult,
  Unit,
  UpstreamSpec,
} from '../scenarios/types.ts';
import { busyFraction, cpuSnapshot, parseCpuList } from './cpu-load.ts';
import { startGw } from './gw.ts';
import { type LatencyResult, runH2load, runWrk, type SaturationResult } from './loadgen.ts';
import { freePorts, httpGet, waitForHttp } from './net.ts';
import { startNginx } from './nginx.ts';
import {
  clockTicksPerSecond,
  cpuTicks,
  logTail,
  processTree,
  RssSampler,
  spawnTracked,
  statusKiB,
  stopTracked,
  type Tracked,
} from './procs.ts';
import { figure } from './stats.ts';

type PeerName = 'direct' | 'gw' | 'nginx';

interface Peer {
  name: PeerName;
  url: string;
  /** The proxy process whose CPU is accounted; undefined for direct. */
  proc: Tracked | undefined;
}

export interface PeerMeasurement {
  saturation: SaturationResult;
  /** Proxy CPU (user + system, whole process tree) per served request; undefined for direct. */
  cpuUsPerRequest: number | undefined;
  /** Busy fraction of the load-side CPUs (upstream + wrk) during the saturation run. */
  loadCpuBusy: number;
  /** Busy fraction of the proxy CPUs during the saturation run. */
  proxyCpuBusy: number;
  latency: LatencyResult;
}

export interface Round {
  order: PeerName[];
  peers: Partial<Record<PeerName, PeerMeasurement>>;
}

const SETTLE_MS = 200;
// Above this the load side, not the proxy, may have capped the throughput.
const LOAD_SATURATED = 0.9;

export async function runProxyComparison(
  ctx: RunContext,
  scenario: Pick<Scenario, 'name' | 'configure'>,
): Promise<ScenarioResult> {
  const modes: ModeResult[] = [];
  for (const mode of ctx.settings.modes) modes.push(await runMode(ctx, scenario, mode));
  return { modes };
}

async function runMode(
  ctx: RunContext,
  scenario: Pick<Scenario, 'name' | 'configure'>,
  mode: Mode,
): Promise<ModeResult> {
  const { settings } = ctx;
  const [gw, nginx, upstream, admin, stats, ready] = await freePorts(6);
  if (ready === undefined || gw === undefined || nginx === undefined || upstream === undefined) {
    throw new Error('could not allocate ports');
  }
  const ports: Ports = { gw, nginx, upstream, admin: admin ?? 0, stats: stats ?? 0, ready };
  const cfg = scenario.configure({ mode, ports });
  const dir = join(ctx.workDir, `${scenario.name}-${mode.name}`);
  mkdirSync(dir, { recursive: true });
  const tag = `[${scenario.name} ${mode.name}]`;
  ctx.log(`${tag} ${mode.label}`);

  const started: Tracked[] = [];
  const samplers: RssSampler[] = [];
  // The harness samples /proc every 100 ms: keep that off the proxy's core too.
  pinSelf(mode.loadCpus);
  try {
    const up = await startUpstream(cfg.upstream, { dir, port: ports.upstream, cpus: mode.loadCpus });
    started.push(up);
    const gwProc = settings.standin
      ? await startNginx({
          name: 'gw-standin',
          workDir: dir,
          workers: mode.workers,
          httpBody: scenario.configure({ mode, ports: { ...ports, nginx: ports.gw } }).nginxHttp,
          port: ports.gw,
          cpus: mode.proxyCpus,
        })
      : await startGw({
          gwBin: ctx.gwBin,
          workDir: dir,
          yaml: cfg.gwYaml,
          readyPort: ports.ready,
          cpus: mode.proxyCpus,
        });
    started.push(gwProc);
    const nginxProc = await startNginx({
      name: 'nginx',
      workDir: dir,
      workers: mode.workers,
      httpBody: cfg.nginxHttp,
      port: ports.nginx,
      cpus: mode.proxyCpus,
    });
    started.push(nginxProc);

    const peers: Peer[] = [
      { name: 'direct', url: `http://127.0.0.1:${ports.upstream}`, proc: undefined },
      { name: 'gw', url: `http://127.0.0.1:${ports.gw}`, proc: gwProc },
      { name: 'nginx', url: `http://127.0.0.1:${ports.nginx}`, proc: nginxProc },
    ];
    await checkPeersAgree(peers, cfg.load);

    // Idle: ready and proxied one request (above), before any load, after a moment to settle.
    await sleep(500);
    const idleKiB = {
      gw: statusKiB(processTree(gwProc.pid), 'VmRSS'),
      nginx: statusKiB(processTree(nginxProc.pid), 'VmRSS'),
    };
    const rss = { gw: new RssSampler(gwProc.pid), nginx: new RssSampler(nginxProc.pid) };
    samplers.push(rss.gw, rss.nginx);

    // Warm-up, not recorded: JIT, connection pools, page cache.
    for (const peer of peers) {
      await runWrk({
        url: peer.url,
        load: cfg.load,
        seconds: settings.warmupSeconds,
        threads: mode.loadThreads,
        cpus: mode.loadCpus,
        dir,
      });
    }

    const rounds: Round[] = [];
    for (let r = 0; r < settings.pairs; r++) {
      // Alternating the order (ABC CBA …) cancels linear drift, such as a neighbour's load ramping up.
      const order = r % 2 === 0 ? peers : [...peers].reverse();
      const round: Round = { order: order.map((p) => p.name), peers: {} };
      for (const peer of order) round.peers[peer.name] = await measure(peer, cfg, mode, settings, dir);
      rounds.push(round);
      ctx.log(`${tag} round ${r + 1}/${settings.pairs}: ${describeRound(round)}`);
    }
    rss.gw.stop();
    rss.nginx.stop();
    const hwmKiB = {
      gw: statusKiB(processTree(gwProc.pid), 'VmHWM'),
      nginx: statusKiB(processTree(nginxProc.pid), 'VmHWM'),
    };
    const peakKiB = { gw: rss.gw.peakKiB, nginx: rss.nginx.peakKiB };
    return {
      mode,
      figures: figures(rounds, idleKiB, peakKiB, hwmKiB, mode.loadCpus !== undefined),
      notes: notes(rounds, mode, settings.standin),
      raw: { ports, memoryKiB: { idle: idleKiB, peak: peakKiB, hwm: hwmKiB }, rounds },
    };
  } finally {
    for (const s of samplers) s.stop();
    for (const t of started.reverse()) await stopTracked(t);
    pinSelf(undefined);
  }
}

async function startUpstream(
  spec: UpstreamSpec,
  opts: { dir: string; port: number; cpus: string | undefined },
): Promise<Tracked> {
  if (spec.kind === 'nginx') {
    return startNginx({
      name: 'upstream',
      workDir: opts.dir,
      workers: spec.workers,
      httpBody: spec.http,
      port: opts.port,
      cpus: opts.cpus,
    });
  }
  const proc = spawnTracked('upstream', spec.argv, {
    cpus: opts.cpus,
    logFile: join(opts.dir, 'upstream.log'),
  });
  await waitForHttp(`http://127.0.0.1:${opts.port}${spec.readyPath}`, proc, {
    timeoutMs: 10_000,
    status: 200,
  });
  return proc;
}

/** A proxy that answers fast with an error would look fast: each peer must answer as direct does. */
async function checkPeersAgree(peers: readonly Peer[], load: LoadSpec): Promise<void> {
  const answers = await Promise.all(
    peers.map(async (p) => {
      const init: RequestInit = {
        method: load.method,
        headers: load.headers,
        signal: AbortSignal.timeout(5000),
      };
      if (load.body !== undefined) init.body = load.body;
      const res =
        load.method === 'GET'
          ? await httpGet(p.url + load.path, 5000)
          : await fetchText(p.url + load.path, init);
      return { peer: p, ...res };
    }),
  );
  const [direct, ...rest] = answers;
  if (direct === undefined) return;
  if (direct.status < 200 || direct.status > 299)
    throw new Error(`upstream answered ${direct.status} on ${load.path}`);
  for (const a of rest) {
    if (a.status !== direct.status || a.body !== direct.body) {
      const log =
        a.peer.proc === undefined ? '' : `\nlog ${a.peer.proc.logFile}:\n${logTail(a.peer.proc.logFile)}`;
      throw new Error(
        `${a.peer.name} answered ${a.status} ${JSON.stringify(a.body.slice(0, 200))}, direct answered ${direct.status} ${JSON.stringify(direct.body.slice(0, 200))}${log}`,
      );
    }
  }
}

async function fetchText(url: string, init: RequestInit): Promise<{ status: number; body: string }> {
  const res = await fetch(url, init);
  return { status: res.status, body: await res.text() };
}

async function measure(
  peer: Peer,
  cfg: ScenarioConfig,
  mode: Mode,
  settings: RunContext['settings'],
  dir: string,
): Promise<PeerMeasurement> {
  assertAlive(peer);
  const loadCpus = parseCpuList(mode.loadCpus);
  const proxyCpus = parseCpuList(mode.proxyCpus);
  const ticksBefore = peer.proc === undefined ? 0 : cpuTicks(processTree(peer.proc.pid));
  const loadBefore = cpuSnapshot(loadCpus);
  const proxyBefore = cpuSnapshot(proxyCpus);
  const saturation = await runWrk({
    url: peer.url,
    load: cfg.load,
    seconds: settings.saturationSeconds,
    threads: mode.loadThreads,
    cpus: mode.loadCpus,
    dir,
  });
  const loadCpuBusy = busyFraction(loadBefore, cpuSnapshot(loadCpus));
  const proxyCpuBusy = busyFraction(proxyBefore, cpuSnapshot(proxyCpus));
  const ticksAfter = peer.proc === undefined ? 0 : cpuTicks(processTree(peer.proc.pid));
  assertAlive(peer);
  const cpuUsPerRequest =
    peer.proc === undefined || saturation.ok === 0
      ? undefined
      : ((ticksAfter - ticksBefore) * 1e6) / clockTicksPerSecond() / saturation.ok;
  await sleep(SETTLE_MS);
  const latency = await runH2load({
    url: peer.url,
    load: cfg.load,
    seconds: settings.latencySeconds,
    cpus: mode.loadCpus,
    dir,
  });
  assertAlive(peer);
  await sleep(SETTLE_MS);
  return { saturation, cpuUsPerRequest, loadCpuBusy, proxyCpuBusy, latency };
}

function assertAlive(peer: Peer): void {
  const proc = peer.proc;
  if (proc !== undefined && proc.exitStatus !== undefined) {
    throw new Error(
      `${peer.name} exited (${proc.exitStatus}); log ${proc.logFile}:\n${logTail(proc.logFile)}`,
    );
  }
}

function describeRound(round: Round): string {
  return round.order
    .map((name) => {
      const m = round.peers[name];
      if (m === undefined) return `${name} -`;
      const cpu = m.cpuUsPerRequest === undefined ? '' : ` ${m.cpuUsPerRequest.toFixed(1)} µs/req`;
      return `${name} ${Math.round(m.saturation.rps)} req/s${cpu} p50/p99 ${m.latency.p50Us}/${m.latency.p99Us} µs`;
    })
    .join(' | ');
}

type PerRound = (r: Required<Round['peers']>) => number | undefined;

function perRound(rounds: readonly Round[], f: PerRound): number[] {
  const out: number[] = [];
  for (const r of rounds) {
    const { direct, gw, nginx } = r.peers;
    if (direct === undefined || gw === undefined || nginx === undefined) continue;
    const v = f({ direct, gw, nginx });
    if (v !== undefined) out.push(v);
  }
  return out;
}

const MiB = (kib: number): number => kib / 1024;

// Figures taken within each round (so neighbours' noise hits both sides of a ratio alike).
const ROUND_FIGURES: readonly [key: string, label: string, unit: Unit, f: PerRound][] = [
  [
    'gw-vs-nginx-throughput',
    'Throughput gw / nginx',
    'x',
    (r) => r.gw.saturation.rps / r.nginx.saturation.rps,
  ],
  [
    'gw-vs-direct-throughput',
    'Throughput gw / direct',
    'x',
    (r) => r.gw.saturation.rps / r.direct.saturation.rps,
  ],
  [
    'nginx-vs-direct-throughput',
    'Throughput nginx / direct',
    'x',
    (r) => r.nginx.saturation.rps / r.direct.saturation.rps,
  ],
  ['gw-cpu-per-request', 'CPU per request, gw', 'us', (r) => r.gw.cpuUsPerRequest],
  ['nginx-cpu-per-request', 'CPU per request, nginx', 'us', (r) => r.nginx.cpuUsPerRequest],
  ['gw-added-p50', 'Added p50 latency, gw', 'us', (r) => r.gw.latency.p50Us - r.direct.latency.p50Us],
  ['gw-added-p99', 'Added p99 latency, gw', 'us', (r) => r.gw.latency.p99Us - r.direct.latency.p99Us],
  [
    'nginx-added-p50',
    'Added p50 latency, nginx',
    'us',
    (r) => r.nginx.latency.p50Us - r.direct.latency.p50Us,
  ],
  [
    'nginx-added-p99',
    'Added p99 latency, nginx',
    'us',
    (r) => r.nginx.latency.p99Us - r.direct.latency.p99Us,
  ],
];

const CONTEXT_FIGURES: readonly [key: string, label: string, unit: Unit, f: PerRound][] = [
  ['gw-rps', 'Context: gw throughput', 'rps', (r) => r.gw.saturation.rps],
  ['nginx-rps', 'Context: nginx throughput', 'rps', (r) => r.nginx.saturation.rps],
  ['direct-rps', 'Context: direct throughput', 'rps', (r) => r.direct.saturation.rps],
  ['direct-p50', 'Context: direct p50 at fixed rate', 'us', (r) => r.direct.latency.p50Us],
  ['direct-p99', 'Context: direct p99 at fixed rate', 'us', (r) => r.direct.latency.p99Us],
  // Whether a proxy used all of its CPUs at saturation, or was held back by the load side.
  ['gw-proxy-cpu-busy', 'Context: proxy CPUs busy, gw saturation', '%', (r) => 100 * r.gw.proxyCpuBusy],
  [
    'nginx-proxy-cpu-busy',
    'Context: proxy CPUs busy, nginx saturation',
    '%',
    (r) => 100 * r.nginx.proxyCpuBusy,
  ],
];

// Only meaningful when the load side has CPUs of its own.
const PINNED_FIGURES: readonly [key: string, label: string, unit: Unit, f: PerRound][] = [
  ['nginx-load-cpu-busy', 'Context: load CPUs busy, nginx saturation', '%', (r) => 100 * r.nginx.loadCpuBusy],
];

function figures(
  rounds: readonly Round[],
  idleKiB: Record<'gw' | 'nginx', number>,
  peakKiB: Record<'gw' | 'nginx', number>,
  hwmKiB: Record<'gw' | 'nginx', number>,
  pinned: boolean,
): Figure[] {
  const fromRounds = (list: typeof ROUND_FIGURES): Figure[] =>
    list.map(([key, label, unit, f]) => figure(key, label, unit, perRound(rounds, f)));
  return [
    ...fromRounds(ROUND_FIGURES),
    figure('gw-rss-idle', 'RSS idle, gw', 'MiB', [MiB(idleKiB.gw)]),
    figure('gw-rss-peak', 'RSS peak (100 ms samples), gw', 'MiB', [MiB(peakKiB.gw)]),
    figure('gw-rss-hwm', 'RSS high-water mark (VmHWM), gw', 'MiB', [MiB(hwmKiB.gw)]),
    figure('nginx-rss-idle', 'RSS idle, nginx', 'MiB', [MiB(idleKiB.nginx)]),
    figure('nginx-rss-peak', 'RSS peak (100 ms samples), nginx', 'MiB', [MiB(peakKiB.nginx)]),
    ...fromRounds(CONTEXT_FIGURES),
    ...(pinned ? fromRounds(PINNED_FIGURES) : []),
  ];
}

function notes(rounds: readonly Round[], mode: Mode, standin: boolean): string[] {
  const out: string[] = [];
  if (standin) out.push('STAND-IN RUN: "gw" is a second nginx, to test the harness only.');
  for (const name of ['direct', 'gw', 'nginx'] as const) {
    let satErrors = 0;
    let latErrors = 0;
    let missedRate = 0;
    let loadBound = 0;
    for (const r of rounds) {
      const m = r.peers[name];
      if (m === undefined) continue;
      const e = m.saturation.errors;
      satErrors += e.connect + e.read + e.write + e.status + e.timeout;
      latErrors += m.latency.non2xx + m.latency.failed;
      if (m.latency.achievedRps < 0.95 * m.latency.targetRps) missedRate++;
      if (name !== 'direct' && mode.loadCpus !== undefined && m.loadCpuBusy > LOAD_SATURATED) loadBound++;
    }
    if (satErrors > 0) out.push(`${name}: ${satErrors} errors or non-2xx responses in saturation runs.`);
    if (latErrors > 0) out.push(`${name}: ${latErrors} failed or non-2xx requests in fixed-rate runs.`);
    if (missedRate > 0) {
      out.push(
        `${name}: fixed rate missed by >5% in ${missedRate} round(s); its latency may be under-reported.`,
      );
    }
    if (loadBound > 0) {
      out.push(
        `${name}: load CPUs over ${LOAD_SATURATED * 100}% busy in ${loadBound} round(s); throughput may be capped by the load side.`,
      );
    }
  }
  return out;
}

/** Moves every thread of this process onto the given CPUs (all CPUs when undefined). */
function pinSelf(list: string | undefined): void {
  const cpuList = list ?? `0-${cpus().length - 1}`;
  try {
    execFileSync('taskset', ['-a', '-p', '-c', cpuList, String(process.pid)], { stdio: 'ignore' });
  } catch {
    // Best effort: the harness is nearly idle during runs.
  }
}
