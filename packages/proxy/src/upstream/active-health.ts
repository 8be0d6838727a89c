// Active health checks (the backend policy health.active, a gw addition): a GET of `path` to each
// endpoint every `interval`. `unhealthyThreshold` failed probes in a row take the endpoint out of the
// balancing set (backends/select.ts), `healthyThreshold` passed ones in a row bring it back. An
// endpoint not probed yet, or not failed enough yet, stays in.
//
// One prober per endpoint per proxy, not one per worker: the prober runs in the worker that owns
// probing (worker 0; the only one of a single-threaded plane) and writes the endpoint's state into a
// SharedArrayBuffer the main thread allocated (activeHealthMemoryOf, beside the rate-limit buckets),
// which every worker's balancer reads. A restarted worker 0 is given the same buffer and carries on.
// The probe goes through the backend's own pool, so it uses the same TLS, tunnel and HTTP version as
// requests do (active-prober.ts; this module is what the main thread needs too, without undici).
// The duration parser alone: the main thread sizes active health's shared memory with this module,
// and @gw/api/runtime would bring the CEL library into it.
import { parseGoDuration } from '@gw/api/duration';
import { hostPort } from '@gw/api/runtime';
import type { BackendTarget, LlmModelIR, ProxyIR, ResolvedBackendPolicies } from '../config/ir.ts';

export type ActiveHealthConfig = NonNullable<NonNullable<ResolvedBackendPolicies['health']>['active']>;

const DEFAULT_INTERVAL_MS = 10_000;
const DEFAULT_TIMEOUT_MS = 1_000;

/** The Int32 slots of an endpoint's shared state; two BigInt64 times follow them. */
const STATE = 0;
const PASSES = 1;
const FAILURES = 2;
const PROBES = 3;
const FAILED = 4;
const LAST = 5;
const OUTAGES = 6;
const INTS = 8;
const TIMES_AT = INTS * Int32Array.BYTES_PER_ELEMENT;
const LAST_PROBE_AT = 0;
const SINCE = 1;
export const ACTIVE_HEALTH_BYTES = TIMES_AT + 2 * BigInt64Array.BYTES_PER_ELEMENT;

const UNKNOWN = 0;
const HEALTHY = 1;
const UNHEALTHY = 2;
const STATES = ['unknown', 'healthy', 'unhealthy'] as const;

/** A probe without a status (LAST < 0): what went wrong, by -LAST. */
const NO_ANSWER = [
  '',
  'timeout',
  'connection refused or unreachable',
  'connection reset',
  'TLS error',
  'protocol error',
  'error',
];
/** The NO_ANSWER index of a probe's failure, by its GwError code; `timeout` and `other` by name. */
export const NO_ANSWER_CODE: Record<string, number> = {
  timeout: 1,
  GW_ERR_BACKEND_TIMEOUT: 1,
  GW_ERR_UPSTREAM_CONNECT: 2,
  GW_ERR_UPSTREAM_RESET: 3,
  GW_ERR_UPSTREAM_TLS: 4,
  GW_ERR_UPSTREAM_PROTOCOL: 5,
  other: 6,
};

export interface ActiveSettings {
  path: string;
  intervalMs: number;
  timeoutMs: number;
  healthyThreshold: number;
  unhealthyThreshold: number;
  expectedStatuses: readonly number[] | undefined;
}

export function activeSettings(a: ActiveHealthConfig): ActiveSettings {
  const ms = (d: string | undefined, dflt: number) => (d ? (parseGoDuration(d) ?? dflt) : dflt);
  return {
    path: a.path ?? '/',
    intervalMs: ms(a.interval, DEFAULT_INTERVAL_MS),
    timeoutMs: ms(a.timeout, DEFAULT_TIMEOUT_MS),
    healthyThreshold: a.healthyThreshold ?? 1,
    unhealthyThreshold: a.unhealthyThreshold ?? 3,
    expectedStatuses: a.expectedStatuses,
  };
}

/** The endpoint a probe reaches, for the kinds that send every request to one (host, a2a, unix). */
export function probeEndpointOf(t: BackendTarget): string | undefined {
  if (t.kind === 'host' || t.kind === 'a2a') return hostPort(t.host, t.port);
  if (t.kind === 'unix') return `unix:${t.path}`;
  return undefined;
}

/** The shared memory of one endpoint's active health: same backend, endpoint and settings, same state. */
export function activeHealthKey(backend: string, endpoint: string, a: ActiveHealthConfig): string {
  return `active-health:${JSON.stringify([backend, endpoint, activeSettings(a)])}`;
}

/**
 * The shared memory of an LLM model's active health (an ai backend's model or provider): by backend,
 * model entry and where it is sent (a baseUrl or host override, else the provider's own endpoint).
 */
