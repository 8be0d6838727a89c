// Regular expressions users write (route and header matches, guard patterns, webhook header
// matches) are JavaScript RegExps in the proxy. agentgateway's users write them for Rust's `regex`
// crate, so what that dialect spells differently is rewritten first: inline flags `(?i)` (which
// JavaScript has only as a group, `(?i:…)`), `(?P<name>…)`, `\A` and `\z`, `\<`, `\>` and
// `\b{start}`-style word boundaries, `\a`, `\x{…}`, `\u{…}` and `\U…` code points, counted
// repetitions with spaces (`{2, 3}`), and classes as Rust reads them: ASCII classes `[[:alpha:]]`
// (negated `[[:^alpha:]]` too), a `]` or `-` first (a literal there), nested classes `[a[bc]]`, and
// intersection, difference and symmetric difference (`[a-z&&[^b]]`, `[\pL--[a-c]]`, `[a-c~~b-d]`).
// Unicode properties (`\p{L}`, `\pL`, `\P{Greek}`, `\p{sc=Grek}`) are given the names JavaScript
// knows them by. A pattern that needs one of these is compiled with the `u` flag (`v` for the class
// operations), which jsRegex reports; no other pattern gets a flag, so JavaScript's own spellings
// (`\-`, `[\w-.]`, `\uD83D\uDE00`) keep their meaning. What has no JavaScript form is
// refused by name: the flags x, U, R and u, and a Unicode property JavaScript does not have
// (`\p{Age=3.0}`). `\d`, `\w`, `\s` and `\b` stay ASCII, where Rust's take all of Unicode. A pattern
// with a flag (as one with `(?i)`) is not one V8 can fall back to its linear-time engine for.
import type { FieldPath } from '../config/source.ts';
import type { Problem } from './problem.ts';

/** How the proxy compiles a guard's pattern: JavaScript syntax, every match found. */
export const GUARD_REGEX_FLAGS = 'g';

/** Rust's ASCII classes (`[[:alpha:]]`), as code point ranges. */
const ASCII_CLASSES: Record<string, [number, number][]> = {
  alnum: [
    [0x30, 0x39],
    [0x41, 0x5a],
    [0x61, 0x7a],
  ],
  alpha: [
    [0x41, 0x5a],
    [0x61, 0x7a],
  ],
  ascii: [[0x00, 0x7f]],
  blank: [
    [0x09, 0x09],
    [0x20, 0x20],
  ],
  cntrl: [
    [0x00, 0x1f],
    [0x7f, 0x7f],
  ],
  digit: [[0x30, 0x39]],
  graph: [[0x21, 0x7e]],
  lower: [[0x61, 0x7a]],
  print: [[0x20, 0x7e]],
  punct: [
    [0x21, 0x2f],
    [0x3a, 0x40],
    [0x5b, 0x60],
    [0x7b, 0x7e],
  ],
  space: [
    [0x09, 0x0d],
    [0x20, 0x20],
  ],
  upper: [[0x41, 0x5a]],
  word: [
    [0x30, 0x39],
    [0x41, 0x5a],
    [0x5f, 0x5f],
    [0x61, 0x7a],
  ],
  xdigit: [
    [0x30, 0x39],
    [0x41, 0x46],
    [0x61, 0x66],
  ],
};
/** The inline flags JavaScript's modifier groups take (`(?ims-ims:…)`). */
const JS_MODIFIERS = /^[ims]*(-[ims]*)?$/;
/** Characters JavaScript's `u` mode lets a backslash escape outside a class. */
const U_IDENTITY_ESCAPES = '^$\\.*+?()[]{}|/';
/** Rust's word boundaries spelt `\b{…}`, as JavaScript assertions. */
const WORD_BOUNDARIES: Record<string, string> = {
  start: '\\b(?=\\w)',
  end: '\\b(?<=\\w)',
  'start-half': '(?<!\\w)',
  'end-half': '(?!\\w)',
};
/** Rust's names of the Unicode properties that take a value, as JavaScript spells them. */
const VALUED_PROPERTIES: Record<string, string> = {
  generalcategory: 'General_Category',
  gc: 'General_Category',
  script: 'Script',
  sc: 'Script',
  scriptextensions: 'Script_Extensions',
  scx: 'Script_Extensions',
};

