// Reads a YAML config file into plain data while keeping where every value came from, so that any
// later complaint (syntax, schema, compile) can name the file, line, column and field path.

import { isMap, isPair, isScalar, isSeq, LineCounter, type Node, parseDocument, Scalar, visit } from 'yaml';
import type { z } from 'zod';
import { describeIssue, type Issue } from '../crd/validate.ts';
import { isCredentialField } from './credentials.ts';

export type FieldPath = ReadonlyArray<string | number>;

export interface ConfigIssue {
  file: string;
  line: number;
  column: number;
  path: string;
  message: string;
}

/** One or more problems with a config file; `message` lists every issue, one per line. */
export class ConfigError extends Error {
  readonly issues: ConfigIssue[];
  constructor(issues: ConfigIssue[]) {
    super(issues.map(formatIssue).join('\n'));
    this.name = 'ConfigError';
    this.issues = issues;
  }
}

export function formatIssue(i: ConfigIssue): string {
  const where = i.line > 0 ? `${i.file}:${i.line}:${i.column}` : i.file;
  return i.path ? `${where}: ${i.path}: ${i.message}` : `${where}: ${i.message}`;
}

/** `binds[0].listeners[1].routes[2]` style, as users see paths in the docs. */
export function formatPath(path: FieldPath): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else if (/^[A-Za-z_][A-Za-z0-9_-]*$/.test(seg)) out += out ? `.${seg}` : seg;
    else out += `[${JSON.stringify(seg)}]`;
  }
  return out;
}

export interface SourceDocument {
  file: string;
  data: unknown;
  /** The issue for `path`, located at the deepest node of that path present in the file. */
  issueAt(path: FieldPath, message: string, atKey?: boolean): ConfigIssue;
  /**
   * Problems found while reading (unset environment variables). They do not stop validation: the
   * loader reports them together with every later problem (`withSourceIssues`).
   */
  issues: ConfigIssue[];
  /** Suspicious but not wrong (an unset bare `$NAME` outside a credential): shown when the file loads. */
  warnings: ConfigIssue[];
}

/**
 * Every problem of a file: those found while reading it, then `later` ones, except the consequences
 * of a value left unexpanded: problems at or under its path ("expected a number") and problems that
 * quote the unexpanded reference ("cannot read $KEY_FILE").
 */
export function withSourceIssues(src: SourceDocument, later: readonly ConfigIssue[]): ConfigIssue[] {
  const covered = src.issues.map((i) => i.path);
  const refs = src.issues.flatMap((i) => i.message.match(/\$[A-Za-z_][A-Za-z0-9_]*/g) ?? []);
  const under = (p: string, c: string) =>
    c === '' || p === c || p.startsWith(`${c}.`) || p.startsWith(`${c}[`);
  const consequence = (i: ConfigIssue) =>
    covered.some((c) => under(i.path, c)) ||
    refs.some((r) => i.message.includes(r) || i.message.includes(`\${${r.slice(1)}`));
  return [...src.issues, ...later.filter((i) => !consequence(i))];
}

export type EnvLookup = (name: string) => string | undefined;

// Bare `$NAME` only for upper-case names, so password hashes (`$apr1$…`, `$2y$05$…`) pass untouched.
const ENV_REF = /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|\$([A-Z_][A-Z0-9_]*)(?![A-Za-z0-9_])/g;
// In a crypt-style hash the salt or digest after a `$` may start with capitals and stop at `.` or `/`
// (`$2y$05$ABCD/ef…`), which reads like a bare `$ABCD`: only `${NAME}` is expanded there.
const ENV_REF_BRACED = /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;
const CRYPT_HASH = /\$(apr1|2[abxy]|1|5|6)\$/;

/**
 * Parses YAML text. `${VAR}`, `${VAR:-default}` and `$VAR` (upper-case names) in scalar values are
 * replaced from the environment (`$$` is a literal `$`); a plain scalar that expands to a number or
 * boolean becomes one, so `port: $PORT` works. An unset `${VAR}` without a default is an error at its
 * position. An unset bare `$VAR` stays as written, with a warning, except in a credential
 * (`isCredentialField`), where it is an error: `keys: [$NOPE]` must not accept "$NOPE" as a key.
 * These problems are collected in `issues`, not thrown, so the rest of the file is still checked.
 */
