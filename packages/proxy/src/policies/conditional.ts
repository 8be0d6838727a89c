// The conditional form of a policy (agentgateway's `{conditional: [...]}`), once for every policy that
// has it: each entry's layer is built and its condition compiled when the route is compiled; per request
// the first entry whose condition is true runs, and when none is, the request goes on as if the policy
// were not set. The trace's `conditional` event names the entry picked (or none). A condition that reads
// `request.body` has the body read into memory first (up to the buffer limit: 413 over it).
import type { ConditionalEntry } from '@gw/api';
import { type CelContext, type CelProgram, celTrue, compileCel } from '../cel/cel.ts';
import { GwError } from '../errors.ts';
import { bufferUpTo, contentLength } from '../pipeline/body.ts';
import type { RequestContext } from '../pipeline/context.ts';
import type { Layer } from '../pipeline/layer.ts';
import type { BuildEnv, PolicyConfig, PolicyDefinition, PolicyName, SharedMemoryNeed } from './types.ts';

/** A policy module's plain form: what it builds from one variant. */
export interface PlainPolicy<K extends PolicyName, P> {
  name: K;
  build(config: P, env: BuildEnv): Layer;
  sharedMemory?(config: P, env: Pick<BuildEnv, 'route'>): SharedMemoryNeed[];
}

type Entries<E> = { conditional: ConditionalEntry<E>[] };

/**
 * The definition of a policy written plainly or conditionally, from its plain form. `plainOf` turns an
 * entry into the plain config (localRateLimit's entry is one bucket; its plain form a list).
 */
export function withConditional<K extends PolicyName, P, E = P>(
  def: PlainPolicy<K, P>,
  plainOf: (entry: E) => P = (e) => e as unknown as P,
): PolicyDefinition<K> {
  const variants = (c: Entries<E>) =>
    c.conditional.map(({ condition, ...rest }) => ({ condition, config: plainOf(rest as E) }));
  const isConditional = (c: unknown): c is Entries<E> =>
    typeof c === 'object' && c !== null && !Array.isArray(c) && 'conditional' in c;
  // Each variant's state (a rate limit's buckets) is its own: keyed under the route and its position.
  const variantRoute = (route: string, i: number) => `${route}?conditional[${i}]`;
  return {
    name: def.name,
    build(config: PolicyConfig<K>, env) {
      if (!isConditional(config)) return def.build(config as P, env);
      const entries = variants(config).map((v, i) => ({
        condition: v.condition === undefined ? undefined : compileCel(v.condition),
        layer: def.build(v.config, { ...env, route: variantRoute(env.route, i) }),
      }));
      return conditionalLayer(def.name, entries, env.global.maxBufferSize);
    },
    ...(def.sharedMemory
      ? {
          sharedMemory(config: PolicyConfig<K>, env: Pick<BuildEnv, 'route'>) {
            const need = def.sharedMemory as NonNullable<typeof def.sharedMemory>;
            if (!isConditional(config)) return need(config as P, env);
            return variants(config).flatMap((v, i) => need(v.config, { route: variantRoute(env.route, i) }));
          },
        }
      : {}),
  };
}

interface Variant {
  condition: CelProgram | undefined;
  layer: Layer;
}

function conditionalLayer(policy: string, entries: Variant[], limit: number): Layer {
  const readsBody = entries.some((e) => e.condition?.reads('request', 'body'));
  return async (ctx, next) => {
    if (readsBody) await bufferRequest(ctx, limit, policy);
    const start = ctx.obs ? performance.now() : null;
    let cel: CelContext | undefined;
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i] as Variant;
      if (e.condition) {
        cel ??= ctx.celContext();
        if (!celTrue(e.condition, cel)) continue;
      }
      ctx.obs?.event(ctx, 'conditional', { policy, entry: i, fallback: e.condition === undefined }, start);
      return e.layer(ctx, next);
    }
    ctx.obs?.event(ctx, 'conditional', { policy, entry: null }, start);
    return next(ctx);
  };
}

async function bufferRequest(ctx: RequestContext, limit: number, policy: string): Promise<void> {
  if (!ctx.body || Buffer.isBuffer(ctx.body)) return;
  const r = await bufferUpTo(ctx.body, limit, contentLength(ctx.headers), ctx);
  if (!r.ok) {
    r.stream.resume(); // drain, so the connection stays usable for the 413
    throw new GwError(
      'GW_ERR_REQUEST_TOO_LARGE',
      `request body is larger than the buffer limit (${limit} bytes) for a ${policy} condition`,
    );
  }
  ctx.body = r.data;
  ctx.headers['content-length'] = String(r.data.length);
}
