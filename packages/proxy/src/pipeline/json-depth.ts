// How deeply a client's JSON may nest. JSON.parse reads any depth, but JSON.stringify and the
// gateway's own walks (translation, guards, CEL) recurse, and a body of a few kilobytes of brackets
// overflowed the stack: a 500 for what is the client's error. agentgateway's JSON reader (serde_json)
// refuses past 128 levels; so does gw, with a 400 in the client's protocol.

/** The deepest nesting of objects and arrays a client's JSON body may have. */
export const MAX_JSON_DEPTH = 128;

/**
 * Whether `value` (as JSON.parse returns it) nests objects and arrays deeper than `max` levels: the
 * value itself is level 1. Iterative, and it visits only objects and arrays, so long strings cost
 * nothing.
 */
export function nestedDeeperThan(value: unknown, max: number = MAX_JSON_DEPTH): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const stack: unknown[] = [value];
  const depths: number[] = [1];
  while (stack.length > 0) {
    const v = stack.pop() as object;
    const depth = depths.pop() as number;
    if (depth > max) return true;
    if (Array.isArray(v)) {
      for (const item of v)
        if (typeof item === 'object' && item !== null) {
          stack.push(item);
          depths.push(depth + 1);
        }
    } else {
      for (const k in v) {
        const item = (v as Record<string, unknown>)[k];
        if (typeof item === 'object' && item !== null) {
          stack.push(item);
          depths.push(depth + 1);
        }
      }
    }
  }
  return false;
}
