// agentgateway's views of request data in CEL: header maps with methods (`request.headers.redacted()`,
// `.join()`, `.raw()`, `.split()`, `.cookie(name)`), query accessors on any URL string
// (`request.pathAndQuery.query("a")`, `.addQuery(k, v)`, `.setQuery(k, v)`), `variables()` (every
// variable of the evaluation as one map) and `flatten()` / `flattenRecursive()` (one log or span
// field that becomes one per entry).
import type { Environment } from '@marcbachmann/cel-js';
import { DEFAULT_SENSITIVE_HEADERS } from '../config/credentials.ts';
import {
  type CelFlatten,
  type CelRawHeaders,
  caseless,
  FLATTEN,
  RAW_HEADERS,
  rawHeaderValues,
} from './values.ts';

const REDACTED = '<redacted>';
const SENSITIVE: ReadonlySet<string> = new Set(DEFAULT_SENSITIVE_HEADERS);

type HeaderLike = Record<string, unknown> | Map<unknown, unknown>;

/** Each header's values as received: from the raw headers behind a header map, else from its values. */
function headerEntries(m: HeaderLike): [string, string[]][] {
  const raw = (m as { [RAW_HEADERS]?: CelRawHeaders })[RAW_HEADERS];
  const pairs: [string, unknown][] =
    m instanceof Map ? [...m].map(([k, v]) => [String(k), v]) : Object.entries(m);
  return pairs.map(([k, v]) => {
    const r = raw && rawHeaderValues(raw, k);
    if (r !== undefined) return [k, r];
    if (Array.isArray(v)) return [k, v.map(String)];
    return [k, [String(v)]];
  });
}

/**
 * A header view's map: a name in any case finds its header, as in the header map it came from. A
 * Map whose own get and has fall back to the lower-case name (CEL tells a map by its constructor, so
 * it stays a Map, not a subclass).
 */
function headerViewMap<V>(entries: Iterable<[string, V]> = []): Map<string, V> {
  const m = new Map<string, V>(entries);
  const get = m.get.bind(m);
  const has = m.has.bind(m);
  m.get = (k) => get(k) ?? (typeof k === 'string' ? get(k.toLowerCase()) : undefined);
  m.has = (k) => has(k) || (typeof k === 'string' && has(k.toLowerCase()));
  return m;
}

/** The same kind of map with sensitive values replaced: a header map stays one (its methods work on). */
function redacted(m: HeaderLike): HeaderLike {
  if (m instanceof Map) {
    const out = headerViewMap<unknown>();
    for (const [k, v] of m)
      out.set(
        String(k),
        SENSITIVE.has(String(k)) ? (Array.isArray(v) ? v.map(() => REDACTED) : REDACTED) : v,
      );
    return out;
  }
  const headers: Record<string, string[]> = {};
  const out: Record<string, string> = {};
  for (const [k, values] of headerEntries(m)) {
    const hide = SENSITIVE.has(k);
    headers[k] = hide ? values.map(() => REDACTED) : values;
    out[k] = hide ? REDACTED : String((m as Record<string, unknown>)[k]);
  }
  const raw: CelRawHeaders = { headers, received: undefined };
  Object.defineProperty(out, RAW_HEADERS, { value: raw });
  return caseless(out);
}

