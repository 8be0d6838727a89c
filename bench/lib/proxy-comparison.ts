// The benchmark protocol for any "client → proxy → upstream" scenario: a list of peers (direct, gw, and
// as the scenario and the machine allow gw-log, gw-plain, nginx, node-floor and agentgateway) measured
// in interleaved rounds (saturation with wrk, then a fixed rate with h2load), reduced to per-round
// ratios.
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
import { startAgentgateway } from './agentgateway.ts';
import { busyFraction, cpuSnapshot, parseCpuList } from './cpu-load.ts';
import { startGw, withAccessLog } from './gw.ts';
import { type LatencyResult, runH2load, runWrk, type SaturationResult } from './loadgen.ts';
import { freePorts, waitForHttp } from './net.ts';
import { startNginx, startNginxPeer } from './nginx.ts';
import { startNodeFloor } from './node-floor.ts';
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

/** Every proxy a comparison may run, in report and round order. */
export const PROXIES = ['gw', 'gw-log', 'gw-plain', 'nginx', 'node-floor', 'agentgateway'] as const;
export type ProxyName = (typeof PROXIES)[number];
export type PeerName = 'direct' | ProxyName;
/** The gw peers: the scenario's gw, the same with the access log on, and the baseline. */
const GWS = ['gw', 'gw-log', 'gw-plain'] as const satisfies readonly ProxyName[];
type ComparedScenario = Pick<
  Scenario,
  'name' | 'configure' | 'gwBaseline' | 'gwAccessLog' | 'peerLabels' | 'quickIdleMemory'
>;

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

