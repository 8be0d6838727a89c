// The benchmark protocol for a streamed answer (SSE) through a proxy: direct, gw, gw-plain (when the
// scenario has a gwBaseline), nginx, node-floor and agentgateway (when the binary and an equivalent
// config exist) measured in interleaved rounds by llm-stream-client.ts, which
// times every event: time to first token one stream at a time and with several streams at once, the
// gap between events and each event's transit from the upstream. Figures are the proxy's value minus
// direct's in the same round, medians over rounds; CPU per stream comes from the proxy's /proc ticks.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type {
  Figure,
  Mode,
  ModeResult,
  PeerLabels,
  RunContext,
  Scenario,
  ScenarioResult,
} from '../scenarios/types.ts';
import { startAgentgateway } from './agentgateway.ts';
import type { ClientSummary, Distribution, PhaseSummary } from './llm-stream-client.ts';
import { waitForHttp } from './net.ts';
import { startNginxPeer } from './nginx.ts';
import { startNodeFloor } from './node-floor.ts';
import {
  clockTicksPerSecond,
  cpuTicks,
  logTail,
  processTree,
  RssSampler,
  runTool,
  spawnTracked,
  statusKiB,
  stopTracked,
  type Tracked,
} from './procs.ts';
import {
  allocatePorts,
  assertAlive,
  checkGwMetrics,
  labelOf,
  type PeerName,
  type ProxyName,
  peerLabels,
  startGwPeer,
} from './proxy-comparison.ts';
import { figure } from './stats.ts';

/** How many streams one peer's measurement in one round is made of. */
export interface StreamLoad {
  /** Streams one at a time: time to first token with nothing else in flight. */
  sequential: number;
  /** Then this many streams, `concurrency` at a time. */
  requests: number;
  concurrency: number;
  /** Upstream pacing, to stagger the concurrent streams' starts over one interval. */
  intervalMs: number;
}

export type StreamScenario = Pick<Scenario, 'name' | 'configure' | 'gwBaseline' | 'peerLabels'> & {
  /** The measured load, by mode of the run (quick or not). */
  streamLoad(quick: boolean): StreamLoad;
};

interface Peer {
  name: PeerName;
  url: string;
  proc: Tracked | undefined;
}

interface PeerMeasurement {
  summary: ClientSummary;
  /** Proxy CPU (user + system, whole tree) per stream served; undefined for direct. */
  cpuUsPerStream: number | undefined;
}

interface Round {
  order: PeerName[];
  peers: Partial<Record<PeerName, PeerMeasurement>>;
}

const SETTLE_MS = 200;
/** Streams at once during the warm-up (2,000 streams of ~0.13 s take about 4 s per peer). */
export const WARM_CONCURRENCY = 64;
/** Streams each peer serves, unrecorded, before the rounds. */
export const warmStreams = (quick: boolean): number => (quick ? 256 : 2000);

const clientScript = fileURLToPath(new URL('./llm-stream-client.ts', import.meta.url));

/** The upstream program next to this file, as an argv for UpstreamSpec. */
export function streamUpstreamArgv(opts: { port: number; chunks: number; intervalMs: number }): string[] {
  return [
    process.execPath,
    '--disable-warning=ExperimentalWarning',
    fileURLToPath(new URL('./llm-stream-upstream.ts', import.meta.url)),
    '--port',
    String(opts.port),
    '--chunks',
    String(opts.chunks),
    '--interval-ms',
    String(opts.intervalMs),
  ];
}

export async function runStreamComparison(
  ctx: RunContext,
  scenario: StreamScenario,
): Promise<ScenarioResult> {
  const modes: ModeResult[] = [];
  for (const mode of ctx.settings.modes) modes.push(await runMode(ctx, scenario, mode));
  return { modes };
}

