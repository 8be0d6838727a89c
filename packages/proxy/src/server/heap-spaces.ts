// The V8 heap of the calling thread space by space, for /memory: what is committed but unused (a
// grown young generation, say) shows here and not in heapUsed.
import { getHeapSpaceStatistics } from 'node:v8';

export type HeapSpaces = Record<string, { size: number; used: number; physical: number }>;

export function heapSpaces(): HeapSpaces {
  const out: HeapSpaces = {};
  for (const s of getHeapSpaceStatistics()) {
    out[s.space_name] = { size: s.space_size, used: s.space_used_size, physical: s.physical_space_size };
  }
  return out;
}