/** A pattern in JavaScript's syntax and the flag it must be compiled with (`u`, `v` or none). */
export interface JsRegex {
  source: string;
  flags: '' | 'u' | 'v';
}

/** A construct of Rust's dialect that has no JavaScript form: refused, whatever the rest reads as. */
class Untranslatable extends Error {}

/** Thrown inside the translation when the pattern needs the `u` flag: it is translated again for it. */
const NEEDS_UNICODE = new Error('needs the u flag');

/**
 * `pattern` in JavaScript's syntax, with the flag it needs: Rust's regex spellings rewritten,
 * anything else unchanged (an invalid pattern stays invalid for RegExp to name). Throws, naming the
 * construct, when it uses something JavaScript has no form of.
 */
export function jsRegex(pattern: string): JsRegex {
  // Fast path: nothing the translation looks at.
  if (!/[\\[({}\]\uD800-\uDFFF]/.test(pattern)) return { source: pattern, flags: '' };
  try {
    return { source: translate(pattern, false).source, flags: '' };
  } catch (err) {
    if (err !== NEEDS_UNICODE) throw err;
  }
  const t = translate(pattern, true);
  return { source: t.source, flags: t.sets ? 'v' : 'u' };
}

/** `flags` with the one `pattern` needs added (`u` or `v`, which replaces a `u` in `flags`). */
function withFlag(flags: string, need: JsRegex['flags']): string {
  if (need === '') return flags;
  const rest = flags.replace(/[uv]/g, '');
  return rest + need;
}

/**
 * A user's pattern (either dialect) as a RegExp; throws with the reason when it is not valid.
 * `whole`: it must match all of the text (as route, header and query matches do).
 */
export function userRegExp(pattern: string, flags = '', whole = false): RegExp {
  const r = jsRegex(pattern);
  return new RegExp(whole ? `^(?:${r.source})$` : r.source, withFlag(flags, r.flags));
}

export function checkRegex(pattern: string, path: FieldPath): Problem[] {
  try {
    userRegExp(pattern);
    return [];
  } catch (err) {
    return [{ path, message: `invalid regular expression: ${(err as Error).message}` }];
  }
}

// ---------- the translation ----------

const hex = (cp: number) => cp.toString(16).toUpperCase();
const hex2 = (cp: number) => `\\x${cp.toString(16).toUpperCase().padStart(2, '0')}`;
const isAsciiAlnum = (cp: number) =>
  (cp >= 0x30 && cp <= 0x39) || (cp >= 0x41 && cp <= 0x5a) || (cp >= 0x61 && cp <= 0x7a);

/** A code point escape at `i` (`\x7F`, `\x{…}`, `\u007F`, `\u{…}`, `\U0000007F`, `\U{…}`), if it is one. */
function codePointEscape(p: string, i: number): { cp: number; len: number; text: string } | undefined {
  const m = /^\\(?:([xuU])\{([0-9A-Fa-f]{1,8})\}|x([0-9A-Fa-f]{2})|u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8}))/.exec(
    p.slice(i, i + 12),
  );
  if (!m) return undefined;
  const digits = m[2] ?? m[3] ?? m[4] ?? m[5] ?? '';
  const cp = Number.parseInt(digits, 16);
  // `\uD83D\uDE00`, a surrogate pair, is JavaScript's (Rust refuses it): left as written
  if (m[4] !== undefined && cp >= 0xd800 && cp <= 0xdfff) return undefined;
  if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
    throw new Untranslatable(`${m[0]} is not a Unicode scalar value`);
  return { cp, len: m[0].length, text: m[0] };
}

/** Whether `\p{name}` compiles in JavaScript (not counting properties of strings, which Rust lacks). */
function knownProperty(name: string): boolean {
  if (!/^[A-Za-z0-9_=.]+$/.test(name)) return false;
  try {
    new RegExp(`\\p{${name}}`, 'u');
    return true;
  } catch {
    return false;
  }
}

