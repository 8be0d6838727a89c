// What the limits by key (concurrencyLimit, localRateLimit) count a request under: the key's value
// as text, and the two hashes their shared-memory tables find it by.

/**
 * The counter a key's value names: a string as it is, a number or a bool as written; anything else
 * (a failed evaluation, a map) the one counter of requests without a key, which no string names.
 */
export function keyOf(v: unknown): string {
  if (typeof v === 'string') return `s:${v}`;
  if (typeof v === 'bigint' || typeof v === 'number' || typeof v === 'boolean') return `v:${String(v)}`;
  return '';
}

/** Two independent 32-bit FNV-1a hashes of the key's UTF-16 code units (different offsets). */
export function hashes(key: string): [number, number] {
  let h1 = 0x811c9dc5;
  let h2 = 0x01000193 ^ 0x5bd1e995;
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x01000193);
    h2 = Math.imul(h2 ^ c, 0x01000193) ^ (h2 >>> 15);
  }
  return [h1 | 0, h2 | 0];
}
