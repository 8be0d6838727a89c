// Passive health of a backend endpoint (outlier detection, the backend policy `health`): unhealthy
// answers in a row eject the endpoint for a while, and the balancer (backends/select.ts) leaves it out
// until it returns. State is per worker and survives reloads that keep the endpoint and its policy.
// With health.active the endpoint's probe state (active-health.ts, shared by the workers) also counts:
// out of the balancing set while ejected or while failing its probes.
import { parseGoDuration } from '@gw/api/runtime';
import { type CelProgram, celTrue, compileCel } from '../cel/cel.ts';
import type { ResolvedBackendPolicies } from '../config/ir.ts';
import { GwError } from '../errors.ts';
import type { Handler } from '../pipeline/layer.ts';
import type { ActiveHealthState, ActiveSnapshot } from './active-health.ts';
import type { PoolRegistry, Retained } from './pools.ts';

const DEFAULT_EJECTION_MS = 3000;
/** Weight of the newest answer in the health score (agentgateway's EWMA uses the same). */
const SCORE_ALPHA = 0.3;
/** Longest ejection from backoff (Envoy's max_ejection_time), unless the base duration is longer. */
const MAX_EJECTION_MS = 300_000;

/** Failures that mean the endpoint did not answer at all. */
const CONNECTION_FAILURES = new Set([
  'GW_ERR_UPSTREAM_CONNECT',
  'GW_ERR_UPSTREAM_RESET',
  'GW_ERR_UPSTREAM_TLS',
  'GW_ERR_UPSTREAM_PROTOCOL',
  'GW_ERR_BACKEND_TIMEOUT',
]);

export interface HealthSnapshot {
  backend: string;
  endpoint: string;
  healthy: boolean;
  consecutiveFailures: number;
  /** EWMA of the answers, 1 healthy and 0 unhealthy (a new endpoint starts at 1). */
  healthScore: number;
  /** ISO time the ejection ends, when ejected. */
  ejectedUntil: string | null;
  /** Ejections since the worker started (the backoff multiplier counts only recent ones). */
  ejections: number;
  lastEjection: string | null;
  /** With health.active: the probes' verdict (the same in every worker). */
  active?: ActiveSnapshot;
}

/** When an endpoint is ejected: eviction's consecutiveFailures, healthThreshold and restoreHealth. */
export interface EjectionRule {
  /** Unhealthy answers in a row that eject; undefined: not counted. */
  consecutive: number | undefined;
  /** An unhealthy answer that leaves the score below this ejects; undefined: not scored. */
  scoreBelow: number | undefined;
  /** The score an endpoint comes back from an ejection with; undefined: the one it had. */
  restore: number | undefined;
}

/**
 * eviction's settings as a rule: with neither consecutiveFailures nor healthThreshold, one unhealthy
 * answer ejects; with both, either does; consecutiveFailures 0 is unset.
 */
export function ejectionRule(
  eviction:
    | {
        consecutiveFailures?: number | null | undefined;
        healthThreshold?: number | null | undefined;
        restoreHealth?: number | null | undefined;
      }
    | null
    | undefined,
): EjectionRule {
  const count = eviction?.consecutiveFailures || undefined;
  const scoreBelow = eviction?.healthThreshold ?? undefined;
  return {
    consecutive: count ?? (scoreBelow === undefined ? 1 : undefined),
    scoreBelow,
    restore: eviction?.restoreHealth ?? undefined,
  };
}

export class EndpointHealth implements Retained {
  readonly backend: string;
  readonly endpoint: string;
  /** Unhealthy answers in a row; a healthy answer resets it. */
  failures = 0;
  /** EWMA of the answers (1 healthy, 0 unhealthy, the newest weighing SCORE_ALPHA); starts healthy. */
  score = 1;
  /** Date.now() at which an ejection ends; 0 or past: in the balancing set. */
  ejectedUntil = 0;
  /** Ejections in a row: the n-th lasts n times the base duration. */
  #streak = 0;
  #total = 0;
  #lastReason: string | null = null;
  /** The score is set to rule.restore at the first answer after an ejection ends. */
  #restorePending = false;
  readonly #rule: EjectionRule;
  readonly #baseMs: number;
  readonly #maxMs: number;
  /** health.active's shared state, when the policy has active checks. */
  active: ActiveHealthState | undefined;
  /** Whether this worker runs the endpoint's prober (its probe counts are reported from here only). */
  probing = false;

  constructor(backend: string, endpoint: string, rule: EjectionRule, baseMs: number) {
    this.backend = backend;
    this.endpoint = endpoint;
    this.#rule = rule;
    this.#baseMs = baseMs;
    this.#maxMs = Math.max(MAX_EJECTION_MS, baseMs);
  }

  /** In the balancing set: not ejected, and not failing its active checks. */
  available(now: number): boolean {
    return this.ejectedUntil <= now && (this.active?.healthy ?? true);
  }

  /** Ejected by passive checks (answers to requests). */
  ejected(now: number): boolean {
    return this.ejectedUntil > now;
  }

  /** A healthy answer: the failure count starts over and the score rises. */
  succeed(now: number): void {
    this.#returned(now);
    this.score = SCORE_ALPHA + (1 - SCORE_ALPHA) * this.score;
    this.failures = 0;
  }

