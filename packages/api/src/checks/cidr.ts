// IP addresses and CIDRs as the config writes them (trustedProxies, ipAccessControl, backend
// addresses), checked without the network stack.

/** `a.b.c.d`, `a.b.c.d/n` (n ≤ 32), or an IPv6 address with an optional `/n` (n ≤ 128). */
export function isCidr(text: string): boolean {
  const slash = text.indexOf('/');
  const addr = slash === -1 ? text : text.slice(0, slash);
  const v6 = addr.includes(':');
  if (!(v6 ? isIPv6(addr) : isIPv4(addr))) return false;
  if (slash === -1) return true;
  const bits = text.slice(slash + 1);
  return /^[0-9]{1,3}$/.test(bits) && Number(bits) <= (v6 ? 128 : 32);
}

function isIPv4(a: string): boolean {
  const parts = a.split('.');
  return parts.length === 4 && parts.every((p) => /^(0|[1-9][0-9]{0,2})$/.test(p) && Number(p) <= 255);
}

function isIPv6(a: string): boolean {
  let groups = a.split(':');
  // An embedded IPv4 address (::ffff:10.0.0.1) counts as two groups.
  const tail = groups[groups.length - 1] ?? '';
  if (tail.includes('.')) {
    if (!isIPv4(tail)) return false;
    groups = [...groups.slice(0, -1), '0', '0'];
  }
  const gap = a.indexOf('::');
  if (gap !== a.lastIndexOf('::')) return false;
  if (gap === -1) return groups.length === 8 && groups.every(isHexGroup);
  // `::` leaves empty strings where it stands; the groups around it must be fewer than eight.
  const filled = groups.filter((g) => g !== '');
  return filled.length <= 7 && filled.every(isHexGroup) && !/(^:[^:])|([^:]:$)/.test(a);
}

function isHexGroup(g: string): boolean {
  return /^[0-9a-fA-F]{1,4}$/.test(g);
}
