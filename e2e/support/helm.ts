// The real helm the chart tests run (hack/helm/build.sh: built from its Go module once, then cached),
// and the charts' paths.
import { execFile, spawnSync } from 'node:child_process';
import { resolve } from 'node:path';

export const CHARTS = resolve(import.meta.dirname, '../../charts');

let cached: string | undefined;
/** helm's path; the first call builds it (minutes) when it is not cached yet. */
export function helmBinary(): string {
  if (cached) return cached;
  const r = spawnSync(resolve(import.meta.dirname, '../../hack/helm/build.sh'), { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`hack/helm/build.sh failed:\n${r.stderr}`);
  cached = r.stdout.trim();
  return cached;
}

export interface HelmResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs helm with a private config/cache dir (`home`); never throws on a non-zero exit. */
export function helm(args: string[], opts: { kubeconfig?: string; home: string }): Promise<HelmResult> {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env['PATH'] ?? '',
    HOME: opts.home,
    HELM_CONFIG_HOME: `${opts.home}/config`,
    HELM_CACHE_HOME: `${opts.home}/cache`,
    HELM_DATA_HOME: `${opts.home}/data`,
    ...(opts.kubeconfig ? { KUBECONFIG: opts.kubeconfig } : {}),
  };
  return new Promise((done) => {
    execFile(helmBinary(), args, { env, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      done({ code, stdout, stderr });
    });
  });
}