export function parseSource(
  file: string,
  text: string,
  env: EnvLookup = (n) => process.env[n],
): SourceDocument {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true, merge: true });
  const at = (offset: number) => {
    const p = lineCounter.linePos(offset);
    return { line: p.line, column: p.col };
  };
  const issues: ConfigIssue[] = [];
  for (const e of doc.errors) {
    issues.push({ file, ...at(e.pos[0]), path: '', message: e.message.split('\n')[0] ?? e.message });
  }
  if (issues.length > 0) throw new ConfigError(issues);

  const warnings: ConfigIssue[] = [];
  const expand = (node: unknown, path: FieldPath): void => {
    if (isMap(node)) {
      for (const pair of node.items) {
        const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
        expand(pair.value, [...path, key]);
      }
    } else if (isSeq(node)) {
      node.items.forEach((item, i) => {
        expand(item, [...path, i]);
      });
    } else if (isScalar(node) && typeof node.value === 'string' && node.value.includes('$')) {
      const original = node.value;
      const missing: string[] = [];
      const unsetBare: string[] = [];
      const pattern = CRYPT_HASH.test(original) ? ENV_REF_BRACED : ENV_REF;
      const out = original.replace(pattern, (whole, braced?: string, fallback?: string, bare?: string) => {
        if (whole === '$$') return '$';
        const name = (braced ?? bare) as string;
        const value = env(name);
        if (value !== undefined && value !== '') return value;
        if (fallback !== undefined) return fallback;
        if (value === '') return '';
        if (bare !== undefined) unsetBare.push(name);
        else missing.push(name);
        return whole;
      });
      const where = { file, ...at(node.range?.[0] ?? 0), path: formatPath(path) };
      const names = (list: string[]) => list.map((m) => `$${m}`).join(', ');
      if (unsetBare.length > 0 && isCredentialField(path)) missing.push(...unsetBare);
      else if (unsetBare.length > 0) {
        warnings.push({
          ...where,
          message: `environment variable ${names(unsetBare)} is not set, so it is kept as written (write $$ for a literal $, \${NAME:-} for empty)`,
        });
      }
      if (missing.length > 0) {
        const credential = isCredentialField(path) ? '; a credential is never taken as written' : '';
        issues.push({
          ...where,
          message: `environment variable ${names(missing)} is not set${credential} (use \${NAME:-default} for a default, $$ for a literal $)`,
        });
        return;
      }
      node.value = node.type === Scalar.PLAIN ? plainScalar(out) : out;
    }
  };
  expand(doc.contents, []);

  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: 100 }) ?? {};
  } catch (err) {
    // Aliases are resolved only here: `*a` before `&a`, a merge (`<<`) of a non-map, an alias bomb.
    const message = (err as Error).message.split('\n')[0] ?? String(err);
    throw new ConfigError([{ file, ...at(aliasOffset(doc.contents)), path: '', message }]);
  }
  return {
    file,
    data,
    issues,
    warnings,
    issueAt(path, message, atKey = false) {
      const { offset, rest } = locate(doc.contents, path, atKey);
      const suffix = rest.length > 0 ? ` (missing field ${JSON.stringify(rest[0])})` : '';
      return {
        file,
        ...(offset >= 0 ? at(offset) : { line: 0, column: 0 }),
        path: formatPath(path),
        message: rest.length > 0 && !/required/i.test(message) ? message + suffix : message,
      };
    },
  };
}

/** Where the first alias or merge key of the document is (else its start), to point an alias error at. */
function aliasOffset(root: unknown): number {
  let found = -1;
  visit(root as Node, {
    Alias(_k, node) {
      found = node.range?.[0] ?? 0;
      return visit.BREAK;
    },
    Pair(_k, pair) {
      // with `merge: true` a merge key's value is a symbol; its source text is `<<`
      if (isScalar(pair.key) && (pair.key.source === '<<' || pair.key.value === '<<')) {
        found = pair.key.range?.[0] ?? 0;
        return visit.BREAK;
      }
      return undefined;
    },
  });
  return Math.max(found, 0);
}

