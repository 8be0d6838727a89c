// Starts the proxy under test (bin/gw) from a generated config and waits for its readiness endpoint.
import { accessSync, constants, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Ports } from '../scenarios/types.ts';
import { waitForHttp } from './net.ts';
import { spawnTracked, type Tracked } from './procs.ts';

export function assertGwBinary(gwBin: string): void {
  try {
    accessSync(gwBin, constants.X_OK);
  } catch {
    throw new Error(
      `bin/gw not found (${gwBin}), run make setup (or BENCH_STANDIN=nginx to test the harness)`,
    );
  }
}

/** The config: admin/stats/readiness on their own loopback ports, then the scenario's binds. */
export function gwConfig(ports: Ports, workers: number, bindsYaml: string): string {
  return gwConfigWith(ports, workers, `binds:\n${bindsYaml}`);
}

/** gwConfig's `config:` block followed by any top-level YAML (e.g. `gateways:` and `llm:`). */
export function gwConfigWith(ports: Ports, workers: number, topLevelYaml: string): string {
  return `config:
  adminAddr: 127.0.0.1:${ports.admin}
  statsAddr: 127.0.0.1:${ports.stats}
  readinessAddr: 127.0.0.1:${ports.ready}
  workerThreads: ${workers}
${LOGS_OFF}${topLevelYaml}`;
}

const LOGS_OFF = `  # Access logs off, as nginx runs with access_log off: both proxies do the same work per request.
  logging: { level: "info,request=warn" }
`;

/** A gwConfig / gwConfigWith config with gw's default logging instead: the access log on, as users run it. */
export function withAccessLog(yaml: string): string {
  if (!yaml.includes(LOGS_OFF)) throw new Error('gw config without the logs-off block of gwConfigWith');
  return yaml.replace(LOGS_OFF, '');
}

export async function startGw(opts: {
  /** Process and scratch-directory name; default "gw". */
  name?: string;
  gwBin: string;
  workDir: string;
  yaml: string;
  readyPort: number;
  cpus: string | undefined;
  /** Variables added to gw's environment (e.g. GW_HTTP1_SERVER). */
  env?: Record<string, string>;
}): Promise<Tracked> {
  const name = opts.name ?? 'gw';
  const dir = join(opts.workDir, name);
  mkdirSync(dir, { recursive: true });
  const configFile = join(dir, 'gw.yaml');
  writeFileSync(configFile, opts.yaml);
  const proc = spawnTracked(name, [opts.gwBin, '-f', configFile], {
    cpus: opts.cpus,
    logFile: join(dir, 'gw.log'),
    cwd: dir,
    ...(opts.env ? { env: opts.env } : {}),
  });
  await waitForHttp(`http://127.0.0.1:${opts.readyPort}/healthz/ready`, proc, {
    timeoutMs: 30_000,
    status: 200,
  });
  return proc;
}
