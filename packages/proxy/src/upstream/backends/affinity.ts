// sessionAffinity's hashing: weighted rendezvous (highest random weight). Each candidate scores
// -weight / ln(u), u a uniform value in (0, 1) from the hash of the request's value and the
// candidate's name; the highest score wins. Every value picks a candidate with probability in
// proportion to its weight, and taking a candidate away moves only the values it had.

/** The affinity value of a CEL result: a string, or bytes as their hex; anything else has none. */
export function affinityKey(v: unknown): string | undefined {
  if (typeof v === 'string') return v === '' ? undefined : v;
  if (v instanceof Uint8Array) return v.length === 0 ? undefined : Buffer.from(v).toString('hex');
  return undefined;
}

/** 32-bit FNV-1a over the UTF-16 code units, finished with murmur3's avalanche. */
export function hashString(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return mix(h);
}

function mix(x: number): number {
  let h = x;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** The rendezvous score of a value (its hash) for a candidate (its name's hash) of weight `weight`. */
export function rendezvousScore(keyHash: number, seed: number, weight: number): number {
  const u = (mix(keyHash ^ Math.imul(seed, 0x9e3779b1)) + 0.5) / 4294967296;
  return -weight / Math.log(u);
}
