// The benchmark protocol for MCP federation: two MCP upstreams, then direct (the client on one target),
// direct-both (the client fanning tools/list out to both targets itself: the floor of a federated
// list here), gw's mcp backend over both and agentgateway's (when the binary is there) measured in
// interleaved rounds by mcp-client.ts, which times tools/list and tools/call one at a time and tools/call several
// at a time, and reads the proxy's CPU time around each timed phase. Figures are the proxy's value
// minus direct's in the same round, medians over rounds.
import { mkdirSync, readFileSync } from 'node:fs';
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
import { startGw } from './gw.ts';
import type { ClientSummary, PhaseSummary } from './mcp-client.ts';
import { freePorts, waitForHttp } from './net.ts';
import {
  logTail,
  processTree,
  RssSampler,
  runTool,
  spawnTracked,
  statusKiB,
  stopTracked,
  type Tracked,
} from './procs.ts';
import { allocatePorts, labelOf, peerLabels } from './proxy-comparison.ts';
import { figure } from './stats.ts';

/** How many requests one peer's measurement in one round is made of. */
export interface McpLoad {
  /** tools/list, then tools/call, this many each, one at a time: latency with nothing else in flight. */
  sequential: number;
  /** Then this many tools/call, `concurrency` at a time (each worker on its own session). */
  requests: number;
  concurrency: number;
}

export type McpScenario = Pick<Scenario, 'name' | 'configure' | 'peerLabels'> & {
  mcpLoad(quick: boolean): McpLoad;
  /** Target names, in the order of targetPorts; the first serves the timed tool. */
  targets: readonly string[];
  /** Tools each target serves, `echo` among them. */
  toolsPerTarget: number;
};

type PeerName = 'direct' | 'direct-both' | 'gw' | 'agentgateway';
type ProxyName = Exclude<PeerName, 'direct' | 'direct-both'>;
const PEERS: readonly PeerName[] = ['direct', 'direct-both', 'gw', 'agentgateway'];
const label = (l: PeerLabels, name: PeerName): string =>
  name === 'direct-both' ? 'direct to both targets' : labelOf(l, name);

interface Peer {
  name: PeerName;
  url: string;
  /** direct-both: the second target, which the client lists at the same time as the first. */
  url2?: string;
  /** The tool to call and how many tools tools/list must answer. */
  tool: string;
  tools: number;
  proc: Tracked | undefined;
}

interface Round {
  order: PeerName[];
  peers: Partial<Record<PeerName, ClientSummary>>;
}

const SETTLE_MS = 200;
const clientScript = fileURLToPath(new URL('./mcp-client.ts', import.meta.url));

/** The upstream program next to this file, as an argv. */
export function mcpUpstreamArgv(port: number, name: string): string[] {
  return [
    process.execPath,
    '--disable-warning=ExperimentalWarning',
    fileURLToPath(new URL('./mcp-upstream.ts', import.meta.url)),
    '--port',
    String(port),
    '--name',
    name,
  ];
}

export async function runMcpComparison(ctx: RunContext, scenario: McpScenario): Promise<ScenarioResult> {
  if (ctx.settings.standin) throw new Error(`${scenario.name}: nginx cannot stand in for an MCP gateway`);
  const modes: ModeResult[] = [];
  for (const mode of ctx.settings.modes) modes.push(await runMode(ctx, scenario, mode));
  return { modes };
}