function plainScalar(text: string): unknown {
  if (/^-?(0|[1-9][0-9]*)$/.test(text)) return Number(text);
  if (/^-?[0-9]+\.[0-9]+$/.test(text)) return Number(text);
  if (text === 'true' || text === 'false') return text === 'true';
  return text;
}

/** The start offset of the deepest node along `path`, and the part of the path that is absent. */
function locate(root: unknown, path: FieldPath, atKey: boolean): { offset: number; rest: FieldPath } {
  let node = root as Node | null | undefined;
  let offset = (node as { range?: [number] } | null)?.range?.[0] ?? -1;
  for (let i = 0; i < path.length; i++) {
    const seg = path[i];
    let next: unknown;
    let keyOffset = -1;
    if (isMap(node)) {
      const pair = node.items.find(
        (p) => isPair(p) && isScalar(p.key) && String(p.key.value) === String(seg),
      );
      if (pair) {
        next = pair.value;
        keyOffset = (pair.key as Scalar).range?.[0] ?? -1;
      }
    } else if (isSeq(node) && typeof seg === 'number') {
      next = node.items[seg];
    }
    if (next === undefined) return { offset, rest: path.slice(i) };
    // A key with an empty value has no node of its own: point at the key.
    const range = (next as { range?: [number] } | null)?.range;
    offset = range ? range[0] : keyOffset;
    // Point at the key for empty values and for blocks (a map or list under a key): that line names
    // the field; a scalar is pointed at itself.
    const last = i === path.length - 1;
    if (keyOffset >= 0 && ((atKey && last) || next === null || !range || isMap(next) || isSeq(next)))
      offset = keyOffset;
    node = next as Node;
  }
  return { offset, rest: [] };
}

/**
 * Checks a parsed file against a schema (ConfigFile for `gw -f`) and returns the typed value. When
 * the schema fails, every problem (with those found while reading) is thrown at once as a ConfigError
 * located in the file; when it passes, the reading problems in `src.issues` are the caller's to
 * report with its own checks (`withSourceIssues`).
 */
export function validateSource<T extends z.ZodType>(src: SourceDocument, schema: T): z.output<T> {
  // Limits and patterns the schema gives no message of its own are worded as the API server words
  // them for the CRDs (crd/validate.ts), so a config file and `kubectl apply` read alike; but a file
  // has no request body, so its field is not said to be "in body".
  const check = () =>
    schema.safeParse(src.data, {
      reportInput: true,
      error: (iss) => {
        if (iss.code === 'unrecognized_keys') return suggestionsFor(iss);
        // a map's key (a header name in a modifier's set): what is wrong with it, not 'Invalid key in record'
        if (iss.code === 'invalid_key') {
          const why = (iss as { issues?: { message?: string }[] }).issues
            ?.map((i) => i.message?.replace(/^Invalid value: .*?: +/, ''))
            .filter(Boolean);
          return `${JSON.stringify(iss.input)} is not a valid key here${why?.length ? `: it ${why.join('; ')}` : ''}`;
        }
        if (iss.code !== 'too_big' && iss.code !== 'too_small' && iss.code !== 'invalid_format')
          return undefined;
        const field = formatPath((iss.path ?? []).map((p) => (typeof p === 'number' ? p : String(p))));
        return describeIssue(iss as unknown as Issue, field)[0]?.replace(`${field} in body `, `${field} `);
      },
    });
  let parsed = check();
  // `port: ${PORT}` with PORT unset is already reported; a stand-in number lets the rest of the file
  // be checked (regexes, CEL, references) so that every problem shows at once.
  for (let round = 0; !parsed.success && src.issues.length > 0 && round < 3; round++) {
    if (!standIns(src, parsed.error)) break;
    parsed = check();
  }
  // `policies:` with everything under it commented out is null in YAML: an optional field left empty
  // is read as absent, as agentgateway reads it (a field where null means something accepts it).
  for (let round = 0; !parsed.success && round < 3; round++) {
    const dropped = dropEmpty(src, parsed.error);
    if (dropped.length === 0) break;
    const next = check();
    // a required field left empty keeps its null, so its error says what it got: one whose object
    // (or a union around it) fails without it
    const still = next.success ? [] : allIssues(next.error).map((i) => i.path.map(pathSegment));
    const restored = dropped.filter((d) =>
      still.some((p) => p.length <= d.path.length && p.every((seg, n) => seg === d.path[n])),
    );
    for (const d of restored) d.parent[d.key] = null;
    parsed = restored.length > 0 ? check() : next;
    if (restored.length === dropped.length) break;
  }
  if (!parsed.success) throw new ConfigError(withSourceIssues(src, issuesFromZod(src, parsed.error)));
  return parsed.data;
}