/** The spellings of a property name or value to try: as written, then as JavaScript capitalises. */
function spellings(raw: string): string[] {
  const out: string[] = [];
  for (const t of [raw.trim(), raw.trim().replace(/^is[\s_-]*/i, '')]) {
    const words = t.split(/[\s_-]+/).filter(Boolean);
    const title = words.map((w) => w.charAt(0).toUpperCase() + w.slice(1).toLowerCase());
    out.push(
      t,
      words.join('_'),
      title.join('_'),
      t.toUpperCase(),
      t.charAt(0).toUpperCase() + t.slice(1).toLowerCase(),
    );
  }
  return [...new Set(out)];
}

const propertyCache = new Map<string, string | Error>();

/**
 * Rust's `\p{…}`/`\P{…}` (its body `body`, `negated` for `\P`) as JavaScript's: the name a property
 * has in JavaScript, a bare script name as `Script=…`, `name:value` and `name!=value` as `name=value`.
 */
function jsProperty(body: string, negated: boolean): string {
  const key = `${negated ? 'P' : 'p'}${body}`;
  let hit = propertyCache.get(key);
  if (hit === undefined) {
    try {
      hit = resolveProperty(body, negated);
    } catch (err) {
      hit = err as Error;
    }
    propertyCache.set(key, hit);
  }
  if (hit instanceof Error) throw hit;
  return hit;
}

function resolveProperty(body: string, negated: boolean): string {
  const written = `\\${negated ? 'P' : 'p'}${body.length === 1 ? body : `{${body}}`}`;
  const eq = /^([^=:!]*?)\s*(!=|=|:)\s*(.*)$/s.exec(body);
  let neg = negated;
  let found: string | undefined;
  if (eq) {
    const name = (eq[1] ?? '').toLowerCase().replace(/[\s_-]/g, '');
    if (eq[2] === '!=') neg = !neg;
    const js = VALUED_PROPERTIES[name];
    if (js === undefined)
      throw new Untranslatable(`${written}: JavaScript has no Unicode property ${JSON.stringify(eq[1])}`);
    found = spellings(eq[3] ?? '')
      .map((v) => `${js}=${v}`)
      .find(knownProperty);
  } else {
    for (const s of spellings(body)) {
      if (knownProperty(s)) found = s;
      else if (knownProperty(`Script=${s}`)) found = `Script=${s}`;
      if (found) break;
    }
  }
  if (found === undefined)
    throw new Untranslatable(
      `${written}: not a Unicode property JavaScript knows (write its full name, as in \\p{Lu}, \\p{Letter}, \\p{Greek} or \\p{Script=Greek})`,
    );
  return `\\${neg ? 'P' : 'p'}{${found}}`;
}

/** Rust's `\pL` / `\p{…}` at `i` (after the backslash comes p or P): its JavaScript form and length. */
function propertyEscape(p: string, i: number): { text: string; len: number } {
  const negated = p[i + 1] === 'P';
  if (p[i + 2] === '{') {
    const end = p.indexOf('}', i + 3);
    if (end === -1) throw new Untranslatable(`${p.slice(i, i + 3)}: unclosed Unicode property`);
    return { text: jsProperty(p.slice(i + 3, end), negated), len: end + 1 - i };
  }
  const letter = p[i + 2];
  if (letter === undefined || !/[A-Za-z]/.test(letter))
    throw new Untranslatable(`\\${p[i + 1]}: expected a Unicode property (\\pL or \\p{…})`);
  return { text: jsProperty(letter, negated), len: 3 };
}

type ClassItem =
  | { t: 'char'; cp: number }
  | { t: 'range'; lo: number; hi: number }
  /** `\d`, `\w`, `\p{…}` and such: the same text in any class */
  | { t: 'escape'; text: string }
  | { t: 'class'; cls: CharClass };
interface CharClass {
  negated: boolean;
  items: ClassItem[];
  /** `&&`, `--` and `~~` with their right operands, applied left to right */
  ops: { op: '&&' | '--' | '~~'; items: ClassItem[] }[];
}
interface ParsedClass {
  cls: CharClass;
  end: number;
  /** it needs the `u` flag (a property, a code point past U+FFFF) */
  unicode: boolean;
}

