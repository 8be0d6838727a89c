// Regular expressions users write (route and header matches, guard patterns, webhook header
// matches) are JavaScript RegExps in the proxy. agentgateway's users write them for Rust's `regex`
// crate, so what that dialect spells differently is rewritten first: inline flags `(?i)` (which
// JavaScript has only as a group, `(?i:…)`), `(?P<name>…)`, `\A` and `\z`, the ASCII classes
// `[[:alpha:]]` and a `]` first in a class (a literal there). A flag JavaScript has no form of (x, U, R, u) is an error naming it.
import type { FieldPath } from '../config/source.ts';
import type { Problem } from './problem.ts';

/** How the proxy compiles a guard's pattern: JavaScript syntax, every match found. */
export const GUARD_REGEX_FLAGS = 'g';

const ASCII_CLASSES: Record<string, string> = {
  alnum: '0-9A-Za-z',
  alpha: 'A-Za-z',
  ascii: '\\x00-\\x7F',
  blank: '\\t ',
  cntrl: '\\x00-\\x1F\\x7F',
  digit: '0-9',
  graph: '!-~',
  lower: 'a-z',
  print: ' -~',
  punct: '!-\\/:-@\\[-`{-~',
  space: '\\t\\n\\v\\f\\r ',
  upper: 'A-Z',
  word: '0-9A-Za-z_',
  xdigit: '0-9A-Fa-f',
};
/** The inline flags JavaScript's modifier groups take (`(?ims-ims:…)`). */
const JS_MODIFIERS = /^[ims]*(-[ims]*)?$/;

/**
 * `pattern` in JavaScript's syntax: Rust's regex spellings rewritten, anything else unchanged (an
 * invalid pattern stays invalid for RegExp to name). Throws when it uses a flag JavaScript lacks.
 */
export function jsRegexSource(pattern: string): string {
  // Fast path: nothing of the other dialect in it.
  if (!/\(\?[a-zA-Z-]*[):]|\(\?P<|\\[Az]|\[:|\[\^?\]/.test(pattern)) return pattern;
  let out = '';
  // For each open group, the inline flags set inside it so far, each a modifier group left open until
  // the group ends (and closed and opened again around each `|`, which Rust's flags reach across).
  const pending: string[][] = [[]];
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] as string;
    if (c === '\\') {
      const n = pattern[i + 1];
      if (!inClass && n === 'A') out += '^';
      else if (!inClass && n === 'z') out += '$';
      else out += c + (n ?? '');
      i++;
      continue;
    }
    if (inClass) {
      if (c === '[' && pattern[i + 1] === ':') {
        const end = pattern.indexOf(':]', i + 2);
        const name = end === -1 ? undefined : pattern.slice(i + 2, end);
        const negated = name?.startsWith('^');
        const cls = name === undefined ? undefined : ASCII_CLASSES[negated ? name.slice(1) : name];
        if (cls !== undefined && end !== -1 && !negated) {
          out += cls;
          i = end + 1;
          continue;
        }
      }
      if (c === ']') inClass = false;
      out += c;
      continue;
    }
    if (c === '[') {
      inClass = true;
      out += c;
      if (pattern[i + 1] === '^') {
        out += '^';
        i++;
      }
      // a `]` first in a class is a literal
      if (pattern[i + 1] === ']') {
        out += '\\]';
        i++;
      }
      continue;
    }
    if (c === '(') {
      const flags = /^\(\?([a-zA-Z]*(?:-[a-zA-Z]*)?)([):])/.exec(pattern.slice(i));
      if (pattern.startsWith('(?P<', i)) {
        out += '(?<';
        i += 3;
        pending.push([]);
        continue;
      }
      if (flags && flags[1] !== '' && flags[1] !== '-') {
        const f = flags[1] as string;
        if (!JS_MODIFIERS.test(f)) {
          const bad = [...new Set(f.replace(/[ims-]/g, ''))].join('');
          throw new Error(
            `the inline flag${bad.length > 1 ? 's' : ''} ${bad} of (?${f}) cannot be used here`,
          );
        }
        // `(?i)` sets a flag to the end of its group: a modifier group closed there instead
        out += `(?${f}:`;
        i += flags[0].length - 1;
        if (flags[2] === ')') pending.at(-1)?.push(f);
        else pending.push([]);
        continue;
      }
      pending.push([]);
      out += c;
      continue;
    }
    if (c === ')') {
      out += ')'.repeat(pending.pop()?.length ?? 0);
      if (pending.length === 0) pending.push([]); // an unbalanced `)`: RegExp names it
      out += c;
      continue;
    }
    if (c === '|') {
      const open = pending.at(-1) ?? [];
      out += `${')'.repeat(open.length)}|${open.map((f) => `(?${f}:`).join('')}`;
      continue;
    }
    out += c;
  }
  return out + ')'.repeat(pending.reduce((n, open) => n + open.length, 0));
}

/** A user's pattern (either dialect) as a RegExp; throws with the reason when it is not valid. */
export function userRegExp(pattern: string, flags?: string): RegExp {
  return new RegExp(jsRegexSource(pattern), flags);
}

export function checkRegex(pattern: string, path: FieldPath): Problem[] {
  try {
    userRegExp(pattern);
    return [];
  } catch (err) {
    return [{ path, message: `invalid regular expression: ${(err as Error).message}` }];
  }
}
