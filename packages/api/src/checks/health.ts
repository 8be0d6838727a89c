// Checks of a backend's health policy across fields: active checks need a positive interval and timeout.
import type { BackendPolicies } from '../config/schema.ts';
import type { FieldPath } from '../config/source.ts';
import { parseGoDuration } from '../duration.ts';
import type { Problem } from './problem.ts';

export function checkBackendHealth(h: NonNullable<BackendPolicies['health']>, path: FieldPath): Problem[] {
  const out: Problem[] = [];
  const a = h.active;
  if (!a) return out;
  for (const k of ['interval', 'timeout'] as const) {
    const v = a[k];
    if (v !== undefined && (parseGoDuration(v) ?? 0) <= 0)
      out.push({ path: [...path, 'active', k], message: `${k} must be more than 0` });
  }
  return out;
}