// Pause around each fixed-rate run so one peer's tail does not reach the next; quick runs halve it.
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
  // agentgateway's config comes from configure() like gw's; a scenario without one leaves it out.
  const wantsAgw =
    ctx.agentgatewayBin !== undefined &&
    scenario.configure({ mode, ports: PLACEHOLDER_PORTS }).agentgatewayYaml !== undefined;
  const instances = [
    ...(scenario.gwAccessLog === true ? (['gw-log'] as const) : []),
    ...(baseline === undefined ? [] : (['gw-plain'] as const)),
    ...(wantsAgw ? (['agentgateway'] as const) : []),
  ];
  const plan = await allocatePorts(instances);
  const { ports } = plan;
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
    const peers: Peer[] = [{ name: 'direct', url: `http://127.0.0.1:${ports.upstream}`, proc: undefined }];
    // The proxies start at once (each waits for its own readiness); the peer order stays fixed.
    const starts: { name: ProxyName; port: number; proc: Promise<Tracked> }[] = [];
    const start = (name: ProxyName, port: number, proc: Promise<Tracked>) =>
      starts.push({ name, port, proc });
    start('gw', ports.gw, startGwPeer(ctx, mode, dir, 'gw', scenario, ports));
    const logPorts = plan.instance['gw-log'];
    if (logPorts !== undefined)
      start('gw-log', logPorts.gw, startGwPeer(ctx, mode, dir, 'gw-log', scenario, logPorts, withAccessLog));
    const basePorts = plan.instance['gw-plain'];
    if (baseline !== undefined && basePorts !== undefined)
      start('gw-plain', basePorts.gw, startGwPeer(ctx, mode, dir, 'gw-plain', baseline, basePorts));
    start('nginx', ports.nginx, startNginxPeer(mode, dir, cfg.nginxHttp, ports.nginx));
    start(
      'node-floor',
      plan.nodeFloor,
      startNodeFloor({
        workDir: dir,
        port: plan.nodeFloor,
        upstreamPort: ports.upstream,
        workers: mode.workers,
        cpus: mode.proxyCpus,
      }),
    );
    const agwPorts = plan.instance.agentgateway;
    const agwYaml = agwPorts && scenario.configure({ mode, ports: agwPorts }).agentgatewayYaml;
    if (ctx.agentgatewayBin !== undefined && agwPorts !== undefined && agwYaml !== undefined) {
      start(
        'agentgateway',
        agwPorts.gw,
        startAgentgateway({
          bin: ctx.agentgatewayBin,
          workDir: dir,
          yaml: agwYaml,
          readyPort: agwPorts.ready,
          cpus: mode.proxyCpus,
        }),
      );
    }
    const results = await Promise.allSettled(starts.map((x) => x.proc));
    // Whatever started is stopped at the end, even when another peer failed to.
    for (const r of results) if (r.status === 'fulfilled') started.push(r.value);
    for (const r of results) if (r.status === 'rejected') throw r.reason;
    for (const [i, x] of starts.entries()) {
      const proc = (results[i] as PromiseFulfilledResult<Tracked>).value;
      peers.push({ name: x.name, url: `http://127.0.0.1:${x.port}`, proc });
    }
    const gwPeer = peers.find((p) => p.name === 'gw') as Peer;
    const agwPeer = peers.find((p) => p.name === 'agentgateway');
    ctx.log(`${tag} peers: ${peers.map((p) => p.name).join(', ')}`);

    await checkPeersAgree(peers, cfg.load);
    // A stand-in nginx runs no policies: the expectations only hold for gw itself.
    if (!settings.standin) {
      await checkExpectations(gwPeer, cfg);
      await checkGwMetrics(gwPeer, ports, cfg);
    }
    // The same proof that agentgateway runs the policies under test, not a cheaper config.
    if (agwPeer !== undefined) await checkExpectations(agwPeer, cfg, { statusOnly: true });

    // Idle: ready and proxied one request (above), before any load, after 5 s without traffic, the
    // time a proxy that returns memory when quiet (gw's idle trim: 3 s) is given to do so. Quick runs
    // skip it where the scenario's idle figures are not targets.
    const idle = !settings.quick || scenario.quickIdleMemory === true;
    if (idle) await sleep(5000);
    const proxies = peers.filter((p): p is Peer & { name: ProxyName; proc: Tracked } => p.proc !== undefined);
    const idleKiB: Partial<Record<ProxyName, number>> = {};
    const rss: Partial<Record<ProxyName, RssSampler>> = {};
    for (const p of proxies) {
      if (idle) idleKiB[p.name] = statusKiB(processTree(p.proc.pid), 'VmRSS');
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
    const present = PROXIES.filter((name) => proxies.some((p) => p.name === name));
    const allPorts = { ...ports, nodeFloor: plan.nodeFloor, instances: plan.instance };
    return {
      mode,
      figures: figures(
        rounds,
        { idle: idleKiB, peak: peakKiB, hwm: hwmKiB },
        {
          pinned: mode.loadCpus !== undefined,
          present,
          labels,
        },
      ),
      notes: notes(rounds, mode, settings.standin, labels, {
        agentgatewayOut:
          ctx.agentgatewayBin === undefined ? 'no binary' : wantsAgw ? undefined : 'no equivalent config',
      }),
      raw: { ports: allPorts, memoryKiB: { idle: idleKiB, peak: peakKiB, hwm: hwmKiB }, rounds },
    };
  } finally {
    for (const s of samplers) s.stop();
    for (const t of started.reverse()) await stopTracked(t);
    pinSelf(undefined);
  }
}

/** Ports that configure() may be called with only to see what it returns (never listened on). */
const PLACEHOLDER_PORTS: Ports = { gw: 1, nginx: 2, upstream: 3, admin: 4, stats: 5, ready: 6 };

export type Instance = 'gw-log' | 'gw-plain' | 'agentgateway';

/**
 * Free ports for one mode: the scenario's gw, nginx, the upstream and gw's admin, stats and readiness;
 * each further gw-like instance (listener, admin, stats, readiness of its own, sharing nginx and the
 * upstream) and the node-floor listener.
 */
export async function allocatePorts(
  instances: readonly Instance[],
): Promise<{ ports: Ports; instance: Partial<Record<Instance, Ports>>; nodeFloor: number }> {
  const allocated = await freePorts(7 + 4 * instances.length);
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
  const instance: Partial<Record<Instance, Ports>> = {};
  for (const [i, name] of instances.entries()) {
    const at = 7 + 4 * i;
    instance[name] = {
      ...ports,
      gw: port(at),
      admin: port(at + 1),
      stats: port(at + 2),
      ready: port(at + 3),
    };
  }
  return { ports, instance, nodeFloor: port(6) };
}

