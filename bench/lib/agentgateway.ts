// The agentgateway peer (the Rust original of gw's spec), run from ../shared/bin/agentgateway when that
// binary exists: its config around a scenario's binds, its version, and start-up until it is ready.

import { spawnSync } from 'node:child_process';
import { accessSync, constants, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Ports } from '../scenarios/types.ts';
import { waitForHttp } from './net.ts';
import { spawnTracked, type Tracked } from './procs.ts';

/**
 * BENCH_AGENTGATEWAY_BIN, else ../shared/bin/agentgateway beside the repository; undefined when it is
 * not there (or BENCH_AGENTGATEWAY_BIN is "none"), and the peer is skipped.
 */
export function findAgentgateway(repoRoot: string): string | undefined {
  const wanted = process.env['BENCH_AGENTGATEWAY_BIN'];
  if (wanted === 'none') return undefined;
  const bin =
    wanted === undefined || wanted === '' ? resolve(repoRoot, '../shared/bin/agentgateway') : wanted;
  try {
    accessSync(bin, constants.X_OK);
    return bin;
  } catch {
    if (wanted !== undefined && wanted !== '')
      throw new Error(`BENCH_AGENTGATEWAY_BIN ${bin} is not executable`);
    return undefined;
  }
}

/** What `agentgateway --version` says of itself, for the machine line of a result. */
export function agentgatewayVersion(bin: string | undefined): string {
  if (bin === undefined) return 'absent';
  const r = spawnSync(bin, ['--version'], { encoding: 'utf8' });
  try {
    const v = JSON.parse(r.stdout) as Record<string, string>;
    return `${v['version'] ?? 'unknown'} (${v['build_profile'] ?? '?'}, rust ${v['rust_version'] ?? '?'})`;
  } catch {
    return 'unknown';
  }
}

/**
 * agentgateway's config: admin, stats and readiness on their own loopback ports, as many worker threads
 * as gw has workers, the request log off (as gw's and nginx's are in the comparison), then the
 * scenario's top-level YAML. agentgateway's binds take no address: it listens on every interface.
 */
export function agentgatewayConfig(ports: Ports, workers: number, topLevelYaml: string): string {
  return `config:
  adminAddr: 127.0.0.1:${ports.admin}
  statsAddr: 127.0.0.1:${ports.stats}
  readinessAddr: 127.0.0.1:${ports.ready}
  workerThreads: ${workers}
  logging: { filter: "false" }
${topLevelYaml}`;
}

export async function startAgentgateway(opts: {
  bin: string;
  workDir: string;
  yaml: string;
  readyPort: number;
  cpus: string | undefined;
}): Promise<Tracked> {
  const dir = join(opts.workDir, 'agentgateway');
  mkdirSync(dir, { recursive: true });
  const configFile = join(dir, 'agentgateway.yaml');
  writeFileSync(configFile, opts.yaml);
  const proc = spawnTracked('agentgateway', [opts.bin, '-f', configFile], {
    cpus: opts.cpus,
    logFile: join(dir, 'agentgateway.log'),
    cwd: dir,
  });
  await waitForHttp(`http://127.0.0.1:${opts.readyPort}/healthz/ready`, proc, {
    timeoutMs: 30_000,
    status: 200,
  });
  return proc;
}
