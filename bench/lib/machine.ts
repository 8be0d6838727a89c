// What the figures were measured on: machine, kernel and every tool version, stored with each result
// because ratios from different machines or versions are not comparable.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus, loadavg, release } from 'node:os';
import { agentgatewayVersion } from './agentgateway.ts';
import { toolVersion } from './tools.ts';

export interface MachineInfo {
  nproc: number;
  cpuModel: string;
  kernel: string;
  node: string;
  nginx: string;
  wrk: string;
  h2load: string;
  /** agentgateway --version, or "absent" when its peer was skipped (older result files lack it). */
  agentgateway?: string;
  /** Commit of the tree under test, with "+dirty" when it has uncommitted changes. */
  gwRevision: string;
  /** 1-minute load average at the start: a busy neighbour shows here. */
  loadAverage: number;
}

export function machineInfo(repoRoot: string, agentgatewayBin: string | undefined): MachineInfo {
  let cpuModel = cpus()[0]?.model ?? 'unknown';
  try {
    cpuModel = /^model name\s*:\s*(.*)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? cpuModel;
  } catch {
    // Not Linux-like; os.cpus() already gave a name.
  }
  return {
    nproc: cpus().length,
    cpuModel,
    kernel: release(),
    node: process.version,
    nginx: toolVersion('nginx', ['-v'], /nginx\/(\S+)/),
    wrk: toolVersion('wrk', ['-v'], /^wrk (\S+)/m),
    h2load: toolVersion('h2load', ['--version'], /nghttp2\/(\S+)/),
    agentgateway: agentgatewayVersion(agentgatewayBin),
    // A snapshot outside git (git archive, via BENCH_GW_BIN) names its commit through BENCH_GW_REVISION.
    gwRevision: process.env['BENCH_GW_REVISION'] || gitRevision(repoRoot),
    loadAverage: loadavg()[0] ?? 0,
  };
}

function gitRevision(repoRoot: string): string {
  const git = (args: string[]): string =>
    execFileSync('git', ['-C', repoRoot, ...args], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  try {
    const rev = git(['rev-parse', '--short', 'HEAD']);
    const dirty = git(['status', '--porcelain', '--untracked-files=no', '--', 'packages', 'bin']) !== '';
    return dirty ? `${rev}+dirty` : rev;
  } catch {
    return 'uncommitted';
  }
}