/** A class at `start` (a `[`) as Rust's regex crate reads it; throws when Rust would refuse it. */
function parseClass(p: string, start: number): ParsedClass {
  let unicode = false;
  let i = start;
  /** One literal or escape of a class: a code point, or an escape that stands for several. */
  const atom = (): ClassItem => {
    if (p[i] !== '\\') {
      const cp = p.codePointAt(i) as number;
      if (cp > 0xffff) unicode = true;
      i += cp > 0xffff ? 2 : 1;
      return { t: 'char', cp };
    }
    const n = p[i + 1];
    if (n === undefined) throw new Error('unclosed character class');
    if ('dDwWsS'.includes(n)) {
      i += 2;
      return { t: 'escape', text: `\\${n}` };
    }
    if (n === 'p' || n === 'P') {
      const e = propertyEscape(p, i);
      unicode = true;
      i += e.len;
      return { t: 'escape', text: e.text };
    }
    const code = codePointEscape(p, i);
    if (code) {
      if (code.cp > 0xffff) unicode = true;
      i += code.len;
      return { t: 'char', cp: code.cp };
    }
    const simple: Record<string, number> = { n: 10, t: 9, r: 13, f: 12, v: 11, a: 7 };
    const cp = n.codePointAt(0) as number;
    if (simple[n] !== undefined || (cp < 0x80 && !isAsciiAlnum(cp) && n !== '<' && n !== '>')) {
      i += 2;
      return { t: 'char', cp: simple[n] ?? cp };
    }
    throw new Error(`\\${n} cannot be used in a character class`);
  };
  const open = (): CharClass => {
    i++; // [
    const cls: CharClass = { negated: false, items: [], ops: [] };
    if (p[i] === '^') {
      cls.negated = true;
      i++;
    }
    let items = cls.items;
    while (p[i] === '-') {
      items.push({ t: 'char', cp: 0x2d });
      i++;
    }
    if (items.length === 0 && p[i] === ']') {
      items.push({ t: 'char', cp: 0x5d });
      i++;
    }
    for (;;) {
      if (i >= p.length) throw new Error('unclosed character class');
      const c = p[i];
      const two = p.slice(i, i + 2);
      if (c === '[') {
        const ascii = /^\[:(\^?)([a-z]+):\]/.exec(p.slice(i, i + 16));
        const ranges = ascii ? ASCII_CLASSES[ascii[2] as string] : undefined;
        if (ascii && ranges) {
          const own: ClassItem[] = ranges.map(([lo, hi]) =>
            lo === hi ? { t: 'char', cp: lo } : { t: 'range', lo, hi },
          );
          if (ascii[1]) items.push({ t: 'class', cls: { negated: true, items: own, ops: [] } });
          else items.push(...own);
          i += ascii[0].length;
          continue;
        }
        items.push({ t: 'class', cls: open() });
        continue;
      }
      if (c === ']') {
        i++;
        return cls;
      }
      if (two === '&&' || two === '--' || two === '~~') {
        items = [];
        cls.ops.push({ op: two, items });
        i += 2;
        continue;
      }
      const first = atom();
      if (p[i] === '-' && p[i + 1] !== ']' && p[i + 1] !== '-') {
        i++;
        if (i >= p.length) throw new Error('unclosed character class');
        const last = atom();
        if (first.t !== 'char' || last.t !== 'char')
          throw new Error('invalid range boundary in a character class: it must be a literal');
        if (first.cp > last.cp)
          throw new Error('invalid range in a character class: its start is past its end');
        items.push({ t: 'range', lo: first.cp, hi: last.cp });
      } else items.push(first);
    }
  };
  const cls = open();
  return { cls, end: i, unicode };
}

/** Whether a class needs the `v` flag: class operations, or a nested class that cannot be flattened. */
function needsSets(cls: CharClass): boolean {
  const c = flatten(cls);
  return c.ops.length > 0 || c.items.some((x) => x.t === 'class');
}

