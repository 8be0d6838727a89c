// Benchmark entry (`make bench`): runs each scenario's interleaved protocol, writes
// bench/results/<date>-<scenario>.json, merges the headline figures into bench/results/latest.json,
// rebuilds bench/RESULTS.md and warns when plain CPU per request moved more than 5% from the committed
// value. BENCH_QUICK=1 runs every scenario in under 3 minutes.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findAgentgateway } from './lib/agentgateway.ts';
import { assertGwBinary } from './lib/gw.ts';
import {
  committedPlainCpu,
  entriesAfterRun,
  entriesFromResults,
  type LatestEntry,
  latestEntry,
  latestFile,
  mergeLatest,
  plainDriftLine,
} from './lib/latest.ts';
import { machineInfo } from './lib/machine.ts';
import { stopAll } from './lib/procs.ts';
import { type ResultFile, renderSection, resultFileName, writeResultsMarkdown } from './lib/report.ts';
import { ensureTools } from './lib/tools.ts';
import { SCENARIOS } from './scenarios/index.ts';
import type { Mode, ModeName, Scenario, Settings } from './scenarios/types.ts';

const benchDir = dirname(fileURLToPath(import.meta.url));
const repoRoot = resolve(benchDir, '..');

const USAGE = `node bench/run.ts — environment:
  BENCH_QUICK=1              short check: the pinned mode only, 2 rounds × 1 s + 0.5 s per peer for
                             plain-http, one round for the others; idle RSS in plain-http only; every
                             scenario in under 3 minutes
  BENCH_SCENARIOS=a,b        scenarios to run (default all: ${SCENARIOS.map((s) => s.name).join(', ')})
  BENCH_MODES=pinned,unpinned  (default both; quick: pinned); other modes write a result file of their
                             own (<date>-<scenario>.pinned.json), never over the usual run's
  BENCH_PAIRS=N              interleaved rounds per mode (protocol minimum 5; default 5, quick 2 or 1)
  BENCH_SECONDS=N            saturation seconds per peer and round (default 8, quick 1)
  BENCH_LATENCY_SECONDS=N    fixed-rate seconds per peer and round (default 6, quick 0.5)
  BENCH_GW_BIN=path          proxy binary (default bin/gw)
  BENCH_GW_REVISION=text     gw's revision in the results when BENCH_GW_BIN is a snapshot outside git
  BENCH_AGENTGATEWAY_BIN=path  agentgateway peer (default ../shared/bin/agentgateway when it exists;
                             "none" leaves it out)
  BENCH_STANDIN=nginx        measure a second nginx in gw's place (harness test; writes nothing in bench/)
  BENCH_KEEP=1               keep the scratch directory (configs, logs, raw h2load samples)
node bench/run.ts --report-only  rebuilds RESULTS.md and results/latest.json from results/, measuring nothing`;

