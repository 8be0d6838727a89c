// Result files (bench/results/<date>-<scenario>.json) and the readable bench/RESULTS.md rebuilt from
// them: the newest full run of each scenario, falling back to the newest quick run, clearly marked.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Figure, LoadSpec, ModeResult, Settings } from '../scenarios/types.ts';
import type { MachineInfo } from './machine.ts';

export interface ResultFile {
  scenario: string;
  title: string;
  reference: string | null;
  date: string;
  startedAt: string;
  durationSeconds: number;
  quick: boolean;
  standin: boolean;
  machine: MachineInfo;
  settings: Omit<Settings, 'modes'>;
  load: LoadSpec;
  /** What one peer's measurement per round is, when not wrk then h2load (Scenario.describeLoad). */
  loadDescription?: string;
  modes: ModeResult[];
}

/** The modes a full run measures, as a result file lists them (a quick run measures pinned only). */
const USUAL_MODES = 'pinned+unpinned';
const modeNames = (r: Pick<ResultFile, 'modes'>): string => r.modes.map((m) => m.mode.name).join('+');

export function resultFileName(r: Pick<ResultFile, 'date' | 'scenario' | 'quick' | 'modes'>): string {
  // A quick check must never overwrite the day's full run, nor a run of some modes (BENCH_MODES) one
  // of the usual ones: each has its own suffix.
  const modes = modeNames(r);
  const usual = r.quick ? 'pinned' : USUAL_MODES;
  return `${r.date}-${r.scenario}${modes === usual ? '' : `.${modes}`}${r.quick ? '.quick' : ''}.json`;
}

function formatValue(v: number | null, unit: Figure['unit']): string {
  if (v === null || !Number.isFinite(v)) return '–';
  switch (unit) {
    case 'x':
      return `${v.toFixed(2)}×`;
    case 'us':
      if (Math.abs(v) >= 1000) return `${(v / 1000).toFixed(2)} ms`;
      return `${Math.abs(v) < 10 ? v.toFixed(1) : Math.round(v)} µs`;
    case 'MiB':
      return `${v.toFixed(1)} MiB`;
    case 'rps':
      return `${Math.round(v).toLocaleString('en-US')} req/s`;
    case '%':
      return `${Math.round(v)} %`;
    case 'count':
      return String(Math.round(v));
  }
}

function formatFigure(f: Figure): string {
  // JSON turns NaN into null, so values read back from files may be null.
  const med = f.median as number | null;
  if (f.n <= 1) return formatValue(med, f.unit);
  return `**${formatValue(med, f.unit)}** (${formatValue(f.min, f.unit)} – ${formatValue(f.max, f.unit)})`;
}

/** A table padded the way Biome formats Markdown, so `biome check .` accepts the generated file. */
function markdownTable(rows: readonly string[][]): string[] {
  const widths: number[] = [];
  for (const row of rows) {
    for (const [i, cell] of row.entries()) widths[i] = Math.max(widths[i] ?? 3, cell.length);
  }
  const line = (cells: readonly string[]): string =>
    `| ${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  const [head, ...body] = rows;
  if (head === undefined) return [];
  return [line(head), line(widths.map((w) => '-'.repeat(w))), ...body.map(line)];
}

export function renderSection(r: ResultFile, fileName: string): string {
  const s = r.settings;
  const kind = r.standin ? 'STAND-IN run' : r.quick ? 'QUICK run (indicative only)' : 'full run';
  const m = r.machine;
  const load =
    r.loadDescription ??
    `${s.saturationSeconds} s of wrk at ${r.load.connections} connections, then ${s.latencySeconds} s of ` +
      `h2load at ${r.load.rateRps} req/s over ${r.load.latencyConnections} connections`;
  const lines = [
    `## ${r.title}`,
    '',
    `\`${r.scenario}\` · ${r.date} · ${kind}: ${s.pairs} interleaved rounds per mode; per peer and round ` +
      `${load} · [results/${fileName}](results/${fileName})`,
    '',
    `Machine: ${m.nproc} × ${m.cpuModel} · Linux ${m.kernel} · Node ${m.node} · nginx ${m.nginx} · wrk ${m.wrk} · ` +
      `h2load ${m.h2load}${m.agentgateway === undefined ? '' : ` · agentgateway ${m.agentgateway}`} · gw ${m.gwRevision} · load average ${m.loadAverage.toFixed(2)} at start`,
    '',
  ];
  const keys: { key: string; label: string }[] = [];
  for (const mode of r.modes) {
    for (const f of mode.figures)
      if (!keys.some((k) => k.key === f.key)) keys.push({ key: f.key, label: f.label });
  }
  const rows = [
    ['Figure', ...r.modes.map((mr) => mr.mode.label)],
    ...keys.map(({ key, label }) => [
      label,
      ...r.modes.map((mr) => {
        const f = mr.figures.find((x) => x.key === key);
        return f === undefined ? '–' : formatFigure(f);
      }),
    ]),
  ];
  lines.push(...markdownTable(rows));
  const notes = r.modes.flatMap((mr: ModeResult) => mr.notes.map((n) => `- ${mr.mode.name}: ${n}`));
  if (notes.length > 0) lines.push('', 'Notes:', '', ...notes);
  if (r.reference !== null) lines.push('', `Reference: ${r.reference}`);
  lines.push('');
  return lines.join('\n');
}