const pathSegment = (p: PropertyKey) => (typeof p === 'number' ? p : String(p));

type FoundIssue = { code: string; input?: unknown; path: PropertyKey[]; errors?: FoundIssue[][] };

/** Every issue, a union's branches' own included (under the union's path). */
function allIssues(error: z.ZodError): FoundIssue[] {
  const all: FoundIssue[] = [];
  const collect = (issues: readonly FoundIssue[], base: PropertyKey[]) => {
    for (const i of issues) {
      const path = [...base, ...i.path];
      all.push({ ...i, path });
      if (i.code === 'invalid_union' && i.errors) for (const branch of i.errors) collect(branch, path);
    }
  };
  collect(error.issues as unknown as FoundIssue[], []);
  return all;
}

/** Removes the fields left empty (null) where the schema wanted something else; what it removed. */
function dropEmpty(
  src: SourceDocument,
  error: z.ZodError,
): { parent: Record<string, unknown>; key: string; path: (string | number)[] }[] {
  const out: { parent: Record<string, unknown>; key: string; path: (string | number)[] }[] = [];
  for (const issue of allIssues(error)) {
    if ((issue.code !== 'invalid_type' && issue.code !== 'invalid_union') || issue.input !== null) continue;
    const path = issue.path.map(pathSegment);
    const key = path[path.length - 1];
    if (typeof key !== 'string') continue;
    let parent: unknown = src.data;
    for (const seg of path.slice(0, -1)) parent = (parent as Record<string | number, unknown> | null)?.[seg];
    if (parent === null || typeof parent !== 'object' || Array.isArray(parent)) continue;
    const obj = parent as Record<string, unknown>;
    if (obj[key] !== null) continue;
    delete obj[key];
    out.push({ parent: obj, key, path });
  }
  return out;
}

/**
 * Marks an unknown-field issue's message that carries, as JSON, the field each unknown key is likely
 * a misspelling of (the error map sees the object's schema; issuesFromZod words the message).
 */
const SUGGEST = '\u0000suggest:';

/** The fields of the object an unknown key was found in that each key is likely a misspelling of. */
function suggestionsFor(iss: { keys?: readonly string[]; inst?: unknown }): string | undefined {
  const shape = (iss.inst as { _zod?: { def?: { shape?: Record<string, unknown> } } } | undefined)?._zod?.def
    ?.shape;
  if (!shape || !iss.keys) return undefined;
  const known = Object.keys(shape);
  const out: Record<string, string> = {};
  for (const key of iss.keys) {
    const s = closestField(key, known);
    if (s !== undefined) out[key] = s;
  }
  return Object.keys(out).length > 0 ? SUGGEST + JSON.stringify(out) : undefined;
}

/**
 * The one field of `known` that `key` is most likely a misspelling of: the same letters in another
 * case or with `_`/`-` (path_prefix, pathprefix: pathPrefix), else within an edit or two (one for a
 * short name); undefined when none is, or two are equally close.
 */
export function closestField(key: string, known: readonly string[]): string | undefined {
  const norm = (k: string) => k.toLowerCase().replace(/[-_]/g, '');
  const same = known.filter((k) => norm(k) === norm(key));
  if (same.length === 1) return same[0];
  const limit = key.length <= 4 ? 1 : 2;
  let best: string | undefined;
  let bestDistance = limit + 1;
  let tie = false;
  for (const k of known) {
    const d = editDistance(norm(key), norm(k), limit);
    if (d < bestDistance) {
      best = k;
      bestDistance = d;
      tie = false;
    } else if (d === bestDistance) tie = true;
  }
  return bestDistance <= limit && !tie ? best : undefined;
}

/** Optimal string alignment distance (a swap of two neighbours is one edit), capped at limit + 1. */
function editDistance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let prev2: number[] = [];
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    let least = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min((prev[j] as number) + 1, (row[j - 1] as number) + 1, (prev[j - 1] as number) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d = Math.min(d, (prev2[j - 2] as number) + 1);
      row.push(d);
      least = Math.min(least, d);
    }
    if (least > limit) return limit + 1;
    prev2 = prev;
    prev = row;
  }
  return prev[b.length] as number;
}

