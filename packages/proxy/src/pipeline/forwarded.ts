// X-Forwarded-For and X-Forwarded-Proto, set once per request before any policy sees the headers.
// Only a peer the config names as a trusted proxy may speak for the client; anyone else could claim
// to be https or any address, and a backend that trusts those headers would believe it.
import { AddressRanges } from './address-ranges.ts';
import type { RequestContext } from './context.ts';

declare module './context.ts' {
  interface RequestExtensions {
    /** The peer is a trusted proxy: its X-Forwarded-* headers speak for the client. */
    trustedPeer?: boolean;
  }
}

/** The peers whose X-Forwarded-* headers are kept: the `trustedProxies` CIDRs, compiled. */
export class TrustedProxies {
  readonly #ranges: AddressRanges;

  /** `cidrs` were checked at load time (`a.b.c.d`, `a.b.c.d/n`, IPv6 likewise). */
  constructor(cidrs: readonly string[]) {
    this.#ranges = new AddressRanges(cidrs);
  }

  trusts(address: string): boolean {
    return !this.#ranges.empty && this.#ranges.has(address);
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