/** `cls`, with a class that is only one nested class taken as that class (`[[:^alpha:]]`). */
function flatten(cls: CharClass): CharClass {
  let c = cls;
  for (let only = c.items[0]; c.ops.length === 0 && c.items.length === 1 && only?.t === 'class'; ) {
    c = { negated: c.negated !== only.cls.negated, items: only.cls.items, ops: only.cls.ops };
    only = c.items[0];
  }
  return c;
}

/**
 * A code point in a class. `unicode`: for the `u` or `v` flag, where only some punctuation may be
 * escaped and `v` reserves others: every ASCII character but a letter or digit as `\xHH`, valid in both.
 */
function classChar(cp: number, unicode: boolean): string {
  if (cp < 0x20 || cp === 0x7f) return hex2(cp);
  if (unicode) {
    if (cp < 0x80 && !isAsciiAlnum(cp)) return hex2(cp);
    return String.fromCodePoint(cp);
  }
  const c = String.fromCodePoint(cp);
  return '\\]^-['.includes(c) ? `\\${c}` : c;
}

function classItems(items: ClassItem[], unicode: boolean): string {
  return items
    .map((x) =>
      x.t === 'char'
        ? classChar(x.cp, unicode)
        : x.t === 'range'
          ? `${classChar(x.lo, unicode)}-${classChar(x.hi, unicode)}`
          : x.t === 'escape'
            ? x.text
            : emitClass(x.cls, unicode),
    )
    .join('');
}

/** A parsed class as JavaScript's: a flat class in any mode, set notation (`v`) otherwise. */
function emitClass(cls: CharClass, unicode: boolean): string {
  const c = flatten(cls);
  if (c.ops.length === 0) return `[${c.negated ? '^' : ''}${classItems(c.items, unicode)}]`;
  const operand = (items: ClassItem[]) => `[${classItems(items, unicode)}]`;
  let acc = operand(c.items);
  for (const { op, items } of c.ops) {
    const rhs = operand(items);
    acc = op === '~~' ? `[[${acc}--${rhs}][${rhs}--${acc}]]` : `[${acc}${op}${rhs}]`;
  }
  return c.negated ? `[^${acc}]` : acc;
}

/**
 * `pattern` translated. `unicode`: for the `u`/`v` flag; without it, a construct that needs the flag
 * throws NEEDS_UNICODE (and the caller translates again with it).
 */
