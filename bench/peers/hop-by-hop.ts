// The hop-by-hop headers (RFC 9110 §7.6.1) that the Node peers in this directory do not forward.

export const HOP_BY_HOP: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** A node-style header object (lower-case names) without its hop-by-hop headers. */
export function withoutHopByHop<T>(headers: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(headers).filter(([k]) => !HOP_BY_HOP.has(k)));
}
