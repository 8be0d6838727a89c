// Order statistics for the report: medians and ranges over rounds, percentiles over latency samples.
import type { Figure, Unit } from '../scenarios/types.ts';

/** Nearest-rank percentile (p in 0–100) of already sorted values. */
export function percentileSorted(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] ?? Number.NaN;
}

export function median(values: readonly number[]): number {
  const s = [...values].sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] ?? Number.NaN) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
}

export function figure(key: string, label: string, unit: Unit, values: readonly number[]): Figure {
  const finite = values.filter(Number.isFinite);
  return {
    key,
    label,
    unit,
    median: median(finite),
    min: finite.length > 0 ? Math.min(...finite) : Number.NaN,
    max: finite.length > 0 ? Math.max(...finite) : Number.NaN,
    n: finite.length,
  };
}
