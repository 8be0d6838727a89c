// Dynamic forward proxy: the destination is the request's own authority (Host / :authority, which on
// HTTPS listeners is what SNI named), or with dynamic.target what that CEL gives for the request
// (host:port, e.g. from metadata a policy before set). One pool per destination, least recently used
// ones closed.
import type { CelProgram } from '../../../cel/cel.ts';
import { GwError } from '../../../errors.ts';
import type { RequestContext } from '../../../pipeline/context.ts';
import { AUTHORITY_FORM } from '../../../pipeline/request-target.ts';
import type { CallTarget } from '../../call.ts';
import type { PoolRegistry, PoolSpec, Retained } from '../../pools.ts';

const MAX_DESTINATIONS = 256;

export class DynamicTargets {
  readonly #pools: PoolRegistry;
  readonly #base: Omit<PoolSpec, 'origin'>;
  readonly #recent = new Map<string, CallTarget>();
  readonly #used: Set<Retained>;

  readonly #target: CelProgram | undefined;
  /** The dial target worked out for a request (dynamic.target is evaluated once per request). */
  readonly #chosen = new WeakMap<RequestContext, string>();

  constructor(pools: PoolRegistry, base: Omit<PoolSpec, 'origin'>, used: Set<Retained>, target?: CelProgram) {
    this.#pools = pools;
    this.#base = base;
    this.#used = used;
    this.#target = target;
  }

  /** Where `ctx` goes: dynamic.target's host:port, else the request's authority (lower case). */
  destination(ctx: RequestContext): string {
    if (!this.#target)
      return (typeof ctx.headers.host === 'string' ? ctx.headers.host : ctx.authority).toLowerCase();
    const known = this.#chosen.get(ctx);
    if (known !== undefined) return known;
    const v = this.#target.eval(ctx.celContext());
    if (typeof v !== 'string' || !AUTHORITY_FORM.test(v))
      throw new GwError(
        'GW_ERR_DYNAMIC_TARGET',
        `dynamic.target gave ${v === undefined ? 'no value (an error or a missing field)' : JSON.stringify(typeof v === 'bigint' ? String(v) : v)}, not host:port`,
      );
    const out = v.toLowerCase();
    this.#chosen.set(ctx, out);
    return out;
  }

  forRequest(ctx: RequestContext): CallTarget {
    const authority = this.destination(ctx);
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
