// The benchmark protocol for any "client → proxy → upstream" scenario: direct, gw and nginx (and, when the
// scenario has a gwBaseline, a second gw "gw-plain") measured in interleaved rounds (saturation with wrk,
// then a fixed rate with h2load), reduced to per-round ratios.
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
  PeerLabels,
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
import { freePorts, waitForHttp } from './net.ts';
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

type PeerName = 'direct' | 'gw' | 'gw-plain' | 'nginx';
type ProxyName = Exclude<PeerName, 'direct'>;
type ComparedScenario = Pick<Scenario, 'name' | 'configure' | 'gwBaseline' | 'peerLabels'>;

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
  scenario: ComparedScenario,
): Promise<ScenarioResult> {
  const modes: ModeResult[] = [];
  for (const mode of ctx.settings.modes) modes.push(await runMode(ctx, scenario, mode));
  return { modes };
}

async function runMode(ctx: RunContext, scenario: ComparedScenario, mode: Mode): Promise<ModeResult> {
  const { settings } = ctx;
  const baseline = scenario.gwBaseline;
  const { ports, basePorts } = await peerPorts(baseline !== undefined);
  const cfg = scenario.configure({ mode, ports });
  const labels = peerLabels(scenario.peerLabels);
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
    const gwProc = await startGwPeer(ctx, mode, dir, 'gw', scenario, ports);
    started.push(gwProc);
    const plainProc =
      baseline === undefined || basePorts === undefined
        ? undefined
        : await startGwPeer(ctx, mode, dir, 'gw-plain', baseline, basePorts);
    if (plainProc !== undefined) started.push(plainProc);
    const nginxProc = await startNginx({
      name: 'nginx',
      workDir: dir,
      workers: mode.workers,
      httpBody: cfg.nginxHttp,
      port: ports.nginx,
      cpus: mode.proxyCpus,
    });
    started.push(nginxProc);

    const gwPeer: Peer = { name: 'gw', url: `http://127.0.0.1:${ports.gw}`, proc: gwProc };
    const peers: Peer[] = [
      { name: 'direct', url: `http://127.0.0.1:${ports.upstream}`, proc: undefined },
      gwPeer,
      ...(plainProc === undefined || basePorts === undefined
        ? []
        : [{ name: 'gw-plain' as const, url: `http://127.0.0.1:${basePorts.gw}`, proc: plainProc }]),
      { name: 'nginx', url: `http://127.0.0.1:${ports.nginx}`, proc: nginxProc },
    ];
    await checkPeersAgree(peers, cfg.load);
    // A stand-in nginx runs no policies: the expectations only hold for gw itself.
    if (!settings.standin) {
      await checkGwExpectations(gwPeer, cfg);
      await checkGwMetrics(gwPeer, ports, cfg);
    }

    // Idle: ready and proxied one request (above), before any load, after a moment to settle.
    await sleep(500);
    const proxies = peers.filter((p): p is Peer & { name: ProxyName; proc: Tracked } => p.proc !== undefined);
    const idleKiB: Partial<Record<ProxyName, number>> = {};
    const rss: Partial<Record<ProxyName, RssSampler>> = {};
    for (const p of proxies) {
      idleKiB[p.name] = statusKiB(processTree(p.proc.pid), 'VmRSS');
      const sampler = new RssSampler(p.proc.pid);
      rss[p.name] = sampler;
      samplers.push(sampler);
    }

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
    const hwmKiB: Partial<Record<ProxyName, number>> = {};
    const peakKiB: Partial<Record<ProxyName, number>> = {};
    for (const p of proxies) {
      rss[p.name]?.stop();
      hwmKiB[p.name] = statusKiB(processTree(p.proc.pid), 'VmHWM');
      peakKiB[p.name] = rss[p.name]?.peakKiB ?? Number.NaN;
    }
    return {
      mode,
      figures: figures(
        rounds,
        { idle: idleKiB, peak: peakKiB, hwm: hwmKiB },
        {
          pinned: mode.loadCpus !== undefined,
          baseline: plainProc !== undefined,
          labels,
        },
      ),
      notes: notes(rounds, mode, settings.standin, labels),
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

/** gw (or its nginx stand-in) from the given scenario's config, listening on ports.gw. */
export async function startGwPeer(
  ctx: RunContext,
  mode: Mode,
  dir: string,
  name: 'gw' | 'gw-plain',
  scenario: Pick<Scenario, 'configure'>,
  ports: Ports,
): Promise<Tracked> {
  if (ctx.settings.standin) {
    return startNginx({
      name: `${name}-standin`,
      workDir: dir,
      workers: mode.workers,
      httpBody: scenario.configure({ mode, ports: { ...ports, nginx: ports.gw } }).nginxHttp,
      port: ports.gw,
      cpus: mode.proxyCpus,
    });
  }
  return startGw({
    name,
    gwBin: ctx.gwBin,
    workDir: dir,
    yaml: scenario.configure({ mode, ports }).gwYaml,
    readyPort: ports.ready,
    cpus: mode.proxyCpus,
  });
}

function loadRequest(load: LoadSpec, headers: Record<string, string>): RequestInit {
  const init: RequestInit = { method: load.method, headers, signal: AbortSignal.timeout(5000) };
  if (load.body !== undefined) init.body = load.body;
  return init;
}

/** A proxy that answers fast with an error would look fast: each peer must answer as direct does. */
async function checkPeersAgree(peers: readonly Peer[], load: LoadSpec): Promise<void> {
  const answers = await Promise.all(
    peers.map(async (p) => ({
      peer: p,
      ...(await fetchText(p.url + load.path, loadRequest(load, load.headers))),
    })),
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

/** The scenario's proof that gw really runs what is measured (e.g. 401 without the token). */
async function checkGwExpectations(gw: Peer, cfg: ScenarioConfig): Promise<void> {
  for (const e of cfg.gwExpect ?? []) {
    const res = await fetchText(gw.url + cfg.load.path, loadRequest(cfg.load, e.headers));
    const missing = e.responseHeader !== undefined && !res.headers.has(e.responseHeader);
    if (res.status !== e.status || missing) {
      const log = gw.proc === undefined ? '' : `\nlog ${gw.proc.logFile}:\n${logTail(gw.proc.logFile)}`;
      throw new Error(
        `gw check "${e.what}": expected ${e.status}${e.responseHeader === undefined ? '' : ` with ${e.responseHeader}`}, ` +
          `got ${res.status} ${JSON.stringify(res.body.slice(0, 200))} headers ${JSON.stringify([...res.headers.keys()])}${log}`,
      );
    }
  }
}

/** The scenario's proof, from gw's metrics, of work done on the side (e.g. tokens counted). */
export async function checkGwMetrics(
  gw: { proc: Tracked | undefined },
  ports: Pick<Ports, 'stats'>,
  cfg: Pick<ScenarioConfig, 'gwMetricsExpect'>,
): Promise<void> {
  const expected = cfg.gwMetricsExpect ?? [];
  if (expected.length === 0) return;
  const metrics = await fetchText(`http://127.0.0.1:${ports.stats}/metrics`, {
    signal: AbortSignal.timeout(5000),
  });
  for (const e of expected) {
    if (new RegExp(e.pattern, 'm').test(metrics.body)) continue;
    const log = gw.proc === undefined ? '' : `\nlog ${gw.proc.logFile}:\n${logTail(gw.proc.logFile)}`;
    const shown = metrics.body
      .split('\n')
      .filter((l) => !l.startsWith('#') && !l.includes('_bucket'))
      .slice(0, 30)
      .join('\n');
    throw new Error(`gw check "${e.what}": no metrics line matches /${e.pattern}/ in:\n${shown}${log}`);
  }
}

async function fetchText(
  url: string,
  init: RequestInit,
): Promise<{ status: number; headers: Headers; body: string }> {
  const res = await fetch(url, init);
  return { status: res.status, headers: res.headers, body: await res.text() };
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

/** Fails the run, with the end of its log, when a peer's process has exited. */
export function assertAlive(peer: { name: string; proc: Tracked | undefined }): void {
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

interface RoundPeers {
  direct: PeerMeasurement;
  gw: PeerMeasurement;
  nginx: PeerMeasurement;
  /** The baseline gw, when the scenario has one. */
  plain: PeerMeasurement | undefined;
}
type PerRound = (r: RoundPeers) => number | undefined;
type FigureDef = readonly [key: string, label: string, unit: Unit, f: PerRound];

function perRound(rounds: readonly Round[], f: PerRound): number[] {
  const out: number[] = [];
  for (const r of rounds) {
    const { direct, gw, nginx } = r.peers;
    if (direct === undefined || gw === undefined || nginx === undefined) continue;
    const v = f({ direct, gw, nginx, plain: r.peers['gw-plain'] });
    if (v !== undefined) out.push(v);
  }
  return out;
}

const MiB = (kib: number | undefined): number => (kib === undefined ? Number.NaN : kib / 1024);

/**
 * Free ports for one mode's peers: gw, nginx, the upstream and gw's admin, stats and readiness; with a
 * baseline, a second gw sharing the upstream gets its own listener, admin, stats and readiness ports.
 */
export async function peerPorts(baseline: boolean): Promise<{ ports: Ports; basePorts: Ports | undefined }> {
  const allocated = await freePorts(baseline ? 10 : 6);
  const port = (i: number): number => {
    const p = allocated[i];
    if (p === undefined) throw new Error('could not allocate ports');
    return p;
  };
  const ports: Ports = {
    gw: port(0),
    nginx: port(1),
    upstream: port(2),
    admin: port(3),
    stats: port(4),
    ready: port(5),
  };
  const basePorts = baseline
    ? { ...ports, gw: port(6), admin: port(7), stats: port(8), ready: port(9) }
    : undefined;
  return { ports, basePorts };
}

export function peerLabels(custom: Partial<PeerLabels> | undefined): PeerLabels {
  return { gw: 'gw', nginx: 'nginx', gwBaseline: 'gw plain', ...custom };
}

/** Figures taken within each round (so neighbours' noise hits both sides of a ratio alike). */
function roundFigures(l: PeerLabels, baseline: boolean): FigureDef[] {
  const b = (defs: FigureDef[]): FigureDef[] => (baseline ? defs : []);
  return [
    // The cost of the feature under test, first when there is a baseline to take it against.
    ...b([
      [
        'gw-vs-gw-plain-throughput',
        `Throughput ${l.gw} / ${l.gwBaseline}`,
        'x',
        (r) => (r.plain === undefined ? undefined : r.gw.saturation.rps / r.plain.saturation.rps),
      ],
    ]),
    [
      'gw-vs-nginx-throughput',
      `Throughput ${l.gw} / ${l.nginx}`,
      'x',
      (r) => r.gw.saturation.rps / r.nginx.saturation.rps,
    ],
    ...b([
      [
        'gw-plain-vs-nginx-throughput',
        `Throughput ${l.gwBaseline} / ${l.nginx}`,
        'x',
        (r) => (r.plain === undefined ? undefined : r.plain.saturation.rps / r.nginx.saturation.rps),
      ],
    ]),
    [
      'gw-vs-direct-throughput',
      `Throughput ${l.gw} / direct`,
      'x',
      (r) => r.gw.saturation.rps / r.direct.saturation.rps,
    ],
    [
      'nginx-vs-direct-throughput',
      `Throughput ${l.nginx} / direct`,
      'x',
      (r) => r.nginx.saturation.rps / r.direct.saturation.rps,
    ],
    ['gw-cpu-per-request', `CPU per request, ${l.gw}`, 'us', (r) => r.gw.cpuUsPerRequest],
    ...b([
      ['gw-plain-cpu-per-request', `CPU per request, ${l.gwBaseline}`, 'us', (r) => r.plain?.cpuUsPerRequest],
      [
        'gw-cpu-over-plain',
        `CPU per request, ${l.gw} minus ${l.gwBaseline}`,
        'us',
        (r) =>
          r.gw.cpuUsPerRequest === undefined || r.plain?.cpuUsPerRequest === undefined
            ? undefined
            : r.gw.cpuUsPerRequest - r.plain.cpuUsPerRequest,
      ],
    ]),
    ['nginx-cpu-per-request', `CPU per request, ${l.nginx}`, 'us', (r) => r.nginx.cpuUsPerRequest],
    ['gw-added-p50', `Added p50 latency, ${l.gw}`, 'us', (r) => r.gw.latency.p50Us - r.direct.latency.p50Us],
    ['gw-added-p99', `Added p99 latency, ${l.gw}`, 'us', (r) => r.gw.latency.p99Us - r.direct.latency.p99Us],
    ...b([
      [
        'gw-plain-added-p50',
        `Added p50 latency, ${l.gwBaseline}`,
        'us',
        (r) => (r.plain === undefined ? undefined : r.plain.latency.p50Us - r.direct.latency.p50Us),
      ],
      [
        'gw-plain-added-p99',
        `Added p99 latency, ${l.gwBaseline}`,
        'us',
        (r) => (r.plain === undefined ? undefined : r.plain.latency.p99Us - r.direct.latency.p99Us),
      ],
    ]),
    [
      'nginx-added-p50',
      `Added p50 latency, ${l.nginx}`,
      'us',
      (r) => r.nginx.latency.p50Us - r.direct.latency.p50Us,
    ],
    [
      'nginx-added-p99',
      `Added p99 latency, ${l.nginx}`,
      'us',
      (r) => r.nginx.latency.p99Us - r.direct.latency.p99Us,
    ],
  ];
}

function contextFigures(l: PeerLabels, baseline: boolean): FigureDef[] {
  const b = (defs: FigureDef[]): FigureDef[] => (baseline ? defs : []);
  return [
    ['gw-rps', `Context: ${l.gw} throughput`, 'rps', (r) => r.gw.saturation.rps],
    ...b([['gw-plain-rps', `Context: ${l.gwBaseline} throughput`, 'rps', (r) => r.plain?.saturation.rps]]),
    ['nginx-rps', `Context: ${l.nginx} throughput`, 'rps', (r) => r.nginx.saturation.rps],
    ['direct-rps', 'Context: direct throughput', 'rps', (r) => r.direct.saturation.rps],
    ['direct-p50', 'Context: direct p50 at fixed rate', 'us', (r) => r.direct.latency.p50Us],
    ['direct-p99', 'Context: direct p99 at fixed rate', 'us', (r) => r.direct.latency.p99Us],
    // Whether a proxy used all of its CPUs at saturation, or was held back by the load side.
    [
      'gw-proxy-cpu-busy',
      `Context: proxy CPUs busy, ${l.gw} saturation`,
      '%',
      (r) => 100 * r.gw.proxyCpuBusy,
    ],
    ...b([
      [
        'gw-plain-proxy-cpu-busy',
        `Context: proxy CPUs busy, ${l.gwBaseline} saturation`,
        '%',
        (r) => (r.plain === undefined ? undefined : 100 * r.plain.proxyCpuBusy),
      ],
    ]),
    [
      'nginx-proxy-cpu-busy',
      `Context: proxy CPUs busy, ${l.nginx} saturation`,
      '%',
      (r) => 100 * r.nginx.proxyCpuBusy,
    ],
  ];
}

// Only meaningful when the load side has CPUs of its own.
function pinnedFigures(l: PeerLabels): FigureDef[] {
  return [
    [
      'nginx-load-cpu-busy',
      `Context: load CPUs busy, ${l.nginx} saturation`,
      '%',
      (r) => 100 * r.nginx.loadCpuBusy,
    ],
  ];
}

type Memory = Record<'idle' | 'peak' | 'hwm', Partial<Record<ProxyName, number>>>;

function figures(
  rounds: readonly Round[],
  mem: Memory,
  opts: { pinned: boolean; baseline: boolean; labels: PeerLabels },
): Figure[] {
  const l = opts.labels;
  const fromRounds = (list: readonly FigureDef[]): Figure[] =>
    list.map(([key, label, unit, f]) => figure(key, label, unit, perRound(rounds, f)));
  const baselineMemory = opts.baseline
    ? [
        figure('gw-plain-rss-idle', `RSS idle, ${l.gwBaseline}`, 'MiB', [MiB(mem.idle['gw-plain'])]),
        figure('gw-plain-rss-peak', `RSS peak (100 ms samples), ${l.gwBaseline}`, 'MiB', [
          MiB(mem.peak['gw-plain']),
        ]),
      ]
    : [];
  return [
    ...fromRounds(roundFigures(l, opts.baseline)),
    figure('gw-rss-idle', `RSS idle, ${l.gw}`, 'MiB', [MiB(mem.idle.gw)]),
    figure('gw-rss-peak', `RSS peak (100 ms samples), ${l.gw}`, 'MiB', [MiB(mem.peak.gw)]),
    figure('gw-rss-hwm', `RSS high-water mark (VmHWM), ${l.gw}`, 'MiB', [MiB(mem.hwm.gw)]),
    ...baselineMemory,
    figure('nginx-rss-idle', `RSS idle, ${l.nginx}`, 'MiB', [MiB(mem.idle.nginx)]),
    figure('nginx-rss-peak', `RSS peak (100 ms samples), ${l.nginx}`, 'MiB', [MiB(mem.peak.nginx)]),
    ...fromRounds(contextFigures(l, opts.baseline)),
    ...(opts.pinned ? fromRounds(pinnedFigures(l)) : []),
  ];
}

function notes(rounds: readonly Round[], mode: Mode, standin: boolean, labels: PeerLabels): string[] {
  const out: string[] = [];
  if (standin) out.push('STAND-IN RUN: "gw" is a second nginx, to test the harness only.');
  const label: Record<PeerName, string> = {
    direct: 'direct',
    gw: labels.gw,
    'gw-plain': labels.gwBaseline,
    nginx: labels.nginx,
  };
  for (const name of ['direct', 'gw', 'gw-plain', 'nginx'] as const) {
    let seen = false;
    let satErrors = 0;
    let latErrors = 0;
    let missedRate = 0;
    let loadBound = 0;
    for (const r of rounds) {
      const m = r.peers[name];
      if (m === undefined) continue;
      seen = true;
      const e = m.saturation.errors;
      satErrors += e.connect + e.read + e.write + e.status + e.timeout;
      latErrors += m.latency.non2xx + m.latency.failed;
      if (m.latency.achievedRps < 0.95 * m.latency.targetRps) missedRate++;
      if (name !== 'direct' && mode.loadCpus !== undefined && m.loadCpuBusy > LOAD_SATURATED) loadBound++;
    }
    if (!seen) continue;
    const n = label[name];
    if (satErrors > 0) out.push(`${n}: ${satErrors} errors or non-2xx responses in saturation runs.`);
    if (latErrors > 0) out.push(`${n}: ${latErrors} failed or non-2xx requests in fixed-rate runs.`);
    if (missedRate > 0) {
      out.push(
        `${n}: fixed rate missed by >5% in ${missedRate} round(s); its latency may be under-reported.`,
      );
    }
    if (loadBound > 0) {
      out.push(
        `${n}: load CPUs over ${LOAD_SATURATED * 100}% busy in ${loadBound} round(s); throughput may be capped by the load side.`,
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
