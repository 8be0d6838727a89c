// Reading the loosely typed JSON of LLM requests and answers, shared by the format pairs.
import { GwError } from '../../errors.ts';

type Obj = Record<string, unknown>;

/** A JSON object (not an array), or undefined. */
export const obj = (v: unknown): Obj | undefined =>
  v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : undefined;

export const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** A request the pair cannot convert: a 400 in the client's format. */
export function bad(message: string): GwError {
  return new GwError('GW_ERR_LLM_BAD_REQUEST', message);
}

/** The text of a message's content: a string, or its text blocks/parts joined by newlines. */
export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((p) => (obj(p)?.type === 'text' ? (str(obj(p)?.text) ?? '') : ''))
    .filter((t) => t !== '')
    .join('\n');
}