async function runMode(ctx: RunContext, scenario: StreamScenario, mode: Mode): Promise<ModeResult> {
  const { settings } = ctx;
  const load = scenario.streamLoad(settings.quick);
  const baseline = scenario.gwBaseline;
  const plan = await allocatePorts([
    ...(baseline === undefined ? [] : (['gw-plain'] as const)),
    ...(ctx.agentgatewayBin === undefined ? [] : (['agentgateway'] as const)),
  ]);
  const { ports } = plan;
  const basePorts = plan.instance['gw-plain'];
  const cfg = scenario.configure({ mode, ports });
  if (cfg.upstream.kind !== 'command') throw new Error(`${scenario.name}: the upstream must be a command`);
  const labels = peerLabels(scenario.peerLabels);
  const dir = join(ctx.workDir, `${scenario.name}-${mode.name}`);
  mkdirSync(dir, { recursive: true });
  const bodyFile = join(dir, 'request.json');
  writeFileSync(bodyFile, cfg.load.body ?? '');
  const tag = `[${scenario.name} ${mode.name}]`;
  ctx.log(`${tag} ${mode.label}`);

  const started: Tracked[] = [];
  const samplers: RssSampler[] = [];
  try {
    const up = spawnTracked('upstream', cfg.upstream.argv, {
      cpus: mode.loadCpus,
      logFile: join(dir, 'upstream.log'),
    });
    started.push(up);
    await waitForHttp(`http://127.0.0.1:${ports.upstream}${cfg.upstream.readyPath}`, up, {
      timeoutMs: 10_000,
      status: 200,
    });
    const gwProc = await startGwPeer(ctx, mode, dir, 'gw', scenario, ports);
    started.push(gwProc);
    const plainProc =
      baseline === undefined || basePorts === undefined
        ? undefined
        : await startGwPeer(ctx, mode, dir, 'gw-plain', baseline, basePorts);
    if (plainProc !== undefined) started.push(plainProc);
    const nginxProc = await startNginxPeer(mode, dir, cfg.nginxHttp, ports.nginx);
    started.push(nginxProc);
    const floorProc = await startNodeFloor({
      workDir: dir,
      port: plan.nodeFloor,
      upstreamPort: ports.upstream,
      workers: mode.workers,
      cpus: mode.proxyCpus,
    });
    started.push(floorProc);
    const agwPorts = plan.instance.agentgateway;
    const agwYaml =
      agwPorts === undefined ? undefined : scenario.configure({ mode, ports: agwPorts }).agentgatewayYaml;
    const agwProc =
      ctx.agentgatewayBin === undefined || agwPorts === undefined || agwYaml === undefined
        ? undefined
        : await startAgentgateway({
            bin: ctx.agentgatewayBin,
            workDir: dir,
            yaml: agwYaml,
            readyPort: agwPorts.ready,
            cpus: mode.proxyCpus,
          });
    if (agwProc !== undefined) started.push(agwProc);

    const path = cfg.load.path;
    const peers: Peer[] = [
      { name: 'direct', url: `http://127.0.0.1:${ports.upstream}${path}`, proc: undefined },
      { name: 'gw', url: `http://127.0.0.1:${ports.gw}${path}`, proc: gwProc },
      ...(plainProc === undefined || basePorts === undefined
        ? []
        : [{ name: 'gw-plain' as const, url: `http://127.0.0.1:${basePorts.gw}${path}`, proc: plainProc }]),
      { name: 'nginx', url: `http://127.0.0.1:${ports.nginx}${path}`, proc: nginxProc },
      { name: 'node-floor', url: `http://127.0.0.1:${plan.nodeFloor}${path}`, proc: floorProc },
      ...(agwProc === undefined || agwPorts === undefined
        ? []
        : [{ name: 'agentgateway' as const, url: `http://127.0.0.1:${agwPorts.gw}${path}`, proc: agwProc }]),
    ];
    const client = (peer: Peer, l: Omit<StreamLoad, 'intervalMs'>, name: string): Promise<ClientSummary> =>
      runClient(peer, { ...l, intervalMs: load.intervalMs }, { dir, bodyFile, cpus: mode.loadCpus, name });

    // Every peer must deliver the stream direct delivers, event for event, before anything is timed.
    const probe = { sequential: 1, requests: 0, concurrency: 1 };
    const first = await Promise.all(peers.map((p) => client(p, probe, 'check')));
    const events = first[0]?.sequential.eventsMin ?? 0;
    peers.forEach((p, i) => {
      const s = first[i]?.sequential;
      if (s === undefined || s.failed > 0 || s.eventsMin !== events || s.eventsMax !== events || events < 2) {
        throw new Error(
          `${p.name} delivered ${s?.eventsMin}–${s?.eventsMax} events (${s?.failures.join('; ') || 'no failure'}), ` +
            `direct ${events}${p.proc === undefined ? '' : `\nlog ${p.proc.logFile}:\n${logTail(p.proc.logFile)}`}`,
        );
      }
    });
    if (!settings.standin) await checkGwMetrics({ proc: gwProc }, ports, cfg);

    await sleep(500);
    const proxies = peers.filter((p): p is Peer & { name: ProxyName; proc: Tracked } => p.proc !== undefined);
    const idleKiB: Partial<Record<ProxyName, number>> = {};
    const rss: Partial<Record<ProxyName, RssSampler>> = {};
    for (const p of proxies) idleKiB[p.name] = statusKiB(processTree(p.proc.pid), 'VmRSS');

    // Warm-up, not recorded: connection pools, and the JIT. A proxy meets a new request once per
    // stream, so a few streams leave its request path in V8's interpreter (measured on gw, one
    // worker, 40 streams one at a time: 1.1–1.2 ms to first token after 18 warm-up streams, 0.8 ms
    // after 2,000), which no gateway with steady traffic runs; a Node peer's figures would be its
    // JIT's warm-up. So each peer serves many streams at once first, a few seconds' worth.
    const warm = { sequential: 2, requests: warmStreams(settings.quick), concurrency: WARM_CONCURRENCY };
    for (const peer of peers) await client(peer, warm, 'warm');
    // Peak RSS is sampled from here: the warm-up's 64 streams at once are not the measured load.
    for (const p of proxies) {
      const sampler = new RssSampler(p.proc.pid);
      rss[p.name] = sampler;
      samplers.push(sampler);
    }

    const rounds: Round[] = [];
    for (let r = 0; r < settings.pairs; r++) {
      const order = r % 2 === 0 ? peers : [...peers].reverse();
      const round: Round = { order: order.map((p) => p.name), peers: {} };
      for (const peer of order) {
        const before = peer.proc === undefined ? 0 : cpuTicks(processTree(peer.proc.pid));
        const summary = await client(peer, load, `r${r + 1}`);
        const after = peer.proc === undefined ? 0 : cpuTicks(processTree(peer.proc.pid));
        assertAlive(peer);
        const streams =
          summary.sequential.streams -
          summary.sequential.failed +
          summary.concurrent.streams -
          summary.concurrent.failed;
        round.peers[peer.name] = {
          summary,
          cpuUsPerStream:
            peer.proc === undefined || streams === 0
              ? undefined
              : ((after - before) * 1e6) / clockTicksPerSecond() / streams,
        };
        await sleep(SETTLE_MS);
      }
      rounds.push(round);
      ctx.log(`${tag} round ${r + 1}/${settings.pairs}: ${describeRound(round)}`);
    }
    const peakKiB: Partial<Record<ProxyName, number>> = {};
    for (const p of proxies) {
      rss[p.name]?.stop();
      peakKiB[p.name] = rss[p.name]?.peakKiB ?? Number.NaN;
    }
    return {
      mode,
      figures: figures(rounds, { idle: idleKiB, peak: peakKiB }, labels, {
        present: proxies.map((p) => p.name),
        events,
      }),
      notes: notes(rounds, events, labels, settings.standin),
      raw: {
        ports: { ...ports, nodeFloor: plan.nodeFloor, instances: plan.instance },
        load,
        eventsPerStream: events,
        memoryKiB: { idle: idleKiB, peak: peakKiB },
        rounds,
      },
    };
  } finally {
    for (const s of samplers) s.stop();
    for (const t of started.reverse()) await stopTracked(t);
  }
}

