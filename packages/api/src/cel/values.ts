// The parts of gw's CEL that need no CEL library: the variables an expression may name, the length
// limit, and the conversions between JSON and CEL values. The data plane imports these statically;
// the library itself (environment.ts) loads with the first expression compiled.

/** Variables an expression may name; each is filled in only when its context exists. */
export const CEL_VARIABLES = [
  'request',
  'response',
  'source',
  'jwt',
  'apiKey',
  // The user basicAuth let in (`basicAuth.username`), as agentgateway names it.
  'basicAuth',
  'extauthz',
  'llmRequest',
  'llm',
  'backend',
  'route',
  // The MCP call being made (method, target, tool / prompt / resource): MCP authorization rules.
  'mcp',
  // The A2A call being made (method, task id, outcome): on routes whose backends are A2A agents.
  'a2a',
  // Values transformations stored (their `metadata` maps), for the policies after them.
  'metadata',
  // Where a TCP connection came in (address, port, and the TLS server name as hostname): a tcp route's
  // dynamic backend target.
  'destination',
] as const;
export type CelVariable = (typeof CEL_VARIABLES)[number];

/** The longest expression accepted (the CRDs' CELExpression limit). */
export const CEL_MAX_LENGTH = 16384;

/**
 * JSON text as CEL values: integers become CEL ints (bigint), so `json(request.body).n + 1` works;
 * numbers written with a fraction or an exponent are doubles.
 */
export function parseJson(text: string): unknown {
  return JSON.parse(text, (_k, v, context?: { source?: string }) =>
    typeof v === 'number' &&
    Number.isInteger(v) &&
    context?.source !== undefined &&
    /^-?[0-9]+$/.test(context.source)
      ? BigInt(context.source)
      : v,
  );
}

/**
 * A CEL value as plain JSON data: ints as numbers, maps as objects, bytes as base64 (as agentgateway
 * writes them), timestamps as RFC 3339 text.
 */
export function celToJson(value: unknown): unknown {
  if (typeof value === 'bigint') return Number(value);
  // flatten() outside a record field: the value it wraps
  if (isFlatten(value)) return celToJson(value.value);
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64');
  if (value instanceof Date) return value.toISOString();
  if (value instanceof Map) return Object.fromEntries([...value].map(([k, v]) => [String(k), celToJson(v)]));
  if (Array.isArray(value)) return value.map(celToJson);
  if (value && typeof value === 'object') {
    if ('toJSON' in value && typeof value.toJSON === 'function') return value.toJSON();
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, celToJson(v)]));
  }
  return value;
}

/**
 * The raw header values behind a CEL header map (`request.headers`), kept on it under a symbol CEL
 * cannot see: its entries read as one string each (repeated ones joined by `,`), and the header view
 * methods (`raw()`, `split()`, …) read the values as received.
 */
export const RAW_HEADERS = Symbol.for('gw.cel.rawHeaders');

/** A request's or response's headers as CEL reads them; `authority` fills in `host` (HTTP/2). */
export function celHeaderMap(
  h: Readonly<Record<string, string | string[] | undefined>>,
  authority?: string,
  /** The message the headers came from: its `headersDistinct` tells repeated headers apart. */
  received?: { readonly headersDistinct?: Record<string, string[]> },
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k in h) {
    const v = h[k];
    if (v !== undefined) out[k] = typeof v === 'string' ? v : v.join(',');
  }
  if (authority !== undefined && out.host === undefined) out.host = authority;
  const raw: CelRawHeaders = { headers: h, received };
  Object.defineProperty(out, RAW_HEADERS, { value: raw });
  return caseless(out);
}

/** A header map whose lookups ignore case (see CASELESS). */
export function caseless<T extends Record<string, string>>(headers: T): T {
  return new Proxy(headers, CASELESS as ProxyHandler<T>);
}

/**
 * Header names are case-insensitive (RFC 9110 §5.1), and the map's keys are lower case: a lookup by
 * any other spelling (`request.headers["X-Tenant"]`, `"X-Tenant" in request.headers`) finds the
 * header, as agentgateway's does. A rule that missed it would fail, and a failing deny rule lets
 * the request through.
 */
const CASELESS: ProxyHandler<Record<string, string>> = {
  get: (t, k) => (typeof k !== 'string' || k in t ? Reflect.get(t, k) : t[k.toLowerCase()]),
  has: (t, k) => k in t || (typeof k === 'string' && k.toLowerCase() in t),
  getOwnPropertyDescriptor: (t, k) =>
    Reflect.getOwnPropertyDescriptor(t, k) ??
    (typeof k === 'string' ? Reflect.getOwnPropertyDescriptor(t, k.toLowerCase()) : undefined),
};

export interface CelRawHeaders {
  headers: Readonly<Record<string, string | string[] | undefined>>;
  received: { readonly headersDistinct?: Record<string, string[]> } | undefined;
}

/**
 * A header's values as received: Node joins a repeated header into one value with `, `, so while
 * the value is still that join (no policy changed it) the received message's entries are used.
 */
export function rawHeaderValues(raw: CelRawHeaders, name: string): string[] | undefined {
  const v = raw.headers[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') return [...v];
  if (v.includes(', ')) {
    const d = raw.received?.headersDistinct?.[name];
    if (d && d.length > 1 && d.join(', ') === v) return [...d];
  }
  return [v];
}

/** Marks what flatten() / flattenRecursive() return: an access-log or span field that becomes many. */
export const FLATTEN = Symbol.for('gw.cel.flatten');
export type CelFlatten = { [FLATTEN]: 'one' | 'all'; value: unknown };

const isFlatten = (v: unknown): v is CelFlatten =>
  v !== null && typeof v === 'object' && FLATTEN in (v as object);

/** A map's or list's entries, by key or index; undefined for anything else. */
function containerEntries(v: unknown): [string, unknown][] | undefined {
  if (v instanceof Map) return [...v].map(([k, x]) => [String(k), x]);
  if (Array.isArray(v)) return v.map((x, i) => [String(i), x]);
  if (v !== null && typeof v === 'object' && !(v instanceof Uint8Array) && !(v instanceof Date))
    return Object.entries(v);
  return undefined;
}

/**
 * Writes a CEL result as the record field `name` (an access-log line, a span): as JSON data, or — a
 * flatten() result — as one field per entry (`name.key`), every level deep for flattenRecursive().
 */
export function setCelField(out: Record<string, unknown>, name: string, v: unknown): void {
  if (!isFlatten(v)) {
    out[name] = celToJson(v);
    return;
  }
  const entries = containerEntries(v.value);
  if (!entries) {
    out[name] = celToJson(v.value);
    return;
  }
  for (const [k, x] of entries) {
    if (v[FLATTEN] === 'all' && containerEntries(x) && !isFlatten(x))
      setCelField(out, `${name}.${k}`, { [FLATTEN]: 'all', value: x });
    else setCelField(out, `${name}.${k}`, x);
  }
}
