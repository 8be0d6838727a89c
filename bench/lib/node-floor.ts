// Starts the node-floor peer (bench/peers/node-floor.ts) with the harness's own Node, so both sides of
// gw / node-floor run the same Node build.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { waitForHttp } from './net.ts';
import { spawnTracked, type Tracked } from './procs.ts';

const script = fileURLToPath(new URL('../peers/node-floor.ts', import.meta.url));

export async function startNodeFloor(opts: {
  workDir: string;
  port: number;
  upstreamPort: number;
  workers: number;
  cpus: string | undefined;
}): Promise<Tracked> {
  const dir = join(opts.workDir, 'node-floor');
  mkdirSync(dir, { recursive: true });
  const argv = [
    process.execPath,
    '--disable-warning=ExperimentalWarning',
    script,
    String(opts.port),
    `http://127.0.0.1:${opts.upstreamPort}`,
    String(opts.workers),
  ];
  const proc = spawnTracked('node-floor', argv, {
    cpus: opts.cpus,
    logFile: join(dir, 'stdout.log'),
    cwd: dir,
  });
  // Any answer will do: it comes from the upstream through the proxy, so the workers are listening.
  await waitForHttp(`http://127.0.0.1:${opts.port}/`, proc, { timeoutMs: 10_000 });
  return proc;
}