/** A field the input leaves out (with reportInput, the issue's input is undefined). */
function isAbsent(b: z.core.$ZodIssue): boolean {
  return (
    (b.code === 'invalid_type' && b.message.endsWith('received undefined')) ||
    ('input' in b && b.input === undefined && b.code !== 'custom')
  );
}

/**
 * An issue of a union's branch that is not an object (a literal, a string) with an object given:
 * the value itself is the wrong kind.
 */
function notAnObjectForm(b: z.core.$ZodIssue): boolean {
  if (b.path.length > 0) return false;
  return b.code === 'invalid_value' || (b.code === 'invalid_type' && b.expected !== 'object');
}

/** The keys that every branch of a union found unknown at its own level. */
function commonUnknownKeys(branches: readonly z.core.$ZodIssue[][]): string[] {
  let common: string[] | undefined;
  for (const branch of branches) {
    const keys = branch.flatMap((b) => (b.code === 'unrecognized_keys' && b.path.length === 0 ? b.keys : []));
    common = common === undefined ? keys : common.filter((k) => keys.includes(k));
  }
  return common ?? [];
}

/** The suggestions an unknown-field issue carries (suggestionsFor), by unknown key. */
function suggestionsOf(issue: { message: string }): Record<string, string> {
  if (!issue.message.startsWith(SUGGEST)) return {};
  try {
    return JSON.parse(issue.message.slice(SUGGEST.length)) as Record<string, string>;
  } catch {
    return {};
  }
}

/** Replaces values the schema wants as numbers or booleans at already-reported paths; false if none. */
function standIns(src: SourceDocument, error: z.ZodError): boolean {
  const reported = new Set(src.issues.map((i) => i.path));
  let changed = false;
  for (const issue of error.issues) {
    if (issue.code !== 'invalid_type' || (issue.expected !== 'number' && issue.expected !== 'boolean'))
      continue;
    const path = issue.path.map((p) => (typeof p === 'number' ? p : String(p)));
    if (path.length === 0 || !reported.has(formatPath(path))) continue;
    let parent: unknown = src.data;
    for (const seg of path.slice(0, -1)) parent = (parent as Record<string | number, unknown> | null)?.[seg];
    const last = path[path.length - 1] as string | number;
    if (
      parent === null ||
      typeof parent !== 'object' ||
      typeof (parent as Record<string | number, unknown>)[last] !== 'string'
    )
      continue;
    (parent as Record<string | number, unknown>)[last] = issue.expected === 'number' ? 0 : false;
    changed = true;
  }
  return changed;
}

/**
 * Turns zod issues into located ConfigIssues. Unknown keys point at the key itself; a union that
 * failed on every branch is reported once, with the branch that got furthest.
 */
