// Hands start-up's memory back to the OS. Loading and compiling a config grows V8's young generation
// to its 32 MiB cap (about 17 MiB of it resident) and leaves garbage in the old one; V8 never shrinks
// them while the thread sleeps. Once the thread has been idle for QUIET_MS after start-up, one
// memory-reducing collection runs (tens of milliseconds), then never again. A thread that has served
// real traffic by then (HOT_REQUESTS) is never trimmed: the same collection drops the compiled code of
// the hot path, and the next burst would pay for the warm-up again (a quick plain bench: 2.14x node-floor's CPU with a
// trim after every burst, 1.15x without; an llm route trimmed after its first burst and idle 40 s
// spent 284 us per request in the next second and 128 us once warm, 103 us without the trim). It
// needs `gc` (node --expose-gc, as bin/gw and the image run it); without it this does nothing.
import { performance } from 'node:perf_hooks';
import { bodyBytes } from '../pipeline/body-churn.ts';

const CHECK_MS = 1000;
/**
 * Idle this long before trimming: in every check, no request served and no byte of body passed (a
 * slow stream or a trickle of requests keeps a thread from it), and the event loop busy under
 * IDLE_ELU (other work: a config being compiled). Only a thread with next to nothing to do pays the
 * pause. The loop's own measure cannot be the whole test: on the 2-core VM gw is tested on, with the
 * machine otherwise idle, a node process with nothing to do but a timer spends about 10 ms of CPU per
 * wake-up (timer lateness 5-15 ms; about 1 ms when the other core is busy) and read 1.5-4% busy,
 * where 0.5% was the bar: it was never trimmed.
 */
const QUIET_MS = 3000;
const IDLE_ELU = 0.05;
/**
 * Requests served before the thread went quiet past which it keeps its memory: by then V8 has
 * optimized the hot path, and that compiled code is worth more than the bytes. A probe or a test
 * request or two leave little to lose.
 */
const HOT_REQUESTS = 1000;

type Gc = (opts: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;

/**
 * One memory-reducing collection now, for the moment start-up is over and before traffic is invited
 * (readiness not yet answering): loading and compiling the config is garbage by then, and there is no
 * hot code yet to lose. Without it a process sampled soon after start (a probe, a scrape, a benchmark's
 * idle figure) holds that garbage until trimWhenQuiet finds three quiet seconds, which any admin call
 * postpones. Returns the pause and the RSS it handed back, or undefined without `gc`.
 */
export function trimNow(): { ms: number; freedBytes: number } | undefined {
  const gc = (globalThis as { gc?: Gc }).gc;
  if (typeof gc !== 'function') return undefined;
  const rss = process.memoryUsage.rss();
  const t = performance.now();
  // A tick stays queued across the collection (see keepTickShape).
  process.nextTick(keepTickShape);
  gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  return { ms: performance.now() - t, freedBytes: rss - process.memoryUsage.rss() };
}

/**
 * Queued by trimNow so that one of process.nextTick's tick objects is alive while the collection runs.
 * Node builds every tick object from one object literal with symbol keys, and V8 holds the hidden
 * classes (maps) of its steps only through live objects. A full collection at an idle moment, when
 * no tick is queued, frees them; the next tick builds new ones, so the literal's property-definition
 * caches see another map after every such collection and turn megamorphic after a few (node 24.21:
 * --allow-natives-syntax, %DebugPrint(process.nextTick)). From then on each nextTick defines its
 * properties through the runtime: 500-800 ns a tick instead of 140-250 in a microbenchmark, and in a
 * CPU profile of gw under plain load 14 us of nextTick per request against node-floor's 2. node's
 * stream machinery calls nextTick a dozen times per proxied request. With a tick queued, its maps
 * survive, and so does the caches' single map.
 */
function keepTickShape(): void {}

export interface TrimStats {
  /** Collections run so far, and the last one's duration and RSS change. */
  count: number;
  /** True once the thread served real traffic before it went quiet, so it will not be trimmed. */
  skipped: boolean;
  lastMs: number;
  lastFreedBytes: number;
}

/**
 * `served` counts the requests the thread has handled (the data plane's); once it reaches
 * HOT_REQUESTS the trim is called off for good.
 */
export function trimWhenQuiet(onTrim?: (s: TrimStats) => void, served?: () => number): TrimStats | undefined {
  const gc = (globalThis as { gc?: Gc }).gc;
  if (typeof gc !== 'function') return undefined;
  const stats: TrimStats = { count: 0, skipped: false, lastMs: 0, lastFreedBytes: 0 };
  let quietFor = 0;
  let last = performance.eventLoopUtilization();
  const activity = () => (served?.() ?? 0) + bodyBytes();
  let lastActivity = activity();
  const timer = setInterval(() => {
    if (served !== undefined && served() >= HOT_REQUESTS) {
      stats.skipped = true;
      clearInterval(timer);
      return;
    }
    const now = performance.eventLoopUtilization();
    const elu = performance.eventLoopUtilization(now, last).utilization;
    last = now;
    const act = activity();
    const moved = act !== lastActivity;
    lastActivity = act;
    if (moved || elu >= IDLE_ELU) {
      quietFor = 0;
      return;
    }
    quietFor += CHECK_MS;
    if (quietFor < QUIET_MS) return;
    clearInterval(timer);
    const t = trimNow() as { ms: number; freedBytes: number };
    stats.count++;
    stats.lastMs = t.ms;
    stats.lastFreedBytes = t.freedBytes;
    onTrim?.(stats);
  }, CHECK_MS);
  timer.unref();
  return stats;
}