function translate(pattern: string, unicode: boolean): { source: string; sets: boolean } {
  let out = '';
  let sets = false;
  const need = () => {
    if (!unicode) throw NEEDS_UNICODE;
  };
  // For each open group, the inline flags set inside it so far, each a modifier group left open until
  // the group ends (and closed and opened again around each `|`, which Rust's flags reach across).
  const pending: string[][] = [[]];
  for (let i = 0; i < pattern.length; ) {
    const cp = pattern.codePointAt(i) as number;
    const c = String.fromCodePoint(cp);
    if (cp > 0xffff) {
      // one character to Rust, two code units to JavaScript without the flag
      need();
      out += c;
      i += c.length;
      continue;
    }
    if (c === '\\') {
      const n = pattern[i + 1];
      const code = codePointEscape(pattern, i);
      const boundary = /^\\b\{(start|end|start-half|end-half)\}/.exec(pattern.slice(i, i + 16));
      if (n === 'A') out += '^';
      else if (n === 'z') out += '$';
      else if (n === '<') out += WORD_BOUNDARIES.start;
      else if (n === '>') out += WORD_BOUNDARIES.end;
      else if (boundary) {
        out += WORD_BOUNDARIES[boundary[1] as string];
        i += boundary[0].length;
        continue;
      } else if (n === 'a') out += '\\x07';
      else if (n === 'p' || n === 'P') {
        need();
        const e = propertyEscape(pattern, i);
        out += e.text;
        i += e.len;
        continue;
      } else if (code) {
        if (code.cp > 0xffff) need();
        if (unicode) out += `\\u{${hex(code.cp)}}`;
        else if (/^\\(x[0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4})$/.test(code.text)) out += code.text;
        else out += `\\u${hex(code.cp).padStart(4, '0')}`;
        i += code.len;
        continue;
      } else if (
        unicode &&
        n !== undefined &&
        (n.codePointAt(0) as number) < 0x80 &&
        !isAsciiAlnum(n.codePointAt(0) as number) &&
        !U_IDENTITY_ESCAPES.includes(n)
      )
        // `\-`, `\#`, `\ ` …: literals to Rust, errors to JavaScript with the flag
        out += hex2(n.codePointAt(0) as number);
      else out += c + (n ?? '');
      i += 2;
      continue;
    }
    if (c === '[') {
      let parsed: ParsedClass | undefined;
      try {
        parsed = parseClass(pattern, i);
      } catch (err) {
        if (unicode || err instanceof Untranslatable) throw err;
      }
      if (parsed) {
        if (parsed.unicode || needsSets(parsed.cls)) need();
        if (needsSets(parsed.cls)) sets = true;
        out += emitClass(parsed.cls, unicode);
        i = parsed.end;
      } else {
        // not a class Rust reads: as JavaScript reads it, for RegExp to take or name
        const end = legacyClass(pattern, i);
        out += end.text;
        i = end.end;
      }
      continue;
    }
    if (c === '{') {
      // a counted repetition, which Rust lets have spaces in it
      const m = /^\{\s*(\d+)\s*(?:(,)\s*(\d*)\s*)?\}/.exec(pattern.slice(i));
      if (m) {
        out += `{${m[1]}${m[2] ?? ''}${m[3] ?? ''}}`;
        i += m[0].length;
        continue;
      }
    }
    if (unicode && (c === '}' || c === ']')) {
      // literals to Rust, errors to JavaScript with the flag
      out += `\\${c}`;
      i++;
      continue;
    }
    if (c === '(') {
      const flags = /^\(\?([a-zA-Z]*(?:-[a-zA-Z]*)?)([):])/.exec(pattern.slice(i));
      if (pattern.startsWith('(?P<', i)) {
        out += '(?<';
        i += 4;
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
        i += flags[0].length;
        if (flags[2] === ')') pending.at(-1)?.push(f);
        else pending.push([]);
        continue;
      }
      pending.push([]);
      out += c;
      i++;
      continue;
    }
    if (c === ')') {
      out += ')'.repeat(pending.pop()?.length ?? 0);
      if (pending.length === 0) pending.push([]); // an unbalanced `)`: RegExp names it
      out += c;
      i++;
      continue;
    }
    if (c === '|') {
      const open = pending.at(-1) ?? [];
      out += `${')'.repeat(open.length)}|${open.map((f) => `(?${f}:`).join('')}`;
      i++;
      continue;
    }
    out += c;
    i++;
  }
  return { source: out + ')'.repeat(pending.reduce((n, open) => n + open.length, 0)), sets };
}

/**
 * A class Rust's parser refuses (`[\b]`, `[[]`), copied as JavaScript reads it, with the positive
 * ASCII classes rewritten as before.
 */
function legacyClass(p: string, start: number): { text: string; end: number } {
  let out = '[';
  let i = start + 1;
  if (p[i] === '^') {
    out += '^';
    i++;
  }
  // a `]` first in a class is a literal
  if (p[i] === ']') {
    out += '\\]';
    i++;
  }
  for (; i < p.length; i++) {
    const c = p[i] as string;
    if (c === '\\') {
      out += c + (p[i + 1] ?? '');
      i++;
      continue;
    }
    if (c === '[' && p[i + 1] === ':') {
      const end = p.indexOf(':]', i + 2);
      const ranges = end === -1 ? undefined : ASCII_CLASSES[p.slice(i + 2, end)];
      if (ranges) {
        out += classItems(
          ranges.map(([lo, hi]) => ({ t: 'range', lo, hi })),
          false,
        );
        i = end + 1;
        continue;
      }
    }
    out += c;
    if (c === ']') return { text: out, end: i + 1 };
  }
  return { text: out, end: p.length };
}
