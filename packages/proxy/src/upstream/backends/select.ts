// Which backend of a route serves a request. Within a group: weighted random choice. Across groups
// (LLM provider groups): priority failover — the first group is tried first, and a request whose
// backend failed or answered with a status that means "try elsewhere" moves on to the next group.
import type { CelProgram } from '../../cel/cel.ts';
import { GwError } from '../../errors.ts';
import { bufferForReplay, discard } from '../../pipeline/body.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import type { Handler } from '../../pipeline/layer.ts';
import type { EndpointHealth } from '../health.ts';
import { affinityKey, hashString, rendezvousScore } from './affinity.ts';

export interface Choice {
  name: string;
  weight: number;
  handler: Handler;
  /** Set when the backend has a `health` policy: while ejected or failing its probes it is left out. */
  health?: EndpointHealth | undefined;
}

/**
 * Weighted random choice; backends of weight 0 are never chosen. With `affinity` (sessionAffinity's
 * CEL source), requests with the same value go to the same backend (affinity.ts).
 */
export function weighted(choices: readonly Choice[], affinity?: CelProgram): Handler {
  const live = choices.filter((c) => c.weight > 0);
  if (live.length === 0) {
    return async () => {
      throw new GwError('GW_ERR_NO_BACKEND');
    };
  }
  if (live.length === 1) return (live[0] as Choice).handler;
  if (affinity) return affine(live, affinity);
  if (live.some((c) => c.health)) return healthWeighted(live);
  const total = live.reduce((s, c) => s + c.weight, 0);
  return (ctx) => {
    let n = Math.random() * total;
    for (const c of live) {
      n -= c.weight;
      if (n < 0) return c.handler(ctx);
    }
    return (live[live.length - 1] as Choice).handler(ctx);
  };
}

/**
 * A weighted random pick among `choices` (weight above 0), for what is not a request: a TCP
 * connection's backend. Undefined when there is none to pick.
 */
export function pickWeighted<T extends { weight: number }>(choices: readonly T[]): () => T | undefined {
  const live = choices.filter((c) => c.weight > 0);
  if (live.length <= 1) {
    const only = live[0];
    return () => only;
  }
  const total = live.reduce((s, c) => s + c.weight, 0);
  return () => {
    let n = Math.random() * total;
    for (const c of live) {
      n -= c.weight;
      if (n < 0) return c;
    }
    return live[live.length - 1];
  };
}

/**
 * Weighted choice among the backends in the balancing set: not ejected by passive checks, not failing
 * active ones. When none is in it the choice is made among all of them (panic mode): a guess beats
 * failing every request, and the answers it gets keep the health state current.
 */
function healthWeighted(live: readonly Choice[]): Handler {
  return (ctx) => {
    const now = Date.now();
    let total = 0;
    const ejected: string[] = [];
    const unhealthy: string[] = [];
    for (const c of live) {
      if (c.health === undefined || c.health.available(now)) total += c.weight;
      else if (c.health.ejected(now)) ejected.push(c.name);
      else unhealthy.push(c.name);
    }
    const panic = total === 0;
    let n = Math.random() * (panic ? live.reduce((s, c) => s + c.weight, 0) : total);
    let pick = live[live.length - 1] as Choice;
    for (const c of live) {
      if (!panic && c.health !== undefined && !c.health.available(now)) continue;
      n -= c.weight;
      if (n < 0) {
        pick = c;
        break;
      }
    }
    ctx.obs?.event(
      ctx,
      'endpointSelection',
      {
        backend: pick.name,
        endpoint: pick.health?.endpoint ?? null,
        reason: selectionReason(panic, ejected, unhealthy),
        ejected,
        unhealthy,
      },
      null,
      panic ? 'warn' : 'info',
    );
    return pick.handler(ctx);
  };
}

/**
 * sessionAffinity: the candidate with the highest rendezvous score for the request's value among those
 * in the balancing set (all of them when none is: panic). Removing a candidate moves only the values
 * it had; a request without a value (the expression fails or gives neither a string nor bytes) gets
 * the weighted random choice.
 */
