// Addresses and CIDRs as a matcher of client addresses (trustedProxies, ipAccessControl). An IPv4
// address is matched against the IPv4 ranges only and an IPv6 address against the IPv6 ranges only:
// one node:net BlockList would also match an IPv4 address against IPv6 ranges (as ::ffff:a.b.c.d), so
// that ::/0 would hold every IPv4 address. Addresses arrive as the peer's is written (IPv4-mapped
// IPv6 already as IPv4, RequestContext.source).
import { BlockList, isIPv4, isIPv6 } from 'node:net';

export class AddressRanges {
  readonly #v4 = new BlockList();
  readonly #v6 = new BlockList();
  readonly empty: boolean;

  /** `cidrs` were checked at load time (`a.b.c.d`, `a.b.c.d/n`, IPv6 likewise). */
  constructor(cidrs: readonly string[]) {
    for (const c of cidrs) {
      const slash = c.indexOf('/');
      const addr = slash === -1 ? c : c.slice(0, slash);
      const v6 = isIPv6(addr);
      const prefix = slash === -1 ? (v6 ? 128 : 32) : Number(c.slice(slash + 1));
      if (v6) this.#v6.addSubnet(addr, prefix, 'ipv6');
      else this.#v4.addSubnet(addr, prefix, 'ipv4');
    }
    this.empty = cidrs.length === 0;
  }

  /** Whether `address` is in a range; false for anything that is not an IP address. */
  has(address: string): boolean {
    if (isIPv4(address)) return this.#v4.check(address, 'ipv4');
    return isIPv6(address) && this.#v6.check(address, 'ipv6');
  }
}