function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got ${raw}`);
  return n;
}

function modes(quick: boolean): Mode[] {
  // Quick checks measure the mode latest.json and the drift warning read: one core, one worker.
  const fallback = quick ? 'pinned' : 'pinned,unpinned';
  const wanted = (process.env['BENCH_MODES'] || fallback).split(',').map((s) => s.trim());
  const all: Record<ModeName, Mode> = {
    pinned: {
      name: 'pinned',
      label: 'Pinned: 1 worker on core 0, load on core 1',
      workers: 1,
      proxyCpus: '0',
      loadCpus: '1',
      loadThreads: 1,
    },
    unpinned: {
      name: 'unpinned',
      label: 'Unpinned: 2 workers, all cores',
      workers: 2,
      proxyCpus: undefined,
      loadCpus: undefined,
      loadThreads: 2,
    },
  };
  const out: Mode[] = [];
  for (const name of wanted) {
    if (name !== 'pinned' && name !== 'unpinned') throw new Error(`unknown mode ${name} in BENCH_MODES`);
    if (name === 'pinned' && cpus().length < 2) {
      console.error('bench: fewer than 2 CPUs, skipping the pinned mode');
      continue;
    }
    out.push(all[name]);
  }
  return out;
}

function settingsFromEnv(): Settings {
  const quick = process.env['BENCH_QUICK'] === '1';
  const standin = process.env['BENCH_STANDIN'];
  if (standin !== undefined && standin !== '' && standin !== 'nginx') {
    throw new Error(`BENCH_STANDIN supports only "nginx", got ${standin}`);
  }
  return {
    quick,
    pairs: Math.round(envNumber('BENCH_PAIRS', quick ? 2 : 5)),
    saturationSeconds: Math.round(envNumber('BENCH_SECONDS', quick ? 1 : 8)),
    latencySeconds: envNumber('BENCH_LATENCY_SECONDS', quick ? 0.5 : 6),
    warmupSeconds: quick ? 1 : 2,
    modes: modes(quick),
    standin: standin === 'nginx',
  };
}

/** The settings one scenario runs with: its own quick budget, unless the environment sets the time. */
function scenarioSettings(settings: Settings, scenario: Scenario): Settings {
  if (!settings.quick || scenario.quick === undefined) return settings;
  const unset = (name: string): boolean => (process.env[name] ?? '') === '';
  const { saturationSeconds, latencySeconds, pairs } = scenario.quick;
  return {
    ...settings,
    ...(saturationSeconds !== undefined && unset('BENCH_SECONDS') ? { saturationSeconds } : {}),
    ...(latencySeconds !== undefined && unset('BENCH_LATENCY_SECONDS') ? { latencySeconds } : {}),
    ...(pairs !== undefined && unset('BENCH_PAIRS') ? { pairs } : {}),
  };
}

async function main(): Promise<void> {
  if (process.argv.includes('--help') || process.argv.includes('-h')) {
    console.log(USAGE);
    return;
  }
  if (process.argv.includes('--report-only')) {
    writeResultsMarkdown(
      benchDir,
      SCENARIOS.map((s) => s.name),
    );
    const file = latestFile(benchDir, false);
    mergeLatest(file, entriesFromResults(benchDir));
    console.log(`bench: rebuilt ${join(benchDir, 'RESULTS.md')} and ${file}`);
    return;
  }
  const settings = settingsFromEnv();
  const only = process.env['BENCH_SCENARIOS']?.split(',').map((s) => s.trim());
  const scenarios = only === undefined ? SCENARIOS : SCENARIOS.filter((s) => only.includes(s.name));
  if (scenarios.length === 0) throw new Error(`no scenario matches BENCH_SCENARIOS=${only?.join(',')}`);
  const gwBin = process.env['BENCH_GW_BIN'] ?? join(repoRoot, 'bin', 'gw');
  if (!settings.standin) assertGwBinary(gwBin);
  ensureTools(benchDir);
  const agentgatewayBin = findAgentgateway(repoRoot);

  const machine = machineInfo(repoRoot, agentgatewayBin);
  const workDir = mkdtempSync(join(tmpdir(), 'gw-bench-'));
  const started = Date.now();
  const log = (line: string): void => {
    console.log(`${((Date.now() - started) / 1000).toFixed(1).padStart(6)}s ${line}`);
  };
  log(
    `${settings.quick ? 'QUICK ' : ''}${settings.standin ? 'STAND-IN ' : ''}bench: ${scenarios.map((s) => s.name).join(', ')}; ` +
      `${settings.pairs} rounds × (${settings.saturationSeconds} s + ${settings.latencySeconds} s) per peer; ` +
      `modes ${settings.modes.map((m) => m.name).join(', ')}; scratch ${workDir}`,
  );
  log(
    agentgatewayBin === undefined
      ? 'agentgateway: no binary at ../shared/bin/agentgateway, its peer is skipped'
      : `agentgateway: ${agentgatewayBin} (${machine.agentgateway})`,
  );
  const latest: LatestEntry[] = [];
  let failed = true;
  try {
    for (const scenario of scenarios) {
      const scenarioStart = new Date();
      const own = scenarioSettings(settings, scenario);
      const { modes: modeList, ...rest } = own;
      if (own !== settings) {
        log(`${scenario.name}: quick budget ${own.saturationSeconds} s + ${own.latencySeconds} s per peer`);
      }
      const result = await scenario.run({ settings: own, workDir, gwBin, agentgatewayBin, log });
      const firstMode = modeList[0];
      if (firstMode === undefined) throw new Error('no modes to run');
      // configure() is pure: called here only to record the load shape next to the figures.
      const { load } = scenario.configure({
        mode: firstMode,
        ports: { gw: 0, nginx: 0, upstream: 0, admin: 0, stats: 0, ready: 0 },
      });
      const file: ResultFile = {
        scenario: scenario.name,
        title: scenario.title,
        reference: scenario.reference ?? null,
        date: scenarioStart.toISOString().slice(0, 10),
        startedAt: scenarioStart.toISOString(),
        durationSeconds: Math.round((Date.now() - scenarioStart.getTime()) / 1000),
        quick: settings.quick,
        standin: settings.standin,
        machine,
        settings: rest,
        load,
        ...(scenario.describeLoad === undefined ? {} : { loadDescription: scenario.describeLoad(own) }),
        modes: result.modes,
      };
      const name = resultFileName(file);
      // Stand-in figures describe nginx, not gw: keep them out of bench/ entirely.
      const outDir = settings.standin ? tmpdir() : join(benchDir, 'results');
      mkdirSync(outDir, { recursive: true });
      const outFile = join(outDir, settings.standin ? `gw-bench-standin-${name}` : name);
      writeFileSync(outFile, `${JSON.stringify(file, null, 2)}\n`);
      console.log(`\n${renderSection(file, name)}`);
      log(`wrote ${outFile}`);
      const entry = settings.standin ? undefined : latestEntry(file, name);
      if (entry !== undefined) latest.push(entry);
    }
    if (latest.length > 0) {
      const file = latestFile(benchDir, settings.quick);
      mergeLatest(file, entriesAfterRun(benchDir, latest, settings.quick));
      log(`merged ${latest.map((e) => e.scenario).join(', ')} into ${file}`);
    }
    if (!settings.standin) {
      writeResultsMarkdown(
        benchDir,
        SCENARIOS.map((s) => s.name),
      );
      log(`wrote ${join(benchDir, 'RESULTS.md')}`);
    }
    const plainCpu = latest.find((e) => e.scenario === 'plain')?.cpu_us_per_request;
    if (plainCpu !== undefined) {
      const line = plainDriftLine(plainCpu, committedPlainCpu(repoRoot));
      console.log(`\n${line}${settings.quick ? ' (quick run: indicative only)' : ''}`);
    }
    failed = false;
  } finally {
    await stopAll();
    if (failed || process.env['BENCH_KEEP'] === '1')
      console.error(`bench: scratch directory kept: ${workDir}`);
    else rmSync(workDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(`bench: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
});
