// What a check returns: where the problem is (a field path in the shape that was checked, under the
// caller's prefix) and what is wrong, in words a user can act on. Checks never throw.
import type { FieldPath } from '../config/source.ts';

export interface Problem {
  path: FieldPath;
  message: string;
}

/**
 * A problem's message on one line, for a status condition: the CEL library's code frame (the source
 * line and a caret under the spot) becomes `(at line L, column C)`; other line breaks become spaces.
 */
export function inOneLine(message: string): string {
  const frame = /\n\n(>\s*(\d+) \| )[^\n]*\n( *)\^\s*$/.exec(message);
  let out = message;
  if (frame) {
    const column = (frame[3] ?? '').length - (frame[1] ?? '').length + 1;
    out = `${message.slice(0, frame.index)} (at line ${frame[2]}, column ${column})`;
  }
  return out.replace(/\s*\n\s*/g, ' ');
}