export function issuesFromZod(src: SourceDocument, error: z.ZodError): ConfigIssue[] {
  const out: ConfigIssue[] = [];
  const seen = new Set<string>();
  const push = (i: ConfigIssue) => {
    const k = `${i.path}|${i.message}`;
    if (!seen.has(k)) {
      seen.add(k);
      out.push(i);
    }
  };
  const visit = (issue: z.core.$ZodIssue, base: FieldPath) => {
    const path = [
      ...base,
      ...(issue.path as PropertyKey[]).map((p) => (typeof p === 'number' ? p : String(p))),
    ];
    if (issue.code === 'unrecognized_keys') {
      const suggested = suggestionsOf(issue);
      for (const key of issue.keys) {
        const s = suggested[key];
        const hint = s !== undefined ? ` (did you mean ${JSON.stringify(s)}?)` : '';
        push(src.issueAt([...path, key], `unknown field ${JSON.stringify(key)}${hint}`, true));
      }
      return;
    }
    if (issue.code === 'invalid_union' && issue.errors.length > 0) {
      // Pick the branch whose issues reach deepest into the input: it is most likely what was meant. A
      // field the input leaves out counts at its parent, below a problem of the parent itself (a
      // policy's plain form's own error beats its conditional form's missing `conditional`). On a
      // tie, a branch with a message of its own (a refine's, e.g. "… is not supported") wins, then
      // the branch with fewer issues (the others also miss their own key).
      let best = issue.errors[0] as z.core.$ZodIssue[];
      let bestDepth = -1;
      let bestScore = [-1, 0];
      const depthOf = (b: z.core.$ZodIssue) =>
        b.path.length > 0 && isAbsent(b)
          ? b.path.length - 0.75
          : b.code !== 'invalid_type'
            ? b.path.length + 0.5
            : b.path.length;
      for (const branch of issue.errors) {
        const depth = Math.max(...branch.map(depthOf));
        const score = [branch.some((b) => b.code === 'custom') ? 1 : 0, -branch.length];
        if (
          depth > bestDepth ||
          (depth === bestDepth &&
            ((score[0] as number) > (bestScore[0] as number) ||
              (score[0] === bestScore[0] && (score[1] as number) > (bestScore[1] as number))))
        ) {
          bestDepth = depth;
          bestScore = score;
          best = branch;
        }
      }
      // A key no form knows, where the forms differ only in the field each requires (path: {prefix}):
      // the key, and the fields it could have been. Forms that are not objects (backendAuth's string
      // "copilot") have nothing to say about a key.
      const objectForms = issue.errors.filter((branch) => !branch.every(notAnObjectForm));
      const unknownToAll = commonUnknownKeys(objectForms);
      const forms = [
        ...new Set(
          objectForms.flatMap((branch) =>
            branch.filter((b) => b.path.length === 1 && isAbsent(b)).map((b) => String(b.path[0])),
          ),
        ),
      ];
      if (
        unknownToAll.length > 0 &&
        forms.length === objectForms.length &&
        objectForms.every((branch) =>
          branch.every((b) => (b.code === 'unrecognized_keys' && b.path.length === 0) || isAbsent(b)),
        )
      ) {
        const oneOf = forms.map((f) => JSON.stringify(f)).join(', ');
        const suggested = Object.assign(
          {},
          ...objectForms.flat().map((b) => (b.code === 'unrecognized_keys' ? suggestionsOf(b) : {})),
        ) as Record<string, string>;
        for (const key of unknownToAll) {
          const s = suggested[key];
          const hint = s !== undefined ? `did you mean ${JSON.stringify(s)}?` : `expected one of ${oneOf}`;
          push(src.issueAt([...path, key], `unknown field ${JSON.stringify(key)} (${hint})`, true));
        }
        return;
      }
      // A branch where an unknown key is a likely misspelling of one of its fields (path: {pathprefix})
      // is what was meant: its issues, less that field's absence, which the hint already says.
      const hinted = issue.errors.find((branch) =>
        branch.some((b) => b.code === 'unrecognized_keys' && Object.keys(suggestionsOf(b)).length > 0),
      );
      if (hinted) {
        const meant = new Set(
          hinted.flatMap((b) =>
            b.code === 'unrecognized_keys'
              ? Object.values(suggestionsOf(b)).map((f) => JSON.stringify([...b.path, f]))
              : [],
          ),
        );
        for (const b of hinted) {
          const missing = b.code === 'invalid_type' && b.message.endsWith('received undefined');
          if (!(missing && meant.has(JSON.stringify(b.path)))) visit(b, path);
        }
        return;
      }
      if (bestDepth > 0) {
        for (const b of best) visit(b, path);
        return;
      }
      // Every form refused the value itself for the same reason (an object wanted, a string given):
      // that reason, not zod's bare "Invalid input".
      const reasons = new Set(issue.errors.map((branch) => (branch.length === 1 ? branch[0]?.message : '')));
      const [reason] = reasons;
      if (reasons.size === 1 && reason) {
        push(src.issueAt(path, reason));
        return;
      }
    }
    push(src.issueAt(path, issue.message));
  };
  for (const issue of error.issues) visit(issue, []);
  // in the order of the file (an issue with no position keeps its place after those that have one)
  const order = (a: ConfigIssue, b: ConfigIssue) => {
    if (a.line <= 0 || b.line <= 0) return (a.line <= 0 ? 1 : 0) - (b.line <= 0 ? 1 : 0);
    return a.line - b.line || a.column - b.column;
  };
  return out.sort(order);
}
