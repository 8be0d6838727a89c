// bench/results/latest.json: the headline pinned 1-worker figures of each scenario, one entry per
// scenario, each from the run RESULTS.md reports (a run of the usual modes over a newer run of some
// of them); and the check `make bench` ends with, that plain CPU per request has
// not moved more than 5% from the last committed value.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ModeResult } from '../scenarios/types.ts';
import { newestResults, type ResultFile } from './report.ts';

/** Our scenario slugs under the names the issue tracker uses. */
const NAMES: Readonly<Record<string, string>> = {
  'plain-http': 'plain',
  'large-body': 'large-body',
  llm: 'llm',
  'llm-stream': 'llm-stream',
  'policy-chain': 'policy-chain',
  mcp: 'mcp',
};
const ORDER = Object.values(NAMES);

/** A peer's own figures, next to gw's. */
export interface PeerFigures {
  cpu_us_per_request?: number;
  p50_added_ms?: number;
  p99_added_ms?: number;
  rss_idle_mib?: number;
  rss_peak_mib?: number;
}

export interface LatestEntry extends PeerFigures {
  scenario: string;
  /** Always the pinned mode: 1 worker on one core, the load on the other. */
  mode: 'pinned';
  workers: number;
  date: string;
  /** The result file the figures come from. */
  source: string;
  /** Throughput gw / nginx at saturation. */
  ratio_vs_nginx?: number;
  /** Throughput gw / node-floor at saturation. */
  ratio_vs_floor?: number;
  /** CPU per request gw / node-floor. */
  cpu_ratio_vs_floor?: number;
  ratio_vs_agentgateway?: number;
  cpu_ratio_vs_agentgateway?: number;
  /** What a figure means when it is not the proxy comparison's (e.g. per stream, time to first token). */
  note?: string;
  peers?: Record<string, PeerFigures>;
}

const round = (v: number, digits: number): number => Number(v.toFixed(digits));

function reader(mode: ModeResult): (key: string, scale?: number, digits?: number) => number | undefined {
  return (key, scale = 1, digits = 2) => {
    const f = mode.figures.find((x) => x.key === key);
    const v = f?.median as number | null | undefined;
    return v === undefined || v === null || !Number.isFinite(v) ? undefined : round(v * scale, digits);
  };
}

/** Drops the keys whose figure the run does not have. */
function defined<T extends object>(o: T): { [K in keyof T]: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as {
    [K in keyof T]: Exclude<T[K], undefined>;
  };
}

/** The entry of one result file, or undefined when it has no pinned mode or no name in the list. */
export function latestEntry(file: ResultFile, fileName: string): LatestEntry | undefined {
  const name = NAMES[file.scenario];
  const mode = file.modes.find((m) => m.mode.name === 'pinned');
  if (name === undefined || mode === undefined) return undefined;
  const get = reader(mode);
  const ms = 1 / 1000;
  const head = {
    scenario: name,
    mode: 'pinned' as const,
    workers: mode.mode.workers,
    date: file.date,
    source: fileName,
  };
  if (file.scenario === 'llm-stream') {
    const streamPeer = (id: string): PeerFigures | undefined => {
      const p = defined({
        cpu_us_per_request: get(`${id}-cpu-per-stream`, 1, 1),
        p50_added_ms: get(`${id}-added-ttft-sequential-p50`, ms, 3),
        p99_added_ms: get(`${id}-added-ttft-sequential-p99`, ms, 3),
        rss_idle_mib: get(`${id}-rss-idle`, 1, 1),
        rss_peak_mib: get(`${id}-rss-peak`, 1, 1),
      });
      return Object.keys(p).length === 0 ? undefined : p;
    };
    return defined({
      ...head,
      cpu_us_per_request: get('gw-cpu-per-stream', 1, 1),
      p50_added_ms: get('gw-added-ttft-sequential-p50', ms, 3),
      p99_added_ms: get('gw-added-ttft-sequential-p99', ms, 3),
      rss_idle_mib: get('gw-rss-idle', 1, 1),
      rss_peak_mib: get('gw-rss-peak', 1, 1),
      note: 'a request is one streamed completion: CPU per stream; added = time to first token, one stream at a time',
      peers: defined({
        'gw-baseline': streamPeer('gw-plain'),
        'node-floor': streamPeer('node-floor'),
        agentgateway: streamPeer('agentgateway'),
        nginx: streamPeer('nginx'),
      }),
    });
  }
  if (file.scenario === 'mcp') {
    const mcpPeer = (id: string): PeerFigures =>
      defined({
        cpu_us_per_request: get(`${id}-cpu-per-call-concurrent`, 1, 1),
        p50_added_ms: get(`${id}-added-call-p50`, ms, 3),
        p99_added_ms: get(`${id}-added-call-p99`, ms, 3),
        rss_idle_mib: get(`${id}-rss-idle`, 1, 1),
        rss_peak_mib: get(`${id}-rss-peak`, 1, 1),
      });
    const agw = mcpPeer('agentgateway');
    return defined({
      ...head,
      ...mcpPeer('gw'),
      ratio_vs_agentgateway: get('gw-vs-agentgateway-throughput'),
      note:
        'a request is one tools/call through an mcp backend of 2 targets: CPU per call 8 at a time; added = ' +
        'tools/call one at a time over one target reached directly (tools/list figures in the result file)',
      peers: defined({ agentgateway: Object.keys(agw).length === 0 ? undefined : agw }),
    });
  }
  const peer = (id: string): PeerFigures | undefined => {
    const p = defined({
      cpu_us_per_request: get(`${id}-cpu-per-request`, 1, 1),
      p50_added_ms: get(`${id}-added-p50`, ms, 3),
      p99_added_ms: get(`${id}-added-p99`, ms, 3),
      rss_idle_mib: get(`${id}-rss-idle`, 1, 1),
      rss_peak_mib: get(`${id}-rss-peak`, 1, 1),
    });
    return Object.keys(p).length === 0 ? undefined : p;
  };
  const peers = defined({
    'gw-access-log': peer('gw-log'),
    'gw-baseline': peer('gw-plain'),
    'node-floor': peer('node-floor'),
    agentgateway: peer('agentgateway'),
    nginx: peer('nginx'),
  });
  return defined({
    ...head,
    ratio_vs_nginx: get('gw-vs-nginx-throughput'),
    ratio_vs_floor: get('gw-vs-node-floor-throughput'),
    cpu_ratio_vs_floor: get('gw-vs-node-floor-cpu'),
    ratio_vs_agentgateway: get('gw-vs-agentgateway-throughput'),
    cpu_ratio_vs_agentgateway: get('gw-vs-agentgateway-cpu'),
    ...peer('gw'),
    peers,
  });
}

