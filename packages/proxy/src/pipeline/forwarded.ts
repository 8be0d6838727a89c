// X-Forwarded-For and X-Forwarded-Proto, set once per request before any policy sees the headers.
// Only a peer the config names as a trusted proxy may speak for the client; anyone else could claim
// to be https or any address, and a backend that trusts those headers would believe it.
import { BlockList, isIPv6 } from 'node:net';
import type { RequestContext } from './context.ts';

declare module './context.ts' {
  interface RequestExtensions {
    /** The peer is a trusted proxy: its X-Forwarded-* headers speak for the client. */
    trustedPeer?: boolean;
  }
}

/** The peers whose X-Forwarded-* headers are kept: the `trustedProxies` CIDRs, compiled. */
export class TrustedProxies {
  readonly #list = new BlockList();
  readonly #empty: boolean;

  /** `cidrs` were checked at load time (`a.b.c.d`, `a.b.c.d/n`, IPv6 likewise). */
  constructor(cidrs: readonly string[]) {
    for (const c of cidrs) {
      const slash = c.indexOf('/');
      const addr = slash === -1 ? c : c.slice(0, slash);
      const type = isIPv6(addr) ? 'ipv6' : 'ipv4';
      const prefix = slash === -1 ? (type === 'ipv6' ? 128 : 32) : Number(c.slice(slash + 1));
      this.#list.addSubnet(addr, prefix, type);
    }
    this.#empty = cidrs.length === 0;
  }

  trusts(address: string): boolean {
    if (this.#empty || address === '') return false;
    return this.#list.check(address, isIPv6(address) ? 'ipv6' : 'ipv4');
  }
}

/**
 * A trusted peer's X-Forwarded-Proto is kept (set from the connection when absent) and the peer is
 * appended to its X-Forwarded-For. From anyone else both are replaced: the scheme of the connection,
 * and the peer's address alone.
 */
export function setForwardedHeaders(ctx: RequestContext, trusted: TrustedProxies): void {
  const h = ctx.headers;
  const peer = ctx.source.address;
  if (trusted.trusts(peer)) {
    ctx.ext.trustedPeer = true;
    const xff = h['x-forwarded-for'];
    h['x-forwarded-for'] = xff ? `${Array.isArray(xff) ? xff.join(', ') : xff}, ${peer}` : peer;
    if (h['x-forwarded-proto'] === undefined) h['x-forwarded-proto'] = ctx.scheme;
  } else {
    if (peer === '') delete h['x-forwarded-for'];
    else h['x-forwarded-for'] = peer;
    h['x-forwarded-proto'] = ctx.scheme;
  }
}