function affine(live: readonly Choice[], source: CelProgram): Handler {
  const seeds = new Map(live.map((c) => [c, hashString(c.name)]));
  const fallback = live.some((c) => c.health) ? healthWeighted(live) : weighted(live);
  return (ctx) => {
    const key = affinityKey(source.eval(ctx.celContext()));
    if (key === undefined) {
      ctx.obs?.event(ctx, 'endpointSelection', { reason: 'session affinity: no value, chosen at random' });
      return fallback(ctx);
    }
    const now = Date.now();
    const inSet = live.filter((c) => c.health === undefined || c.health.available(now));
    const pool = inSet.length > 0 ? inSet : live;
    const keyHash = hashString(key);
    let pick = pool[0] as Choice;
    let best = Number.NEGATIVE_INFINITY;
    for (const c of pool) {
      const score = rendezvousScore(keyHash, seeds.get(c) as number, c.weight);
      if (score > best) {
        best = score;
        pick = c;
      }
    }
    ctx.obs?.event(
      ctx,
      'endpointSelection',
      {
        backend: pick.name,
        endpoint: pick.health?.endpoint ?? null,
        reason:
          inSet.length > 0
            ? `session affinity${inSet.length < live.length ? ' (out of the balancing set skipped)' : ''}`
            : 'session affinity: none in the balancing set, chosen among all (panic)',
      },
      null,
      inSet.length > 0 ? 'info' : 'warn',
    );
    return pick.handler(ctx);
  };
}

function selectionReason(panic: boolean, ejected: string[], unhealthy: string[]): string {
  if (panic) return 'none in the balancing set (ejected or failing health checks): chosen among all (panic)';
  if (ejected.length > 0 && unhealthy.length > 0) return 'ejected and failing health checks skipped';
  if (ejected.length > 0) return 'ejected skipped';
  if (unhealthy.length > 0) return 'failing health checks skipped';
  return 'all healthy';
}

export interface FailoverOptions {
  /** Largest request body kept in memory so a later group can be sent it again. */
  bufferLimit: number;
  /** Whether an answer moves the request on; default: 429 and 5xx. */
  failsOver?: (status: number) => boolean;
  /**
   * Per group, whether any of it is in the balancing set (its health): a group that is wholly out is
   * passed by without a request, unless no later group is in either (then each is tried as usual).
   */
  available?: readonly (() => boolean)[];
}

const defaultFailsOver = (status: number) => status === 429 || status >= 500;

/**
 * Tries the groups in priority order. A request body larger than the buffer limit is sent once, to
 * the first group only. Each attempt starts from the request as it was before the first one, so a
 * backend policy of one group (a header, a rewrite) does not leak into the next.
 */
export function failover(groups: readonly Handler[], opts: FailoverOptions): Handler {
  if (groups.length === 1) return groups[0] as Handler;
  const failsOver = opts.failsOver ?? defaultFailsOver;
  return async (ctx) => {
    const replayable = await bufferForReplay(ctx, opts.bufferLimit);
    const saved = snapshot(ctx);
    const skip = passedBy(opts.available);
    let tried = 0;
    for (let i = 0; i < groups.length; i++) {
      if (skip?.[i]) continue;
      const last = !replayable || i === groups.length - 1;
      if (tried++ > 0) restore(ctx, saved);
      try {
        await (groups[i] as Handler)(ctx);
      } catch (err) {
        if (
          last ||
          ctx.abortReason !== undefined ||
          !(err instanceof GwError) ||
          err.code === 'GW_ERR_CLIENT_CLOSED'
        )
          throw err;
        continue;
      }
      const res = ctx.response;
      if (last || !res || !failsOver(res.status)) return;
      discard(res.body);
      ctx.response = undefined;
    }
  };
}

/**
 * The groups to pass by: those wholly out of the balancing set while a later one is in. None when
 * no group is in (each is tried, and the answers move the health state on).
 */
function passedBy(available: FailoverOptions['available']): boolean[] | undefined {
  if (!available) return undefined;
  const now = available.map((a) => a());
  const lastIn = now.lastIndexOf(true);
  if (lastIn < 0) return undefined;
  return now.map((inSet, i) => !inSet && i < lastIn);
}

interface Saved {
  method: string;
  path: string;
  query: string;
  headers: RequestContext['headers'];
  body: RequestContext['body'];
}

function snapshot(ctx: RequestContext): Saved {
  return {
    method: ctx.method,
    path: ctx.path,
    query: ctx.query,
    headers: { ...ctx.headers },
    body: ctx.body,
  };
}

function restore(ctx: RequestContext, s: Saved): void {
  ctx.method = s.method;
  ctx.path = s.path;
  ctx.query = s.query;
  ctx.headers = { ...s.headers };
  ctx.body = s.body;
  ctx.endpoint = undefined;
}
