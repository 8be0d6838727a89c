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