async function runMode(ctx: RunContext, scenario: McpScenario, mode: Mode): Promise<ModeResult> {
  const { settings } = ctx;
  const load = scenario.mcpLoad(settings.quick);
  const plan = await allocatePorts(ctx.agentgatewayBin === undefined ? [] : ['agentgateway']);
  const [upstream2] = await freePorts(1);
  if (upstream2 === undefined) throw new Error('could not allocate ports');
  const ports = { ...plan.ports, upstream2 };
  const cfg = scenario.configure({ mode, ports });
  const labels = peerLabels(scenario.peerLabels);
  const dir = join(ctx.workDir, `${scenario.name}-${mode.name}`);
  mkdirSync(dir, { recursive: true });
  const tag = `[${scenario.name} ${mode.name}]`;
  ctx.log(`${tag} ${mode.label}`);

  const started: Tracked[] = [];
  const samplers: RssSampler[] = [];
  try {
    // Both targets with the load, off the proxy's core: as the client, they are not what is measured.
    const [first, second] = scenario.targets;
    if (first === undefined || second === undefined) throw new Error(`${scenario.name}: two targets needed`);
    const targets: [string, number][] = [
      [first, ports.upstream],
      [second, upstream2],
    ];
    for (const [name, port] of targets) {
      const up = spawnTracked(`upstream-${name}`, mcpUpstreamArgv(port, name), {
        cpus: mode.loadCpus,
        logFile: join(dir, `upstream-${name}.log`),
      });
      started.push(up);
      await waitForHttp(`http://127.0.0.1:${port}/`, up, { timeoutMs: 10_000, status: 200 });
    }
    const gwProc = await startGw({
      gwBin: ctx.gwBin,
      workDir: dir,
      yaml: cfg.gwYaml,
      readyPort: ports.ready,
      cpus: mode.proxyCpus,
    });
    started.push(gwProc);
    const agwPorts = plan.instance.agentgateway;
    const agwYaml =
      agwPorts === undefined
        ? undefined
        : scenario.configure({ mode, ports: { ...agwPorts, upstream2 } }).agentgatewayYaml;
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
    const federated = { tool: `${first}_echo`, tools: scenario.targets.length * scenario.toolsPerTarget };
    const peers: Peer[] = [
      {
        name: 'direct',
        url: `http://127.0.0.1:${ports.upstream}${path}`,
        tool: 'echo',
        tools: scenario.toolsPerTarget,
        proc: undefined,
      },
      {
        name: 'direct-both',
        url: `http://127.0.0.1:${ports.upstream}${path}`,
        url2: `http://127.0.0.1:${upstream2}${path}`,
        tool: 'echo',
        tools: scenario.targets.length * scenario.toolsPerTarget,
        proc: undefined,
      },
      { name: 'gw', url: `http://127.0.0.1:${ports.gw}${path}`, ...federated, proc: gwProc },
      ...(agwProc === undefined || agwPorts === undefined
        ? []
        : [
            {
              name: 'agentgateway' as const,
              url: `http://127.0.0.1:${agwPorts.gw}${path}`,
              ...federated,
              proc: agwProc,
            },
          ]),
    ];
    ctx.log(`${tag} peers: ${peers.map((p) => p.name).join(', ')}`);
    const client = (peer: Peer, l: McpLoad, name: string): Promise<ClientSummary> =>
      runClient(peer, l, { dir, cpus: mode.loadCpus, name });

    // Every peer must list the merged tools and echo through the prefixed name before anything is timed.
    const probe = { sequential: 2, requests: 4, concurrency: 2 };
    const checked = await Promise.all(peers.map((p) => client(p, probe, 'check')));
    peers.forEach((p, i) => {
      const s = checked[i];
      const failed = s === undefined ? [] : [s.list, s.call, s.callConcurrent].filter((x) => x.failed > 0);
      if (s === undefined || failed.length > 0) {
        throw new Error(
          `${p.name} failed the check: ${failed.flatMap((x) => x.failures).join('; ')}` +
            `${p.proc === undefined ? '' : `\nlog ${p.proc.logFile}:\n${logTail(p.proc.logFile)}`}`,
        );
      }
    });

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

    // Warm-up, not recorded: JIT, connection pools, upstream sessions.
    const warm = {
      sequential: Math.ceil(load.sequential / 2),
      requests: Math.ceil(load.requests / 2),
      concurrency: load.concurrency,
    };
    for (const peer of peers) await client(peer, warm, 'warm');

    const rounds: Round[] = [];
    for (let r = 0; r < settings.pairs; r++) {
      const order = r % 2 === 0 ? peers : [...peers].reverse();
      const round: Round = { order: order.map((p) => p.name), peers: {} };
      for (const peer of order) {
        round.peers[peer.name] = await client(peer, load, `r${r + 1}`);
        if (peer.proc?.exitStatus !== undefined) {
          throw new Error(
            `${peer.name} exited (${peer.proc.exitStatus}); log ${peer.proc.logFile}:\n${logTail(peer.proc.logFile)}`,
          );
        }
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
    const present = proxies.map((p) => p.name);
    return {
      mode,
      figures: figures(rounds, { idle: idleKiB, peak: peakKiB }, labels, present),
      notes: notes(rounds, labels, ctx.agentgatewayBin === undefined),
      raw: {
        ports: { ...ports, instances: plan.instance },
        load,
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
  load: McpLoad,
  opts: { dir: string; cpus: string | undefined; name: string },
): Promise<ClientSummary> {
  const id = ++clientRuns;
  const out = join(opts.dir, `client-${id}-${peer.name}-${opts.name}.json`);
  const argv = [
    process.execPath,
    '--disable-warning=ExperimentalWarning',
    clientScript,
    '--url',
    peer.url,
    '--tool',
    peer.tool,
    '--tools',
    String(peer.tools),
    // direct-both prices the federated list only: its calls would be direct's.
    ...(peer.url2 === undefined ? [] : ['--url2', peer.url2]),
    '--lists',
    String(load.sequential),
    '--calls',
    String(peer.url2 === undefined ? load.sequential : 0),
    '--concurrent-calls',
    String(peer.url2 === undefined ? load.requests : 0),
    '--concurrency',
    String(load.concurrency),
    ...(peer.proc === undefined ? [] : ['--cpu-pid', String(peer.proc.pid)]),
    '--timeout-ms',
    '10000',
    '--out',
    out,
  ];
  // Bounded: every request has a 10 s deadline, and the whole run one sized for its requests.
  const requests = 2 * load.sequential + load.requests;
  const { status, stdout } = await runTool('mcp-client', argv, {
    cpus: opts.cpus,
    logFile: join(opts.dir, `client-${id}.log`),
    timeoutMs: 30_000 + requests * 50,
  });
  if (status !== 0) throw new Error(`mcp client failed (${status}) against ${peer.name}:\n${stdout}`);
  return JSON.parse(readFileSync(out, 'utf8')) as ClientSummary;
}

type Phase = 'list' | 'call' | 'callConcurrent';
type Pct = 'p50Us' | 'p99Us';
const PHASES: readonly [Phase, string, string][] = [
  ['list', 'list', 'tools/list one at a time'],
  ['call', 'call', 'tools/call one at a time'],
  ['callConcurrent', 'call-concurrent', 'tools/call 8 at a time'],
];

function describeRound(round: Round): string {
  return round.order
    .map((name) => {
      const s = round.peers[name];
      if (s === undefined) return `${name} -`;
      if (name === 'direct-both') return `${name} list p50 ${s.list.latency.p50Us} µs`;
      const cpu =
        s.callConcurrent.cpuNs === undefined ? '' : ` ${Math.round(cpuUs(s.callConcurrent) ?? 0)} µs/call`;
      return (
        `${name} list/call p50 ${s.list.latency.p50Us}/${s.call.latency.p50Us} µs, ` +
        `${Math.round(s.callConcurrent.rps)} calls/s${cpu}`
      );
    })
    .join(' | ');
}

/** Proxy CPU per answered request of a phase, in µs. */
function cpuUs(p: PhaseSummary): number | undefined {
  const ok = p.requests - p.failed;
  return p.cpuNs === undefined || ok <= 0 ? undefined : p.cpuNs / 1000 / ok;
}

function values(rounds: readonly Round[], f: (r: Round) => number | undefined): number[] {
  const out: number[] = [];
  for (const r of rounds) {
    const v = f(r);
    if (v !== undefined && Number.isFinite(v)) out.push(v);
  }
  return out;
}

const pct = (s: ClientSummary | undefined, phase: Phase, p: Pct): number | undefined => {
  const d = s?.[phase].latency;
  return d === undefined || d.n === 0 ? undefined : d[p];
};

const MiB = (kib: number | undefined): number => (kib === undefined ? Number.NaN : kib / 1024);

function figures(
  rounds: readonly Round[],
  mem: Record<'idle' | 'peak', Partial<Record<ProxyName, number>>>,
  l: PeerLabels,
  present: readonly ProxyName[],
): Figure[] {
  const out: Figure[] = [];
  const minus =
    (name: PeerName, floor: PeerName, phase: Phase, p: Pct) =>
    (r: Round): number | undefined => {
      const a = pct(r.peers[name], phase, p);
      const d = pct(r.peers[floor], phase, p);
      return a === undefined || d === undefined ? undefined : a - d;
    };
  for (const [phase, key, what] of PHASES) {
    for (const p of ['p50Us', 'p99Us'] as const) {
      for (const name of present) {
        const added = minus(name, 'direct', phase, p);
        out.push(
          figure(
            `${name}-added-${key}-${p.slice(0, 3)}`,
            `Added ${p.slice(0, 3)}, ${what}, ${label(l, name)}`,
            'us',
            values(rounds, added),
          ),
        );
      }
    }
  }
  // What a gateway adds to a federated list beyond the fan-out itself on this machine.
  for (const p of ['p50Us', 'p99Us'] as const) {
    for (const name of present) {
      out.push(
        figure(
          `${name}-added-list-over-both-${p.slice(0, 3)}`,
          `Added ${p.slice(0, 3)} over ${label(l, 'direct-both')}, tools/list one at a time, ${label(l, name)}`,
          'us',
          values(rounds, minus(name, 'direct-both', 'list', p)),
        ),
      );
    }
  }
  for (const name of PEERS) {
    if (name === 'direct-both' || (name !== 'direct' && !present.includes(name))) continue;
    out.push(
      figure(
        `${name}-rps-call-concurrent`,
        `Throughput, tools/call 8 at a time, ${label(l, name)}`,
        'rps',
        values(rounds, (r) => r.peers[name]?.callConcurrent.rps),
      ),
    );
  }
  for (const name of present) {
    out.push(
      figure(
        `${name}-vs-direct-throughput`,
        `Throughput ${label(l, name)} / direct, tools/call 8 at a time`,
        'x',
        values(rounds, (r) => {
          const a = r.peers[name]?.callConcurrent.rps;
          const d = r.peers.direct?.callConcurrent.rps;
          return a === undefined || d === undefined || d === 0 ? undefined : a / d;
        }),
      ),
    );
  }
  if (present.includes('agentgateway')) {
    out.push(
      figure(
        'gw-vs-agentgateway-throughput',
        `Throughput ${label(l, 'gw')} / ${label(l, 'agentgateway')}, tools/call 8 at a time`,
        'x',
        values(rounds, (r) => {
          const a = r.peers.gw?.callConcurrent.rps;
          const b = r.peers.agentgateway?.callConcurrent.rps;
          return a === undefined || b === undefined || b === 0 ? undefined : a / b;
        }),
      ),
    );
  }
  for (const [phase, key, what] of PHASES) {
    for (const name of present) {
      out.push(
        figure(
          `${name}-cpu-per-${key}`,
          `CPU per request, ${what}, ${label(l, name)}`,
          'us',
          values(rounds, (r) => {
            const s = r.peers[name];
            return s === undefined ? undefined : cpuUs(s[phase]);
          }),
        ),
      );
    }
  }
  for (const name of present) {
    out.push(figure(`${name}-rss-idle`, `RSS idle, ${label(l, name)}`, 'MiB', [MiB(mem.idle[name])]));
    out.push(
      figure(`${name}-rss-peak`, `RSS peak (100 ms samples), ${label(l, name)}`, 'MiB', [
        MiB(mem.peak[name]),
      ]),
    );
  }
  out.push(
    figure(
      'direct-both-list-p50',
      `Context: ${label(l, 'direct-both')} p50, tools/list one at a time`,
      'us',
      values(rounds, (r) => pct(r.peers['direct-both'], 'list', 'p50Us')),
    ),
  );
  for (const [phase, key, what] of PHASES) {
    out.push(
      figure(
        `direct-${key}-p50`,
        `Context: direct p50, ${what}`,
        'us',
        values(rounds, (r) => pct(r.peers.direct, phase, 'p50Us')),
      ),
    );
  }
  return out;
}

function notes(rounds: readonly Round[], l: PeerLabels, noAgentgateway: boolean): string[] {
  const out: string[] = [];
  if (noAgentgateway)
    out.push('agentgateway: no binary at ../shared/bin/agentgateway, its peer is left out.');
  for (const name of PEERS) {
    let failed = 0;
    const failures = new Set<string>();
    for (const r of rounds) {
      const s = r.peers[name];
      if (s === undefined) continue;
      for (const p of [s.list, s.call, s.callConcurrent]) {
        failed += p.failed;
        for (const f of p.failures) failures.add(f);
      }
    }
    if (failed > 0) out.push(`${label(l, name)}: ${failed} failed requests (${[...failures].join('; ')}).`);
  }
  return out;
}