const EXPLANATION = `## What the figures mean

- **Throughput gw / nginx**, **gw / direct**: requests per second served at saturation (wrk, closed
  loop, responses with status < 400 only), as a ratio of the two peers measured in the same round; the
  median over rounds, the min–max range in brackets. "direct" is wrk talking to the upstream with no
  proxy, the ceiling of the setup.
- **node-floor**: the least a Node proxy does per request (\`bench/peers/node-floor.ts\`: \`node:http\` in,
  an undici \`Pool\` out, no routing or logging), with gw's Node, its undici and its thread layout (one
  worker thread per worker, an idle main thread). "gw / node-floor" is what gw's own code costs on top
  of Node; "CPU per request gw / node-floor" is the issue's target ratio.
- **agentgateway**: the Rust original of gw's spec (\`../shared/bin/agentgateway\`, skipped when absent)
  with the scenario's config in its own words, its request log off and \`workerThreads\` equal to gw's
  workers; left out of a scenario without an equivalent config (the note says so).
- **gw (access log)** next to **gw (logs off)** (scenario 1): the same config with gw's default logging,
  the access log written to a file as a user's stdout would be; the difference is the log's cost.
- **gw plain** (scenarios that price a feature, e.g. 5): a second gw running scenario 1's config (no
  policies) on the same upstream and load, measured in the same rounds; "X / gw plain" and "CPU per
  request, X minus gw plain" are the cost of the feature itself.
- **CPU per request**: user + system CPU of the proxy's whole process tree (\`/proc/<pid>/stat\`
  utime+stime, children included) over the saturation run, divided by the requests it served. For nginx
  this is master + workers.
- **Added p50 / p99 latency**: at a fixed rate well below saturation (h2load \`--rps\`, an open-loop
  schedule per connection), the peer's percentile minus direct's percentile in the same round.
  Latency is timed by h2load from each request's actual send.
- **Streaming** (scenario 4): no wrk or h2load; a Node client times every SSE event of each stream,
  one stream at a time and then several at once. **TTFT** is request written → first event, the
  **per-chunk delay** is an event's arrival minus its send time at the upstream (one monotonic clock),
  the **inter-chunk gap** is between events of one stream; "added" is the peer's percentile minus
  direct's in the same round. **CPU per stream** is the proxy's CPU over the run / streams served.
- **MCP** (scenario 6): no wrk or h2load; a Node client (\`bench/lib/mcp-client.ts\`) sends raw JSON-RPC
  over one MCP session per connection and times each request to its parsed answer: tools/list and
  tools/call one at a time, then tools/call several at a time (requests/s there). "direct" is one
  target with no proxy; "direct to both targets" is the client listing both targets at once itself,
  the floor of a federated list on this machine. **CPU per request** is the proxy's CPU time over
  the timed phase (all its threads' \`schedstat\`, read by the client around the phase, so session
  set-up is left out) / requests answered.
- **RSS idle**: summed VmRSS of the process tree after it is ready and has proxied one request, before
  any load. **RSS peak**: the highest VmRSS sample (every 100 ms) during the warm-up and all rounds
  (for LLM streaming, all rounds: its warm-up runs 64 streams at once, more than the rounds do).
  **VmHWM**: the kernel's own high-water mark at the end (summed per process, so an upper bound for a
  multi-process tree).
- **Context** rows are absolute numbers; they depend on the machine and its neighbours and are not for
  comparison across runs.
- **Pinned** runs put the proxies (gw with \`workerThreads: 1\`, nginx with \`worker_processes 1\`, and the
  same for node-floor and agentgateway) on
  core 0 and the upstream, the load generators and the harness on core 1 (\`taskset\`): per-core
  figures. **Unpinned** runs use 2 workers each and let everything share all cores: the whole-machine
  figure.
- Rounds alternate their order (direct, gw, …, agentgateway, then agentgateway, …, gw, direct) so a
  drifting background load biases no peer.
- **bench/results/latest.json** holds the pinned 1-worker headline figures of each scenario, from the
  runs this file reports; \`make bench\` warns when plain CPU per request (gw, logs off) moves more than 5% from the
  committed value.
`;