export function modelActiveHealthKey(
  backend: string,
  m: Pick<LlmModelIR, 'name' | 'entry' | 'provider'>,
  a: ActiveHealthConfig,
): string {
  // where it is sent, with nothing secret in it: its endpoint, else the provider's own, which its
  // settings (a region, a resource name) decide
  const { kind, endpoint, settings } = m.provider;
  return activeHealthKey(`${backend}/${m.entry ?? m.name}`, JSON.stringify({ kind, endpoint, settings }), a);
}

/** The buffers the main thread allocates for a config's active health checks (Supervisor). */
export function activeHealthMemoryOf(ir: ProxyIR): { key: string; bytes: number }[] {
  const keys = new Set<string>();
  for (const b of ir.binds)
    for (const l of b.listeners)
      for (const r of l.routes)
        for (const be of r.backends) {
          const active = be.policies.health?.active;
          const endpoint = probeEndpointOf(be.target);
          if (active && endpoint && be.weight > 0) keys.add(activeHealthKey(be.name, endpoint, active));
          if (be.target.kind === 'ai')
            for (const m of be.target.models) {
              const a = m.health?.active;
              if (a) keys.add(modelActiveHealthKey(be.name, m, a));
            }
        }
  return [...keys].map((key) => ({ key, bytes: ACTIVE_HEALTH_BYTES }));
}

export interface ActiveSnapshot {
  /** unknown: not failed enough yet to leave (in the balancing set); unhealthy: out of it. */
  state: (typeof STATES)[number];
  consecutivePasses: number;
  consecutiveFailures: number;
  probes: number;
  failedProbes: number;
  /** The last probe's status, or why it got none (timeout, connection refused, …). */
  lastResult: string | null;
  lastProbe: string | null;
  /** When the state last changed (ISO time). */
  since: string | null;
}

/** An endpoint's active health in shared memory: written by its prober, read by every worker. */
export class ActiveHealthState {
  readonly memory: SharedArrayBuffer;
  readonly #ints: Int32Array;
  readonly #times: BigInt64Array;

  constructor(memory: SharedArrayBuffer) {
    this.memory = memory;
    this.#ints = new Int32Array(memory, 0, INTS);
    this.#times = new BigInt64Array(memory, TIMES_AT, 2);
  }

  /** In the balancing set: not (yet) failed `unhealthyThreshold` probes in a row. */
  get healthy(): boolean {
    return Atomics.load(this.#ints, STATE) !== UNHEALTHY;
  }

  get probes(): number {
    return Atomics.load(this.#ints, PROBES);
  }

  get failedProbes(): number {
    return Atomics.load(this.#ints, FAILED);
  }

  /** A probe's outcome: `last` is its status, or minus a NO_ANSWER index. Only the prober calls it. */
  record(pass: boolean, last: number, now: number, s: ActiveSettings): void {
    const i = this.#ints;
    Atomics.add(i, PROBES, 1);
    Atomics.store(i, LAST, last);
    Atomics.store(this.#times, LAST_PROBE_AT, BigInt(now));
    const state = Atomics.load(i, STATE);
    let next = state;
    if (pass) {
      const passes = Atomics.add(i, PASSES, 1) + 1;
      Atomics.store(i, FAILURES, 0);
      if (state === UNKNOWN || (state === UNHEALTHY && passes >= s.healthyThreshold)) next = HEALTHY;
    } else {
      Atomics.add(i, FAILED, 1);
      const failures = Atomics.add(i, FAILURES, 1) + 1;
      Atomics.store(i, PASSES, 0);
      if (state !== UNHEALTHY && failures >= s.unhealthyThreshold) {
        next = UNHEALTHY;
        Atomics.add(i, OUTAGES, 1);
      }
    }
    if (next !== state) {
      Atomics.store(i, STATE, next);
      Atomics.store(this.#times, SINCE, BigInt(now));
    }
  }

  snapshot(): ActiveSnapshot {
    const i = this.#ints;
    const probes = Atomics.load(i, PROBES);
    const last = Atomics.load(i, LAST);
    const time = (slot: number) => {
      const t = Number(Atomics.load(this.#times, slot));
      return t > 0 ? new Date(t).toISOString() : null;
    };
    return {
      state: STATES[Atomics.load(i, STATE)] ?? 'unknown',
      consecutivePasses: Atomics.load(i, PASSES),
      consecutiveFailures: Atomics.load(i, FAILURES),
      probes,
      failedProbes: Atomics.load(i, FAILED),
      lastResult: probes === 0 ? null : last > 0 ? `status ${last}` : (NO_ANSWER[-last] ?? 'error'),
      lastProbe: time(LAST_PROBE_AT),
      since: time(SINCE),
    };
  }
}