/** The file a run merges into: quick runs keep theirs out of git (results/*.quick.json is ignored). */
export function latestFile(benchDir: string, quick: boolean): string {
  return join(benchDir, 'results', quick ? 'latest.quick.json' : 'latest.json');
}

/** The entries of the newest full run of each scenario in results/ (quick runs are not kept in git). */
export function entriesFromResults(benchDir: string): LatestEntry[] {
  const out: LatestEntry[] = [];
  for (const { file, r } of newestResults(join(benchDir, 'results')).values()) {
    const entry = r.quick ? undefined : latestEntry(r, file);
    if (entry !== undefined) out.push(entry);
  }
  return out;
}

/**
 * What a run merges into its latest file: a quick run its own entries (latest.quick.json); a full
 * run, for every scenario, the entry of the run RESULTS.md reports, so that a run of some modes
 * (BENCH_MODES=pinned) does not replace the figures of a make bench run of the usual modes, in
 * latest.json any more than in RESULTS.md.
 */
export function entriesAfterRun(
  benchDir: string,
  ran: readonly LatestEntry[],
  quick: boolean,
): LatestEntry[] {
  return quick ? [...ran] : entriesFromResults(benchDir);
}

/**
 * Replaces the entries of the scenarios that ran and keeps the others; a scenario in neither comes from
 * `fallback` (e.g. entriesFromResults), so a list started late still names every scenario measured.
 */
export function mergeLatest(
  file: string,
  entries: readonly LatestEntry[],
  fallback: readonly LatestEntry[] = [],
): LatestEntry[] {
  let current: LatestEntry[] = [];
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as unknown;
    if (Array.isArray(parsed)) current = parsed as LatestEntry[];
  } catch {
    // None yet.
  }
  const ran = new Set(entries.map((e) => e.scenario));
  const kept = current.filter((e) => !ran.has(e.scenario));
  const known = new Set([...ran, ...kept.map((e) => e.scenario)]);
  const merged = [...kept, ...fallback.filter((e) => !known.has(e.scenario)), ...entries];
  const at = (s: string): number => (ORDER.includes(s) ? ORDER.indexOf(s) : ORDER.length);
  merged.sort((a, b) => at(a.scenario) - at(b.scenario) || a.scenario.localeCompare(b.scenario));
  writeFileSync(file, `${JSON.stringify(merged, null, 2)}\n`);
  return merged;
}

/** How far plain CPU per request may move from the committed value before `make bench` warns. */
export const DRIFT_LIMIT = 0.05;

/**
 * Plain CPU per request (gw, logs off, pinned) as last committed: HEAD's latest.json, else the newest
 * committed full plain-http result file.
 */
export function committedPlainCpu(repoRoot: string): { value: number; from: string } | undefined {
  const git = (args: string[]): string =>
    execFileSync('git', ['-C', repoRoot, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  try {
    const list = JSON.parse(git(['show', 'HEAD:bench/results/latest.json'])) as LatestEntry[];
    const plain = list.find((e) => e.scenario === 'plain');
    if (plain?.cpu_us_per_request !== undefined) {
      return { value: plain.cpu_us_per_request, from: 'HEAD:bench/results/latest.json' };
    }
  } catch {
    // Not committed yet: fall back to the result files.
  }
  try {
    const files = git(['ls-tree', '--name-only', 'HEAD', 'bench/results/'])
      .split('\n')
      .filter((f) => /\/\d{4}-\d{2}-\d{2}-plain-http\.json$/.test(f))
      .sort();
    const newest = files[files.length - 1];
    if (newest === undefined) return undefined;
    const file = JSON.parse(git(['show', `HEAD:${newest}`])) as ResultFile;
    const mode = file.modes.find((m) => m.mode.name === 'pinned');
    const value = mode === undefined ? undefined : reader(mode)('gw-cpu-per-request', 1, 1);
    return value === undefined ? undefined : { value, from: `HEAD:${newest}` };
  } catch {
    return undefined;
  }
}

/** The line `make bench` ends with when plain ran pinned: a WARNING past the limit, else a note. */
export function plainDriftLine(
  current: number,
  committed: { value: number; from: string } | undefined,
): string {
  if (committed === undefined)
    return `bench: plain CPU per request ${current} µs; no committed value to compare with`;
  const change = (current - committed.value) / committed.value;
  const pct = `${change >= 0 ? '+' : ''}${(100 * change).toFixed(1)}%`;
  const what = `plain CPU per request (gw, logs off, pinned) ${current} µs is ${pct} from the committed ${committed.value} µs (${committed.from})`;
  return Math.abs(change) > DRIFT_LIMIT
    ? `bench: WARNING: ${what}, more than ${100 * DRIFT_LIMIT}%`
    : `bench: ${what}, within ${100 * DRIFT_LIMIT}%`;
}
