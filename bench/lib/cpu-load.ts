// How busy given CPUs were over an interval, from /proc/stat: tells whether the load side (upstream +
// load generator) rather than the proxy was the bottleneck of a saturation run.
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';

/** Parses a taskset CPU list ("0", "1-3,5"); undefined means every CPU. */
export function parseCpuList(list: string | undefined): number[] {
  if (list === undefined) return cpus().map((_, i) => i);
  const out: number[] = [];
  for (const part of list.split(',')) {
    const [a, b] = part.split('-').map(Number);
    if (a === undefined || Number.isNaN(a)) continue;
    for (let i = a; i <= (b ?? a); i++) out.push(i);
  }
  return out;
}

export interface CpuSnapshot {
  busy: number;
  total: number;
}

export function cpuSnapshot(which: readonly number[]): CpuSnapshot {
  let busy = 0;
  let total = 0;
  for (const line of readFileSync('/proc/stat', 'utf8').split('\n')) {
    const m = /^cpu(\d+) (.*)$/.exec(line);
    if (m === null || !which.includes(Number(m[1]))) continue;
    const v = (m[2] ?? '').trim().split(/\s+/).map(Number);
    // user nice system idle iowait irq softirq steal; guest time is already inside user.
    const idle = (v[3] ?? 0) + (v[4] ?? 0);
    const all = v.slice(0, 8).reduce((s, x) => s + x, 0);
    busy += all - idle;
    total += all;
  }
  return { busy, total };
}

/** Fraction (0–1) of the interval the CPUs were busy, averaged over them. */
export function busyFraction(before: CpuSnapshot, after: CpuSnapshot): number {
  const total = after.total - before.total;
  return total > 0 ? (after.busy - before.busy) / total : Number.NaN;
}
