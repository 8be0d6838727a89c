// Request-path normalisation (RFC 3986 §6.2.2), done once before route selection so that the route,
// the policies and the upstream all see the same path: an auth policy on /files/admin must not be
// stepped around by spelling that path another way.

/** What to do with `%2F` and `%5C` (an escaped `/` or `\`) in a path. */
export type EscapedSlashes = 'KeepUnchanged' | 'RejectRequest' | 'UnescapeAndForward';

export interface PathNormalization {
  /** Collapse runs of `/` into one. */
  mergeSlashes: boolean;
  escapedSlashes: EscapedSlashes;
}

export const DEFAULT_PATH_NORMALIZATION: PathNormalization = {
  mergeSlashes: true,
  escapedSlashes: 'KeepUnchanged',
};

export type NormalizedPath = { ok: true; path: string } | { ok: false; reason: string };

const HEX = '0123456789ABCDEF';

/** ALPHA / DIGIT / "-" / "." / "_" / "~" (RFC 3986 §2.3): their escapes mean the character itself. */
function isUnreserved(b: number): boolean {
  return (
    (b >= 0x41 && b <= 0x5a) ||
    (b >= 0x61 && b <= 0x7a) ||
    (b >= 0x30 && b <= 0x39) ||
    b === 0x2d ||
    b === 0x2e ||
    b === 0x5f ||
    b === 0x7e
  );
}

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  const l = c | 0x20;
  if (l >= 0x61 && l <= 0x66) return l - 0x61 + 10;
  return -1;
}

/** True when the path is already in normal form for these options: the common case costs one scan. */
function isPlain(path: string, merge: boolean): boolean {
  for (let i = 0; i < path.length; i++) {
    const c = path.charCodeAt(i);
    if (c === 0x25 /* % */ || c === 0x5c /* \ */ || c === 0x23 /* # */) return false;
    if (c === 0x2f /* / */) {
      const n = path.charCodeAt(i + 1);
      if (n === 0x2e /* . */ || (merge && n === 0x2f)) return false;
    }
  }
  return true;
}

/** An escaped slash inside a segment, after the escapes have been upper-cased. */
const ESCAPED_SLASH = /%2F|%5C/;

/**
 * The normal form of `path` (the part before `?`), or why the request must be refused. In order:
 * escapes are checked (a `%` not followed by two hex digits is refused, as is a fragment); escaped
 * slashes are kept, refused or decoded as configured; escapes of unreserved characters are decoded and
 * the hex of the rest upper-cased; a raw `\` becomes `/` (as browsers do); runs of `/` are merged when
 * configured; and `.`/`..` segments are removed (RFC 3986 §5.2.4). Under KeepUnchanged a segment that
 * would hold a `.` or `..` segment once an upstream decodes its escaped slashes (`..%2F`) is refused:
 * such an upstream would resolve it beyond the prefix the route matched.
 */
export function normalizePath(path: string, opts: PathNormalization): NormalizedPath {
  if (path.charCodeAt(0) !== 0x2f) return { ok: false, reason: 'request path must start with /' };
  if (isPlain(path, opts.mergeSlashes)) return { ok: true, path };

  let decoded = '';
  let escapedSlash = false;
  for (let i = 0; i < path.length; i++) {
    const c = path.charCodeAt(i);
    if (c === 0x23) return { ok: false, reason: 'request target has a fragment' };
    if (c === 0x5c) {
      decoded += '/';
      continue;
    }
    if (c !== 0x25) {
      decoded += path[i];
      continue;
    }
    const hi = hexValue(path.charCodeAt(i + 1));
    const lo = hexValue(path.charCodeAt(i + 2));
    if (hi < 0 || lo < 0) return { ok: false, reason: 'invalid percent-encoding in path' };
    i += 2;
    const b = hi * 16 + lo;
    if (isUnreserved(b)) decoded += String.fromCharCode(b);
    else if (b === 0x2f || b === 0x5c) {
      if (opts.escapedSlashes === 'RejectRequest')
        return { ok: false, reason: 'escaped slash (%2F or %5C) in path' };
      if (opts.escapedSlashes === 'UnescapeAndForward') decoded += '/';
      else {
        decoded += b === 0x2f ? '%2F' : '%5C';
        escapedSlash = true;
      }
    } else decoded += `%${HEX[hi]}${HEX[lo]}`;
  }

  const segments = decoded.slice(1).split('/');
  const out: string[] = [];
  const last = segments.length - 1;
  for (let i = 0; i <= last; i++) {
    const s = segments[i] as string;
    if (s === '.' || s === '..') {
      if (s === '..') out.pop();
      // `/a/b/..` is `/a/`: a dot segment at the end leaves the directory it names.
      if (i === last) out.push('');
      continue;
    }
    if (s === '' && opts.mergeSlashes && i !== last) continue;
    if (escapedSlash && ESCAPED_SLASH.test(s)) {
      for (const piece of s.split(ESCAPED_SLASH)) {
        if (piece === '.' || piece === '..')
          return { ok: false, reason: 'dot segment behind an escaped slash in path' };
      }
    }
    out.push(s);
  }
  return { ok: true, path: `/${out.join('/')}` };
}