let clientRuns = 0;

async function runClient(
  peer: Peer,
  load: StreamLoad,
  opts: { dir: string; bodyFile: string; cpus: string | undefined; name: string },
): Promise<ClientSummary> {
  const id = ++clientRuns;
  const out = join(opts.dir, `client-${id}-${peer.name}-${opts.name}.json`);
  const argv = [
    process.execPath,
    '--disable-warning=ExperimentalWarning',
    clientScript,
    '--url',
    peer.url,
    '--body-file',
    opts.bodyFile,
    '--sequential',
    String(load.sequential),
    '--requests',
    String(load.requests),
    '--concurrency',
    String(load.concurrency),
    '--stagger-us',
    String(Math.round((load.intervalMs * 1000) / load.concurrency)),
    '--timeout-ms',
    '10000',
    '--out',
    out,
  ];
  // Bounded: every stream has a 10 s deadline, and the whole run one sized for its streams.
  const streams = load.sequential + load.requests;
  const { status, stdout } = await runTool('stream-client', argv, {
    cpus: opts.cpus,
    logFile: join(opts.dir, `client-${id}.log`),
    timeoutMs: 30_000 + streams * 2_000,
  });
  if (status !== 0) throw new Error(`llm-stream client failed (${status}) against ${peer.name}:\n${stdout}`);
  return JSON.parse(readFileSync(out, 'utf8')) as ClientSummary;
}

