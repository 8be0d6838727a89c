// The prober of an endpoint with health.active (see active-health.ts): a GET through the backend's
// pool every interval, its outcome recorded in the state the workers share.
import type { Dispatcher } from 'undici';
import {
  ACTIVE_HEALTH_BYTES,
  type ActiveHealthConfig,
  ActiveHealthState,
  type ActiveSettings,
  activeSettings,
  NO_ANSWER_CODE,
} from './active-health.ts';
import { toGwError } from './call.ts';
import type { EndpointHealth } from './health.ts';
import type { PoolRegistry, Retained } from './pools.ts';

/** Where the prober sends its GET: the backend's pool, its origin and the Host header. */
export interface ProbeTarget {
  dispatcher: Dispatcher;
  origin: string;
  host: string;
}

/** Whether a status passes: one of `expected`, or by default 200 to 399 (a Kubernetes httpGet probe). */
export function passes(status: number, expected: readonly number[] | undefined): boolean {
  return expected ? expected.includes(status) : status >= 200 && status < 400;
}

/**
 * Probes one endpoint every interval (the next probe is scheduled when the last one ends, so they
 * never overlap) and records each outcome in the shared state. Kept by the pool registry of the
 * probing worker while a table holds the endpoint with these settings; closing stops it.
 */
export class ActiveProber implements Retained {
  state: ActiveHealthState;
  target: ProbeTarget;
  readonly #settings: ActiveSettings;
  #timer: NodeJS.Timeout | undefined;
  #inflight: AbortController | undefined;
  #closed = false;

  constructor(state: ActiveHealthState, settings: ActiveSettings, target: ProbeTarget) {
    this.state = state;
    this.#settings = settings;
    this.target = target;
    // The first probe right away: a config that names a dead endpoint learns it within the thresholds.
    this.#schedule(0);
  }

  #schedule(ms: number): void {
    if (this.#closed) return;
    this.#timer = setTimeout(() => {
      this.#probe().then(
        () => this.#schedule(this.#settings.intervalMs),
        () => this.#schedule(this.#settings.intervalMs),
      );
    }, ms);
    this.#timer.unref();
  }

  async #probe(): Promise<void> {
    const s = this.#settings;
    const abort = new AbortController();
    this.#inflight = abort;
    const timer = setTimeout(() => abort.abort(), s.timeoutMs);
    const { dispatcher, origin, host } = this.target;
    let pass = false;
    let last: number;
    try {
      const res = await dispatcher.request({
        origin,
        path: s.path,
        method: 'GET',
        headers: { host, 'user-agent': 'gw-health-check' },
        signal: abort.signal,
      });
      last = res.statusCode;
      // The deadline covers the body: a probe answered with a stalled body fails.
      await res.body.dump({ limit: 64 * 1024, signal: abort.signal });
      pass = passes(res.statusCode, s.expectedStatuses);
    } catch (err) {
      if (this.#closed) return;
      last = abort.signal.aborted
        ? -(NO_ANSWER_CODE.timeout as number)
        : -(NO_ANSWER_CODE[toGwError(err, abort.signal).code] ?? (NO_ANSWER_CODE.other as number));
      pass = false;
    } finally {
      clearTimeout(timer);
      this.#inflight = undefined;
    }
    if (!this.#closed) this.state.record(pass, last, Date.now(), s);
  }

  close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#inflight?.abort();
    return Promise.resolve();
  }
}

/**
 * health.active for an endpoint whose health `health` tracks: its state in the memory shared by the
 * workers under `key` (activeHealthMemoryOf allocated it), and, in the probing worker, its prober
 * (one per key), which probes `probe` (the endpoint's own pool).
 */
export function attachActiveHealth(
  health: EndpointHealth,
  key: string,
  active: ActiveHealthConfig,
  probe: ProbeTarget | undefined,
  env: {
    pools: PoolRegistry | null;
    used: Set<Retained>;
    shared?: ((key: string, bytes: number) => SharedArrayBuffer) | undefined;
  },
): void {
  if (!env.pools || !env.shared) return;
  const memory = env.shared(key, ACTIVE_HEALTH_BYTES);
  const state = health.active?.memory === memory ? health.active : new ActiveHealthState(memory);
  health.active = state;
  if (!env.pools.probes || !probe) return;
  const prober = env.pools.keep(
    `prober:${key}`,
    () => new ActiveProber(state, activeSettings(active), probe),
  );
  // a reload may hand a new pool (other TLS settings) or new memory (the main thread's, after a restart)
  prober.state = state;
  prober.target = probe;
  env.used.add(prober);
  health.probing = true;
}
