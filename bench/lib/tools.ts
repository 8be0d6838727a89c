// Finds the system tools the benchmark drives and installs the missing ones through bench/setup.sh,
// because CI machines start fresh and Debian puts nginx in /usr/sbin, off a non-root PATH.
import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

export const REQUIRED_TOOLS = ['nginx', 'wrk', 'h2load', 'taskset'] as const;
export type ToolName = (typeof REQUIRED_TOOLS)[number];

function findOnPath(name: string): string | undefined {
  const dirs = [...(process.env['PATH'] ?? '').split(delimiter), '/usr/local/sbin', '/usr/sbin', '/sbin'];
  for (const dir of dirs) {
    if (dir === '') continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not here.
    }
  }
  return undefined;
}

export function resolveTool(name: ToolName): string {
  const path = findOnPath(name);
  if (path === undefined) throw new Error(`${name} not found; run bench/setup.sh`);
  return path;
}

/** Runs bench/setup.sh when any tool is missing, then fails clearly if that did not help. */
export function ensureTools(benchDir: string): void {
  const missing = REQUIRED_TOOLS.filter((t) => findOnPath(t) === undefined);
  if (missing.length === 0) return;
  console.error(`bench: missing ${missing.join(', ')}; running bench/setup.sh`);
  const r = spawnSync('bash', [join(benchDir, 'setup.sh')], { stdio: 'inherit' });
  const still = REQUIRED_TOOLS.filter((t) => findOnPath(t) === undefined);
  if (r.status !== 0 || still.length > 0) {
    throw new Error(`bench/setup.sh could not install ${still.join(', ') || missing.join(', ')}`);
  }
}

/** First line of a tool's version output; wrk prints it with its usage and exits 1, nginx to stderr. */
export function toolVersion(name: ToolName, args: readonly string[], pattern: RegExp): string {
  const path = findOnPath(name);
  if (path === undefined) return 'missing';
  const r = spawnSync(path, args, { encoding: 'utf8' });
  const text = `${r.stdout ?? ''}\n${r.stderr ?? ''}`;
  return pattern.exec(text)?.[1] ?? 'unknown';
}
