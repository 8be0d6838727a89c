// Dynamic forward proxy: the destination is the request's own authority (Host / :authority, which on
// HTTPS listeners is what SNI named). One pool per destination, least recently used ones closed.
import { GwError } from '../../../errors.ts';
import type { RequestContext } from '../../../pipeline/context.ts';
import type { CallTarget } from '../../call.ts';
import type { PoolRegistry, PoolSpec, Retained } from '../../pools.ts';

const MAX_DESTINATIONS = 256;

export class DynamicTargets {
  readonly #pools: PoolRegistry;
  readonly #base: Omit<PoolSpec, 'origin'>;
  readonly #recent = new Map<string, CallTarget>();
  readonly #used: Set<Retained>;

  constructor(pools: PoolRegistry, base: Omit<PoolSpec, 'origin'>, used: Set<Retained>) {
    this.#pools = pools;
    this.#base = base;
    this.#used = used;
  }

  forRequest(ctx: RequestContext): CallTarget {
    const authority = (typeof ctx.headers.host === 'string' ? ctx.headers.host : ctx.authority).toLowerCase();
    if (!authority) throw new GwError('GW_ERR_DYNAMIC_NO_HOST');
    const hit = this.#recent.get(authority);
    if (hit) {
      this.#recent.delete(authority);
      this.#recent.set(authority, hit);
      return hit;
    }
    const tls = this.#base.tls !== undefined;
    const hasPort = /:[0-9]+$/.test(authority) && !authority.endsWith(']');
    const endpoint = hasPort ? authority : `${authority}:${tls ? 443 : 80}`;
    let origin: string;
    try {
      origin = new URL(`${tls ? 'https' : 'http'}://${endpoint}`).origin;
    } catch {
      throw new GwError(
        'GW_ERR_DYNAMIC_NO_HOST',
        `dynamic forward proxy: invalid host ${JSON.stringify(authority)}`,
      );
    }
    const dispatcher = this.#pools.acquire({ ...this.#base, origin });
    this.#used.add(dispatcher);
    const target = { dispatcher, endpoint };
    this.#recent.set(authority, target);
    if (this.#recent.size > MAX_DESTINATIONS) {
      const oldest = this.#recent.keys().next().value as string;
      this.#recent.delete(oldest);
    }
    return target;
  }
}