/** 2: a full run of the usual modes; 1: a full run of some modes (BENCH_MODES); 0: a quick run. */
function rank(r: Pick<ResultFile, 'quick' | 'modes'>): number {
  if (r.quick) return 0;
  return modeNames(r) === USUAL_MODES ? 2 : 1;
}

/**
 * The result file each scenario is reported from: the newest full run of the usual modes, else the
 * newest run of some modes, else the newest quick run.
 */
export function newestResults(resultsDir: string): Map<string, { file: string; r: ResultFile }> {
  let files: string[] = [];
  try {
    files = readdirSync(resultsDir).filter((f) => f.endsWith('.json'));
  } catch {
    // No results yet.
  }
  const chosen = new Map<string, { file: string; r: ResultFile }>();
  for (const file of files) {
    let r: ResultFile;
    try {
      r = JSON.parse(readFileSync(join(resultsDir, file), 'utf8')) as ResultFile;
    } catch {
      continue;
    }
    // results/ also holds other measurements (bench/cel writes <date>-cel.json): only scenario runs here.
    if (!Array.isArray(r.modes) || typeof r.settings !== 'object' || r.settings === null) continue;
    if (r.standin) continue;
    const current = chosen.get(r.scenario);
    // A run of the usual modes beats a run of some of them (BENCH_MODES), which beats a quick run;
    // among equals the newest wins. So RESULTS.md shows one make bench run until the next one.
    const better =
      current === undefined ||
      rank(r) > rank(current.r) ||
      (rank(r) === rank(current.r) && r.startedAt > current.r.startedAt);
    if (better) chosen.set(r.scenario, { file, r });
  }
  return chosen;
}

/** Rebuilds RESULTS.md from every result file in resultsDir; returns the text written. */
export function writeResultsMarkdown(benchDir: string, scenarioOrder: readonly string[]): string {
  const chosen = newestResults(join(benchDir, 'results'));
  const ordered = [...chosen.keys()].sort((a, b) => {
    const ia = scenarioOrder.indexOf(a);
    const ib = scenarioOrder.indexOf(b);
    return (ia < 0 ? 1e9 : ia) - (ib < 0 ? 1e9 : ib) || a.localeCompare(b);
  });
  const header = `# Benchmark results

Generated by \`make bench\` (\`node bench/run.ts\`) from \`bench/results/\`; do not edit by hand. The
protocol is in the design notes (BENCHMARKS.md): peers are measured interleaved in one run and each
ratio is taken within a round, because the machines are shared and noisy; absolute numbers are context
only.
`;
  const sections = ordered.map((name) => {
    const c = chosen.get(name);
    return c === undefined ? '' : renderSection(c.r, c.file);
  });
  const text = [header, ...(sections.length > 0 ? sections : ['No results yet.\n']), EXPLANATION].join('\n');
  writeFileSync(join(benchDir, 'RESULTS.md'), text);
  return text;
}