export function peerLabels(custom: Partial<PeerLabels> | undefined): PeerLabels {
  return {
    gw: 'gw',
    nginx: 'nginx',
    gwBaseline: 'gw plain',
    gwAccessLog: 'gw (access log)',
    nodeFloor: 'node-floor',
    agentgateway: 'agentgateway',
    ...custom,
  };
}

export function labelOf(l: PeerLabels, name: PeerName): string {
  switch (name) {
    case 'direct':
      return 'direct';
    case 'gw':
      return l.gw;
    case 'gw-log':
      return l.gwAccessLog;
    case 'gw-plain':
      return l.gwBaseline;
    case 'nginx':
      return l.nginx;
    case 'node-floor':
      return l.nodeFloor;
    case 'agentgateway':
      return l.agentgateway;
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

/** A gw peer (or its nginx stand-in) from the given scenario's config, listening on ports.gw. */
export async function startGwPeer(
  ctx: RunContext,
  mode: Mode,
  dir: string,
  name: 'gw' | 'gw-plain' | 'gw-log',
  scenario: Pick<Scenario, 'configure'>,
  ports: Ports,
  /** Applied to the scenario's gw config, e.g. withAccessLog. */
  edit: (yaml: string) => string = (yaml) => yaml,
): Promise<Tracked> {
  if (ctx.settings.standin) {
    const { nginxHttp } = scenario.configure({ mode, ports: { ...ports, nginx: ports.gw } });
    return startNginxPeer(mode, dir, nginxHttp, ports.gw, `${name}-standin`);
  }
  return startGw({
    name,
    gwBin: ctx.gwBin,
    workDir: dir,
    yaml: edit(scenario.configure({ mode, ports }).gwYaml),
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
    if (a.status !== direct.status || !sameBody(a.body, direct.body)) {
      const log =
        a.peer.proc === undefined ? '' : `\nlog ${a.peer.proc.logFile}:\n${logTail(a.peer.proc.logFile)}`;
      throw new Error(
        `${a.peer.name} answered ${a.status} ${JSON.stringify(a.body.slice(0, 200))}, direct answered ${direct.status} ${JSON.stringify(direct.body.slice(0, 200))}${log}`,
      );
    }
  }
}

/**
 * The same bytes, or the same JSON value: agentgateway's LLM layer parses the provider's answer and
 * writes it again (another key order), which is the same answer to a client.
 */
function sameBody(a: string, b: string): boolean {
  if (a === b) return true;
  try {
    return canonicalJson(JSON.parse(a)) === canonicalJson(JSON.parse(b));
  } catch {
    return false;
  }
}

function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const entries = Object.entries(v).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonicalJson(x)}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

/**
 * The scenario's proof that a proxy really runs what is measured (e.g. 401 without the token). For
 * agentgateway only the statuses: its response headers are its own (e.g. no x-ratelimit-* by default).
 */
async function checkExpectations(
  gw: Peer,
  cfg: ScenarioConfig,
  opts: { statusOnly: boolean } = { statusOnly: false },
): Promise<void> {
  for (const e of cfg.gwExpect ?? []) {
    const res = await fetchText(gw.url + cfg.load.path, loadRequest(cfg.load, e.headers));
    const missing = !opts.statusOnly && e.responseHeader !== undefined && !res.headers.has(e.responseHeader);
    if (res.status !== e.status || missing) {
      const log = gw.proc === undefined ? '' : `\nlog ${gw.proc.logFile}:\n${logTail(gw.proc.logFile)}`;
      throw new Error(
        `${gw.name} check "${e.what}": expected ${e.status}${e.responseHeader === undefined ? '' : ` with ${e.responseHeader}`}, ` +
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
  const settle = settings.quick ? SETTLE_MS / 2 : SETTLE_MS;
  const cpuUsPerRequest =
    peer.proc === undefined || saturation.ok === 0
      ? undefined
      : ((ticksAfter - ticksBefore) * 1e6) / clockTicksPerSecond() / saturation.ok;
  await sleep(settle);
  const latency = await runH2load({
    url: peer.url,
    load: cfg.load,
    seconds: settings.latencySeconds,
    cpus: mode.loadCpus,
    dir,
  });
  assertAlive(peer);
  await sleep(settle);
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

/** One number taken within a round, or undefined when a peer is missing from it. */
type PerRound = (r: Round) => number | undefined;
type FigureDef = readonly [key: string, label: string, unit: Unit, f: PerRound];

function perRound(rounds: readonly Round[], f: PerRound): number[] {
  const out: number[] = [];
  for (const r of rounds) {
    const v = f(r);
    if (v !== undefined) out.push(v);
  }
  return out;
}

const rps =
  (p: PeerName): PerRound =>
  (r) =>
    r.peers[p]?.saturation.rps;
const cpuPerRequest =
  (p: PeerName): PerRound =>
  (r) =>
    r.peers[p]?.cpuUsPerRequest;
const added =
  (p: PeerName, pct: 'p50Us' | 'p99Us'): PerRound =>
  (r) => {
    const peer = r.peers[p]?.latency[pct];
    const direct = r.peers.direct?.latency[pct];
    return peer === undefined || direct === undefined ? undefined : peer - direct;
  };
const ratio =
  (a: PerRound, b: PerRound): PerRound =>
  (r) => {
    const x = a(r);
    const y = b(r);
    return x === undefined || y === undefined || y === 0 ? undefined : x / y;
  };
const minus =
  (a: PerRound, b: PerRound): PerRound =>
  (r) => {
    const x = a(r);
    const y = b(r);
    return x === undefined || y === undefined ? undefined : x - y;
  };
const busy =
  (p: PeerName, side: 'proxyCpuBusy' | 'loadCpuBusy'): PerRound =>
  (r) => {
    const v = r.peers[p]?.[side];
    return v === undefined ? undefined : 100 * v;
  };

const MiB = (kib: number | undefined): number => (kib === undefined ? Number.NaN : kib / 1024);

/**
 * Figures taken within each round (so neighbours' noise hits both sides of a ratio alike), for the
 * proxies present: the feature's cost against the baseline and the access log's against logs off
 * first, then each gw peer against nginx, node-floor and agentgateway, then each proxy's own figures.
 */
function roundFigures(l: PeerLabels, present: readonly ProxyName[]): FigureDef[] {
  const has = (p: ProxyName): boolean => present.includes(p);
  const n = (p: PeerName): string => labelOf(l, p);
  const gws = GWS.filter(has);
  const out: FigureDef[] = [];
  if (has('gw-plain')) {
    out.push([
      'gw-vs-gw-plain-throughput',
      `Throughput ${n('gw')} / ${n('gw-plain')}`,
      'x',
      ratio(rps('gw'), rps('gw-plain')),
    ]);
  }
  if (has('gw-log')) {
    out.push([
      'gw-log-vs-gw-throughput',
      `Throughput ${n('gw-log')} / ${n('gw')}`,
      'x',
      ratio(rps('gw-log'), rps('gw')),
    ]);
  }
  for (const g of gws) {
    out.push([
      `${g}-vs-nginx-throughput`,
      `Throughput ${n(g)} / ${n('nginx')}`,
      'x',
      ratio(rps(g), rps('nginx')),
    ]);
  }
  // node-floor proxies without any of gw's work: every gw peer is priced against it. agentgateway runs
  // the scenario's config, so only the gw peers running that config (not the baseline) are.
  for (const ref of ['node-floor', 'agentgateway'] as const) {
    if (!has(ref)) continue;
    for (const g of gws) {
      if (ref === 'agentgateway' && g === 'gw-plain') continue;
      out.push([`${g}-vs-${ref}-throughput`, `Throughput ${n(g)} / ${n(ref)}`, 'x', ratio(rps(g), rps(ref))]);
      out.push([
        `${g}-vs-${ref}-cpu`,
        `CPU per request ${n(g)} / ${n(ref)}`,
        'x',
        ratio(cpuPerRequest(g), cpuPerRequest(ref)),
      ]);
    }
  }
  for (const p of present) {
    out.push([`${p}-vs-direct-throughput`, `Throughput ${n(p)} / direct`, 'x', ratio(rps(p), rps('direct'))]);
  }
  for (const p of present) {
    out.push([`${p}-cpu-per-request`, `CPU per request, ${n(p)}`, 'us', cpuPerRequest(p)]);
  }
  if (has('gw-plain')) {
    out.push([
      'gw-cpu-over-plain',
      `CPU per request, ${n('gw')} minus ${n('gw-plain')}`,
      'us',
      minus(cpuPerRequest('gw'), cpuPerRequest('gw-plain')),
    ]);
  }
  if (has('gw-log')) {
    out.push([
      'gw-log-cpu-over-gw',
      `CPU per request, ${n('gw-log')} minus ${n('gw')}`,
      'us',
      minus(cpuPerRequest('gw-log'), cpuPerRequest('gw')),
    ]);
  }
  for (const p of present) {
    out.push([`${p}-added-p50`, `Added p50 latency, ${n(p)}`, 'us', added(p, 'p50Us')]);
    out.push([`${p}-added-p99`, `Added p99 latency, ${n(p)}`, 'us', added(p, 'p99Us')]);
  }
  return out;
}

function contextFigures(l: PeerLabels, present: readonly ProxyName[], pinned: boolean): FigureDef[] {
  const n = (p: PeerName): string => labelOf(l, p);
  return [
    ...present.map((p): FigureDef => [`${p}-rps`, `Context: ${n(p)} throughput`, 'rps', rps(p)]),
    ['direct-rps', 'Context: direct throughput', 'rps', rps('direct')],
    ['direct-p50', 'Context: direct p50 at fixed rate', 'us', (r) => r.peers.direct?.latency.p50Us],
    ['direct-p99', 'Context: direct p99 at fixed rate', 'us', (r) => r.peers.direct?.latency.p99Us],
    // Whether a proxy used all of its CPUs at saturation, or was held back by the load side.
    ...present.map(
      (p): FigureDef => [
        `${p}-proxy-cpu-busy`,
        `Context: proxy CPUs busy, ${n(p)} saturation`,
        '%',
        busy(p, 'proxyCpuBusy'),
      ],
    ),
    // Only meaningful when the load side has CPUs of its own; the fastest proxies are the ones it caps.
    ...(pinned
      ? present
          .filter((p) => p === 'nginx' || p === 'agentgateway')
          .map(
            (p): FigureDef => [
              `${p}-load-cpu-busy`,
              `Context: load CPUs busy, ${n(p)} saturation`,
              '%',
              busy(p, 'loadCpuBusy'),
            ],
          )
      : []),
  ];
}

type Memory = Record<'idle' | 'peak' | 'hwm', Partial<Record<ProxyName, number>>>;

function figures(
  rounds: readonly Round[],
  mem: Memory,
  opts: { pinned: boolean; present: readonly ProxyName[]; labels: PeerLabels },
): Figure[] {
  const l = opts.labels;
  const fromRounds = (list: readonly FigureDef[]): Figure[] =>
    list.map(([key, label, unit, f]) => figure(key, label, unit, perRound(rounds, f)));
  const memory = opts.present.flatMap((p) => {
    const n = labelOf(l, p);
    return [
      figure(`${p}-rss-idle`, `RSS idle, ${n}`, 'MiB', [MiB(mem.idle[p])]),
      figure(`${p}-rss-peak`, `RSS peak (100 ms samples), ${n}`, 'MiB', [MiB(mem.peak[p])]),
      ...(p === 'gw'
        ? [figure('gw-rss-hwm', `RSS high-water mark (VmHWM), ${n}`, 'MiB', [MiB(mem.hwm.gw)])]
        : []),
    ];
  });
  return [
    ...fromRounds(roundFigures(l, opts.present)),
    ...memory,
    ...fromRounds(contextFigures(l, opts.present, opts.pinned)),
  ];
}

function notes(
  rounds: readonly Round[],
  mode: Mode,
  standin: boolean,
  labels: PeerLabels,
  /** Why agentgateway is not among the peers, when it is not. */
  opts: { agentgatewayOut: 'no binary' | 'no equivalent config' | undefined },
): string[] {
  const out: string[] = [];
  if (standin) out.push('STAND-IN RUN: "gw" is a second nginx, to test the harness only.');
  if (opts.agentgatewayOut === 'no binary') {
    out.push('agentgateway: skipped, no binary at ../shared/bin/agentgateway (or BENCH_AGENTGATEWAY_BIN).');
  } else if (opts.agentgatewayOut === 'no equivalent config') {
    out.push('agentgateway: not measured in this scenario, which has no equivalent agentgateway config.');
  }
  for (const name of ['direct', ...PROXIES] as const) {
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
    const n = labelOf(labels, name);
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
