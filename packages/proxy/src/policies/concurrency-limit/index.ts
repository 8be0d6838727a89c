// concurrencyLimit: how many requests may be in flight at once (agentgateway's policy of that name,
// newer than the schema gw follows). A rate limit counts the requests that started in a window; this
// counts those running now. Each limit of the list takes a slot when the request is admitted, and
// every slot goes back when the response has been sent or the client has gone (the response's
// 'close'), whatever happened in between. Over any limit, the request gets a 429 and holds nothing.
//
// A limit's `key` (CEL: `jwt.sub`, `jwt.sub + "/" + llm.requestModel`) gives each value a counter
// of its own; a key that fails to evaluate or is not a string counts on the shared counter of
// requests without one. `limitOverride` (CEL) may give a request another limit than maxConcurrent
// (0 refuses it), e.g. more for one team. On an ai backend's route the LLM request has been read before the route's
// policies run, so llm.* is there. Counters are the proxy's, shared by its workers (in-flight.ts);
// a proxy with more keys in flight at once than KEYED_SLOTS refuses requests of other keys (a limit
// never stops counting). A limit set on a gateway or listener counts on each of its routes.
import type { CelProgram } from '../../cel/cel.ts';
import { compileCel } from '../../cel/cel.ts';
import { GwError } from '../../errors.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import { withConditional } from '../conditional.ts';
import { keyOf } from '../limit-keys.ts';
import type { BuildEnv, PolicyConfig } from '../types.ts';
import { InFlightCounter, InFlightTable, inFlightBytes, KEYED_SLOTS, type Taken } from './in-flight.ts';

type Config = PolicyConfig<'concurrencyLimit'>;
/** One limit: the plain form's entries and the conditional form's entry alike. */
export type ConcurrencyLimit = Extract<Config, readonly unknown[]>[number];

interface Limit {
  /** A slot, or why not, under this request's limit (maxConcurrent, or what limitOverride gave). */
  take(ctx: RequestContext): { max: number; taken: Taken };
}

/**
 * Shared-memory keys: a limit at the same place on the same route with the same key keeps its
 * counters across reloads, even when its maximum changes, so requests in flight still count.
 */
const memoryKey = (route: string, i: number, l: ConcurrencyLimit) =>
  `${route}#concurrency${i}#${l.key === undefined ? '-' : `key:${l.key}`}`;

function compile(l: ConcurrencyLimit, buffer: SharedArrayBuffer): Limit {
  const configured = l.maxConcurrent;
  const override = l.limitOverride === undefined ? undefined : compileCel(l.limitOverride);
  const maxFor = override
    ? (ctx: RequestContext) => {
        const v = override.eval(ctx.celContext());
        const n = typeof v === 'bigint' ? Number(v) : v;
        return typeof n === 'number' && Number.isInteger(n) && n >= 0 ? n : configured;
      }
    : () => configured;
  if (l.key === undefined) {
    const counter = new InFlightCounter(buffer);
    return {
      take: (ctx) => {
        const max = maxFor(ctx);
        return { max, taken: counter.take(max) };
      },
    };
  }
  const key: CelProgram = compileCel(l.key);
  const table = new InFlightTable(buffer);
  return {
    take: (ctx) => {
      const max = maxFor(ctx);
      return { max, taken: table.take(keyOf(key.eval(ctx.celContext())), max) };
    },
  };
}

export const concurrencyLimit = withConditional<'concurrencyLimit', ConcurrencyLimit[], ConcurrencyLimit>(
  {
    name: 'concurrencyLimit',
    build(config: ConcurrencyLimit[], env: BuildEnv) {
      const limits = config.map((l, i) =>
        compile(l, env.shared(memoryKey(env.route, i, l), inFlightBytes(l.key !== undefined))),
      );
      return (ctx, next) => {
        const held: (() => void)[] = [];
        const releaseAll = () => {
          for (const r of held) r();
        };
        for (const l of limits) {
          const { max, taken } = l.take(ctx);
          if (taken === 'over' || taken === 'full') {
            releaseAll();
            ctx.obs?.event(ctx, 'concurrencyLimit', { limited: true, limit: max }, null, 'warn');
            throw new GwError(
              'GW_ERR_CONCURRENCY_LIMITED',
              taken === 'full'
                ? `concurrencyLimit: more than ${KEYED_SLOTS} keys in flight`
                : max === 0
                  ? 'concurrencyLimit: none allowed'
                  : `concurrencyLimit: ${max} already in flight`,
            );
          }
          held.push(taken.release);
        }
        if (held.length > 0) {
          // The client gone while earlier policies waited: the response has closed already.
          if (ctx.abortReason !== undefined) {
            releaseAll();
            throw ctx.abortReason;
          }
          // The response's end, or the client's going (or a deadline): every slot goes back once.
          ctx.res.once('close', releaseAll);
          ctx.addAbortHook({ abort: releaseAll });
        }
        return next(ctx);
      };
    },
    sharedMemory: (config, env) =>
      config.map((l, i) => ({ key: memoryKey(env.route, i, l), bytes: inFlightBytes(l.key !== undefined) })),
  },
  (entry) => [entry],
);