function describeRound(round: Round): string {
  return round.order
    .map((name) => {
      const m = round.peers[name];
      if (m === undefined) return `${name} -`;
      const s = m.summary;
      const cpu = m.cpuUsPerStream === undefined ? '' : ` ${Math.round(m.cpuUsPerStream)} µs/stream`;
      return (
        `${name} ttft ${s.sequential.ttft.p50Us}/${s.concurrent.ttft.p50Us} µs ` +
        `transit p50/p99 ${s.concurrent.transit.p50Us}/${s.concurrent.transit.p99Us} µs${cpu}`
      );
    })
    .join(' | ');
}

type Phase = 'sequential' | 'concurrent';
type Metric = 'ttft' | 'gap' | 'transit';
type Pct = 'p50Us' | 'p99Us';

const of = (m: PeerMeasurement | undefined, phase: Phase, metric: Metric, pct: Pct): number | undefined => {
  const d: Distribution | undefined = m?.summary[phase][metric];
  return d === undefined || d.n === 0 ? undefined : d[pct];
};

/** The peer's value minus direct's in each round where both were measured. */
function added(rounds: readonly Round[], peer: ProxyName, phase: Phase, metric: Metric, pct: Pct): number[] {
  const out: number[] = [];
  for (const r of rounds) {
    const p = of(r.peers[peer], phase, metric, pct);
    const d = of(r.peers.direct, phase, metric, pct);
    if (p !== undefined && d !== undefined) out.push(p - d);
  }
  return out;
}

function values(rounds: readonly Round[], f: (r: Round) => number | undefined): number[] {
  const out: number[] = [];
  for (const r of rounds) {
    const v = f(r);
    if (v !== undefined) out.push(v);
  }
  return out;
}

const MiB = (kib: number | undefined): number => (kib === undefined ? Number.NaN : kib / 1024);

