// CPU and heap profiles in pprof format (gzipped protobuf, opens in `go tool pprof`), from the
// V8 profilers of the calling thread through @datadog/pprof. The profiler (a native addon and its
// encoder, about 4 MiB of RSS per thread) loads with the first profile asked for, and heap sampling
// starts then: the first heap profile holds what was allocated since, a later one shows what grew.
import { Lazy } from '../lazy.ts';

const pprof = new Lazy(async () => {
  const mod = await import('@datadog/pprof');
  if (process.platform === 'linux') mod.heap.start(512 * 1024, 64);
  return mod;
});

export async function cpuProfile(seconds: number, frequencyHz: number): Promise<Uint8Array> {
  const { encode, time } = await pprof.ready;
  const profile = await time.profile({
    durationMillis: seconds * 1000,
    intervalMicros: Math.max(1, Math.round(1e6 / frequencyHz)),
  });
  return await encode(profile);
}

export async function heapProfile(): Promise<Uint8Array> {
  const { encode, heap } = await pprof.ready;
  return await encode(heap.profile());
}
