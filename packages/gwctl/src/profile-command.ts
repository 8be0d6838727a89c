// `gwctl proxy profile cpu|heap`: fetches a gzipped pprof profile from the admin interface and writes
// it to a file `go tool pprof` opens (default: a timestamped name in the current directory).
import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { adminBytes } from './admin-client.ts';
import { causeOf, GwctlError, usageError } from './errors.ts';

export const CPU_DEFAULT_SECONDS = 30;

export interface ProfileOptions {
  kind: string | undefined;
  adminPort: number;
  seconds: string | undefined;
  output: string | undefined;
}

const two = (n: number) => String(n).padStart(2, '0');

/** `cpu-20250102-150405.pb.gz`, local time, so a directory listing sorts by when it was taken. */
export function defaultProfileName(kind: 'cpu' | 'heap', now = new Date()): string {
  const date = `${now.getFullYear()}${two(now.getMonth() + 1)}${two(now.getDate())}`;
  const time = `${two(now.getHours())}${two(now.getMinutes())}${two(now.getSeconds())}`;
  return `${kind}-${date}-${time}.pb.gz`;
}

export async function runProfile(o: ProfileOptions): Promise<number> {
  if (o.kind !== 'cpu' && o.kind !== 'heap') {
    throw usageError(`profile what? expected cpu or heap${o.kind ? `, got ${o.kind}` : ''}`);
  }
  let seconds = CPU_DEFAULT_SECONDS;
  if (o.seconds !== undefined) {
    if (o.kind === 'heap') throw usageError('--seconds applies to cpu profiles only');
    seconds = Number(o.seconds);
    if (!Number.isInteger(seconds) || seconds < 1 || seconds > 300) {
      throw usageError(`--seconds ${o.seconds}: expected a whole number from 1 to 300`);
    }
  }
  const path = o.kind === 'cpu' ? `/debug/pprof/profile?seconds=${seconds}` : '/debug/pprof/heap';
  if (o.kind === 'cpu') process.stderr.write(`gwctl: collecting a ${seconds} s CPU profile...\n`);
  let data: Buffer;
  try {
    data = await adminBytes(o.adminPort, path, {
      timeoutMs: (o.kind === 'cpu' ? seconds : 0) * 1000 + 60_000,
    });
  } catch (err) {
    if (err instanceof GwctlError && / answered 404/.test(err.message)) {
      throw new GwctlError('GWCTL_ERR_NOT_AVAILABLE', 'this gw does not serve profiles (Linux builds only)');
    }
    throw err;
  }
  if (data.length < 2 || data[0] !== 0x1f || data[1] !== 0x8b) {
    throw new GwctlError(
      'GWCTL_ERR_MALFORMED',
      `admin ${path} answered ${data.length} bytes that are not a gzipped profile`,
    );
  }
  const file = resolve(o.output ?? defaultProfileName(o.kind));
  try {
    await writeFile(file, data);
  } catch (err) {
    throw new GwctlError('GWCTL_ERR_WRITE_FAILED', `cannot write ${file} (${causeOf(err)})`);
  }
  process.stdout.write(`${file}\n`);
  return 0;
}