function figures(
  rounds: readonly Round[],
  mem: Record<'idle' | 'peak', Partial<Record<ProxyName, number>>>,
  l: PeerLabels,
  opts: { present: readonly ProxyName[]; events: number },
): Figure[] {
  const { events } = opts;
  const baseline = opts.present.includes('gw-plain');
  const proxies = opts.present.map((p): [ProxyName, string] => [p, labelOf(l, p)]);
  const out: Figure[] = [];
  const addedRows = (
    phase: Phase,
    metric: Metric,
    pct: Pct,
    what: string,
    peers: readonly [ProxyName, string][] = proxies,
  ): void => {
    for (const [name, label] of peers) {
      out.push(
        figure(
          `${name}-added-${metric}-${phase}-${pct.slice(0, 3)}`,
          `${what}, ${label}`,
          'us',
          added(rounds, name, phase, metric, pct),
        ),
      );
    }
  };
  addedRows('sequential', 'ttft', 'p50Us', 'Added TTFT p50, one stream at a time');
  addedRows('sequential', 'ttft', 'p99Us', 'Added TTFT p99, one stream at a time');
  addedRows('concurrent', 'ttft', 'p50Us', 'Added TTFT p50, streams at once');
  addedRows('concurrent', 'ttft', 'p99Us', 'Added TTFT p99, streams at once');
  addedRows('sequential', 'transit', 'p50Us', 'Added per-chunk delay p50, one stream at a time');
  addedRows('sequential', 'transit', 'p99Us', 'Added per-chunk delay p99, one stream at a time');
  addedRows('concurrent', 'transit', 'p50Us', 'Added per-chunk delay p50, streams at once');
  addedRows('concurrent', 'transit', 'p99Us', 'Added per-chunk delay p99, streams at once');
  // The gap's p50 mostly mirrors the upstream timer's lateness: the per-chunk delay is the cleaner
  // measure of what a proxy adds; the gap's p99 shows the jitter it adds.
  addedRows('concurrent', 'gap', 'p99Us', 'Added inter-chunk gap p99, streams at once');
  const cpu = (name: ProxyName) => (r: Round) => r.peers[name]?.cpuUsPerStream;
  for (const [name, label] of proxies) {
    out.push(figure(`${name}-cpu-per-stream`, `CPU per stream, ${label}`, 'us', values(rounds, cpu(name))));
  }
  for (const [name, label] of proxies) {
    const perChunk = (r: Round): number | undefined => {
      const m = r.peers[name];
      return m?.cpuUsPerStream === undefined ? undefined : m.cpuUsPerStream / events;
    };
    out.push(
      figure(
        `${name}-cpu-per-chunk`,
        `CPU per chunk (per stream / ${events}), ${label}`,
        'us',
        values(rounds, perChunk),
      ),
    );
  }
  if (baseline) {
    out.push(
      figure(
        'gw-cpu-per-stream-over-plain',
        `CPU per stream, ${l.gw} minus ${l.gwBaseline}`,
        'us',
        values(rounds, (r) => {
          const a = r.peers.gw?.cpuUsPerStream;
          const b = r.peers['gw-plain']?.cpuUsPerStream;
          return a === undefined || b === undefined ? undefined : a - b;
        }),
      ),
    );
  }
  for (const [name, label] of proxies) {
    out.push(figure(`${name}-rss-idle`, `RSS idle, ${label}`, 'MiB', [MiB(mem.idle[name])]));
    out.push(figure(`${name}-rss-peak`, `RSS peak (100 ms samples), ${label}`, 'MiB', [MiB(mem.peak[name])]));
  }
  const direct = (phase: Phase, metric: Metric, pct: Pct) => (r: Round) =>
    of(r.peers.direct, phase, metric, pct);
  const context: [string, string, Phase, Metric, Pct][] = [
    [
      'direct-ttft-sequential-p50',
      'Context: direct TTFT p50, one stream at a time',
      'sequential',
      'ttft',
      'p50Us',
    ],
    [
      'direct-ttft-concurrent-p50',
      'Context: direct TTFT p50, streams at once',
      'concurrent',
      'ttft',
      'p50Us',
    ],
    [
      'direct-transit-concurrent-p50',
      'Context: direct per-chunk delay p50, streams at once',
      'concurrent',
      'transit',
      'p50Us',
    ],
    [
      'direct-gap-concurrent-p50',
      'Context: direct inter-chunk gap p50, streams at once',
      'concurrent',
      'gap',
      'p50Us',
    ],
    [
      'direct-gap-concurrent-p99',
      'Context: direct inter-chunk gap p99, streams at once',
      'concurrent',
      'gap',
      'p99Us',
    ],
  ];
  for (const [key, label, phase, metric, pct] of context) {
    out.push(figure(key, label, 'us', values(rounds, direct(phase, metric, pct))));
  }
  return out;
}

function notes(rounds: readonly Round[], events: number, l: PeerLabels, standin: boolean): string[] {
  const out: string[] = [];
  if (standin) out.push('STAND-IN RUN: "gw" is a second nginx, to test the harness only.');
  for (const name of ['direct', 'gw', 'gw-plain', 'nginx', 'node-floor', 'agentgateway'] as const) {
    let failed = 0;
    let short = 0;
    const failures = new Set<string>();
    for (const r of rounds) {
      const m = r.peers[name];
      if (m === undefined) continue;
      for (const phase of [m.summary.sequential, m.summary.concurrent] as PhaseSummary[]) {
        failed += phase.failed;
        for (const f of phase.failures) failures.add(f);
        if (phase.streams > phase.failed && (phase.eventsMin !== events || phase.eventsMax !== events))
          short++;
      }
    }
    if (failed > 0) out.push(`${labelOf(l, name)}: ${failed} failed streams (${[...failures].join('; ')}).`);
    if (short > 0)
      out.push(`${labelOf(l, name)}: streams with another event count than ${events} in ${short} phase(s).`);
  }
  return out;
}
