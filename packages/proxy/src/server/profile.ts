// CPU and heap profiles in pprof format (gzipped protobuf, opens in `go tool pprof`), from the
// V8 profilers of the calling thread through @datadog/pprof.
import { encode, heap, time } from '@datadog/pprof';

let heapStarted = false;

/** Heap sampling runs from start-up so a heap profile shows allocations made before it was asked. */
export function startHeapSampling(): void {
  if (heapStarted || process.platform !== 'linux') return;
  heap.start(512 * 1024, 64);
  heapStarted = true;
}

export async function cpuProfile(seconds: number, frequencyHz: number): Promise<Uint8Array> {
  const profile = await time.profile({
    durationMillis: seconds * 1000,
    intervalMicros: Math.max(1, Math.round(1e6 / frequencyHz)),
  });
  return await encode(profile);
}

export async function heapProfile(): Promise<Uint8Array> {
  startHeapSampling();
  return await encode(heap.profile());
}
