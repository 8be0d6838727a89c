// An inline JWKS document must at least be a JSON object with a "keys" list; the keys themselves are
// imported when the proxy builds the policy.
import type { FieldPath } from '../config/source.ts';
import type { Problem } from './problem.ts';

export function checkJwks(text: string, path: FieldPath): Problem[] {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    return [{ path, message: `JWKS is not valid JSON: ${(err as Error).message}` }];
  }
  const keys = typeof doc === 'object' && doc !== null ? (doc as { keys?: unknown }).keys : undefined;
  return Array.isArray(keys) ? [] : [{ path, message: 'JWKS must be a JSON object with a "keys" list' }];
}
