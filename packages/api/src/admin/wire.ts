// Reading admin JSON that came over the network or from a saved file: parse, check against the shared
// schema, and on failure say in one line what is wrong (which field, for a wrong shape).
import type { z } from 'zod';

export type WireResult<T> =
  /** `json` is the document as sent, with any fields the schema does not know (which `value` drops). */
  { ok: true; value: T; json: unknown } | { ok: false; problem: 'json' | 'shape'; detail: string };

export function readWire<S extends z.ZodType>(schema: S, text: string): WireResult<z.output<S>> {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    return { ok: false, problem: 'json', detail: (err as Error).message };
  }
  const result = schema.safeParse(raw);
  if (result.success) return { ok: true, value: result.data, json: raw };
  const issue = result.error.issues[0];
  const at = issue?.path.length ? issue.path.map(String).join('.') : '(top level)';
  return { ok: false, problem: 'shape', detail: `${at}: ${issue?.message ?? 'unexpected shape'}` };
}