/** The first value of the cookie `name` in the Cookie header(s); an error when there is none. */
function cookie(m: HeaderLike, name: string): string {
  for (const [k, values] of headerEntries(m)) {
    if (k !== 'cookie') continue;
    for (const line of values)
      for (const part of line.split(';')) {
        const eq = part.indexOf('=');
        if (eq !== -1 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
      }
  }
  throw new Error(`no such key: cookie ${JSON.stringify(name)}`);
}

/** The query of a path or URL (after `?`, before any `#`). */
function splitQuery(s: string): { base: string; query: string | undefined; fragment: string } {
  const hash = s.indexOf('#');
  const fragment = hash === -1 ? '' : s.slice(hash);
  const rest = hash === -1 ? s : s.slice(0, hash);
  const q = rest.indexOf('?');
  return q === -1
    ? { base: rest, query: undefined, fragment }
    : { base: rest.slice(0, q), query: rest.slice(q + 1), fragment };
}

/** One `name=value` pair, form-encoded as a query writes it. */
const pair = (name: string, value: string) => new URLSearchParams([[name, value]]).toString();

function queryValues(s: string, name: string): string[] {
  const values = new URLSearchParams(splitQuery(s).query ?? '').getAll(name);
  if (values.length === 0) throw new Error(`no such key: query parameter ${JSON.stringify(name)}`);
  return values;
}

function addQuery(s: string, name: string, value: string): string {
  const { base, query, fragment } = splitQuery(s);
  const q = query === undefined || query === '' ? pair(name, value) : `${query}&${pair(name, value)}`;
  return `${base}?${q}${fragment}`;
}

function setQuery(s: string, name: string, value: string): string {
  const { base, query, fragment } = splitQuery(s);
  // the other parameters kept as written, in their order; this one's values replaced by one, last
  const kept = (query ?? '')
    .split('&')
    .filter((p) => p !== '' && new URLSearchParams(p).keys().next().value !== name);
  return `${base}?${[...kept, pair(name, value)].join('&')}${fragment}`;
}

/** The variables of the expression being evaluated, for variables(); set by compileCelWith's wrapper. */
let evaluating: object | undefined;
/**
 * The variables of the top-level expression (a policy's), whatever custom function bodies run inside
 * it: the base every body's own variables are built on, so no body sees another's parameters.
 */
let root: object | undefined;
/** Custom function calls made in the current top-level evaluation (their bound: custom-functions.ts). */
let calls = 0;

/**
 * Runs `evaluate` with `ctx` as what variables() returns; `top`: `ctx` is a top-level expression's
 * (compileCelWith's wrapper), else a custom function body's.
 */
export function withVariables<T>(ctx: object, evaluate: () => T, top = false): T {
  const outer = evaluating;
  const outerRoot = root;
  const outerCalls = calls;
  evaluating = ctx;
  if (top) {
    root = ctx;
    calls = 0;
  }
  try {
    return evaluate();
  } finally {
    evaluating = outer;
    if (top) {
      root = outerRoot;
      calls = outerCalls;
    }
  }
}

/** The top-level expression's variables, while one is evaluated. */
export function rootVariables(): object | undefined {
  return root;
}

/** Counts a custom function call of the current top-level evaluation; returns how many so far. */
export function countCall(): number {
  return ++calls;
}

export function registerViews(e: Environment): void {
  e.registerFunction('map.redacted(): map', (m: HeaderLike) => redacted(m));
  e.registerFunction('map.join(): map', (m: HeaderLike) => {
    const out = headerViewMap<string>();
    for (const [k, values] of headerEntries(m)) out.set(k, values.join(','));
    return out;
  });
  e.registerFunction('map.raw(): map', (m: HeaderLike) => headerViewMap(headerEntries(m)));
  e.registerFunction('map.split(): map', (m: HeaderLike) => {
    const out = headerViewMap<string[]>();
    for (const [k, values] of headerEntries(m))
      out.set(
        k,
        values.flatMap((v) => v.split(',').map((x) => x.trim())),
      );
    return out;
  });
  e.registerFunction('map.cookie(string): string', (m: HeaderLike, name: string) => cookie(m, name));
  e.registerFunction('string.query(string): list<string>', (s: string, name: string) => queryValues(s, name));
  e.registerFunction('string.addQuery(string, string): string', (s: string, k: string, v: string) =>
    addQuery(s, k, v),
  );
  e.registerFunction('string.setQuery(string, string): string', (s: string, k: string, v: string) =>
    setQuery(s, k, v),
  );
  e.registerFunction('variables(): map<string, dyn>', () => {
    if (!evaluating) throw new Error('variables(): no evaluation in progress');
    return evaluating;
  });
  const flatten = (mode: CelFlatten[typeof FLATTEN]) => (value: unknown) => ({ [FLATTEN]: mode, value });
  e.registerFunction('flatten(dyn): dyn', flatten('one'));
  e.registerFunction('flattenRecursive(dyn): dyn', flatten('all'));
}