  /**
   * An unhealthy answer: the score falls; ejects once `consecutiveFailures` came in a row, or once
   * the score is below `healthThreshold`.
   */
  fail(now: number, reason: string): void {
    this.#returned(now);
    this.score *= 1 - SCORE_ALPHA;
    this.failures++;
    const { consecutive, scoreBelow } = this.#rule;
    if (consecutive !== undefined && this.failures >= consecutive) this.eject(now, undefined, reason);
    else if (scoreBelow !== undefined && this.score < scoreBelow)
      this.eject(now, undefined, `${reason}, health ${this.score.toFixed(2)} below ${scoreBelow}`);
  }

  /** An unhealthy answer that says when to come back (Retry-After): ejected until then. */
  toldToWait(now: number, ms: number, reason: string): void {
    this.#returned(now);
    this.score *= 1 - SCORE_ALPHA;
    this.eject(now, ms, reason);
  }

  /** Back from an ejection: restoreHealth, when set, replaces the score it left with. */
  #returned(now: number): void {
    if (this.#restorePending && this.ejectedUntil <= now) {
      this.#restorePending = false;
      this.score = this.#rule.restore ?? this.score;
    }
  }

  /** Ejects now: for `ms` (a Retry-After) or the backoff duration. */
  eject(now: number, ms: number | undefined, reason: string): void {
    this.#restorePending = this.#rule.restore !== undefined;
    // The backoff starts over once the endpoint has stayed in for the longest ejection.
    if (now - this.ejectedUntil > this.#maxMs) this.#streak = 0;
    this.#streak++;
    this.#total++;
    const backoff = Math.min(this.#baseMs * this.#streak, this.#maxMs);
    this.ejectedUntil = now + (ms === undefined ? backoff : Math.min(ms, this.#maxMs));
    this.failures = 0;
    this.#lastReason = reason;
  }

  get ejections(): number {
    return this.#total;
  }

  snapshot(now: number): HealthSnapshot {
    const ejected = this.ejected(now);
    return {
      backend: this.backend,
      endpoint: this.endpoint,
      healthy: this.available(now),
      consecutiveFailures: this.failures,
      healthScore: Math.round(this.score * 1000) / 1000,
      ejectedUntil: ejected ? new Date(this.ejectedUntil).toISOString() : null,
      ejections: this.#total,
      lastEjection: this.#lastReason,
      ...(this.active ? { active: this.active.snapshot() } : {}),
    };
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

/** Every endpoint health a worker's tables hold (the /config_dump `endpointHealth` and the metrics). */
export function endpointHealthOf(pools: PoolRegistry): EndpointHealth[] {
  return pools.retained().filter((r): r is EndpointHealth => r instanceof EndpointHealth);
}

/** Retry-After (seconds or an HTTP date) in ms; undefined when absent or unreadable. */
export function retryAfterMs(value: string | string[] | undefined, now: number): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (v === undefined) return undefined;
  const t = v.trim();
  if (/^\d+$/.test(t)) return Number(t) * 1000;
  const at = Date.parse(t);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

export interface HealthTracking {
  health: EndpointHealth;
  /** The backend's call, reporting each answer to `health`. */
  call: Handler;
}

/**
 * Tracks `call`'s answers in the endpoint's health. Unhealthy: a connection failure, or a 5xx (or what
 * `unhealthyExpression` says). A 503 or 429 with Retry-After ejects at once for that time: the endpoint
 * said when to come back. A healthy answer only resets the failure count. A policy with `active` and
 * neither `eviction` nor `unhealthyExpression` has no passive checks: answers are not tracked.
 */
/** An endpoint's health state, kept across reloads that keep the endpoint and its policy. */
export function endpointHealth(
  policy: NonNullable<ResolvedBackendPolicies['health']>,
  backend: string,
  endpoint: string,
  pools: PoolRegistry | null,
  used: Set<Retained>,
): EndpointHealth {
  const rule = ejectionRule(policy.eviction);
  const baseMs = parseGoDuration(policy.eviction?.duration ?? '') ?? DEFAULT_EJECTION_MS;
  const key = `health:${JSON.stringify([backend, endpoint, rule, baseMs, policy.active ?? null])}`;
  const create = () => new EndpointHealth(backend, endpoint, rule, baseMs);
  const health = pools ? pools.keep(key, create) : create();
  used.add(health);
  return health;
}

export function trackHealth(
  policy: NonNullable<ResolvedBackendPolicies['health']>,
  backend: string,
  endpoint: string,
  pools: PoolRegistry | null,
  used: Set<Retained>,
  call: Handler,
): HealthTracking {
  const health = endpointHealth(policy, backend, endpoint, pools, used);
  if (policy.active && !policy.eviction && !policy.unhealthyExpression) return { health, call };
  const expr: CelProgram | undefined = policy.unhealthyExpression
    ? compileCel(policy.unhealthyExpression)
    : undefined;
  return {
    health,
    call: async (ctx) => {
      try {
        await call(ctx);
      } catch (err) {
        if (err instanceof GwError && CONNECTION_FAILURES.has(err.code)) health.fail(Date.now(), err.code);
        throw err;
      }
      const res = ctx.response;
      if (res === undefined) return;
      const status = res.status;
      if ((status === 503 || status === 429) && res.headers['retry-after'] !== undefined) {
        const now = Date.now();
        const ms = retryAfterMs(res.headers['retry-after'], now);
        if (ms !== undefined) {
          health.toldToWait(now, ms, `${status} Retry-After`);
          return;
        }
      }
      if (expr ? celTrue(expr, ctx.celContext()) : status >= 500) health.fail(Date.now(), `status ${status}`);
      else health.succeed(Date.now());
    },
  };
}
