// The CEL environment policy expressions are written against: the variables, the CIDR type and the
// functions gw adds. The proxy builds it with handlers that run; the config checks build it with
// stand-ins that never run. Both compile through `compileCelWith`, so an expression the checks accept
// is one the proxy compiles, with the same error message when it is not.
import { type ASTNode, Environment } from '@marcbachmann/cel-js';

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
 * What evaluating needs beyond the declarations: the CIDR class and `random()`. (String helpers such
 * as `stripPrefix` are pure, so both environments run the same code.)
 */
export interface CelRuntime<C extends object> {
  Cidr: new (text: string) => C;
  containsIP(cidr: C, ip: string): boolean;
  random(): number;
}

/** A fresh environment with gw's declarations and the given runtime behind them. */
export function celEnvironment<C extends object>(rt: CelRuntime<C>): Environment {
  const e = new Environment({ homogeneousAggregateLiterals: false });
  for (const v of CEL_VARIABLES) e.registerVariable(v, 'dyn');
  e.registerFunction('random(): double', () => rt.random());
  // 'openai/gpt-4o'.stripPrefix('openai/') == 'gpt-4o'; a string without the prefix is kept.
  e.registerFunction('string.stripPrefix(string): string', (s: string, p: string) =>
    s.startsWith(p) ? s.slice(p.length) : s,
  );
  e.registerFunction('string.stripSuffix(string): string', (s: string, p: string) =>
    p !== '' && s.endsWith(p) ? s.slice(0, -p.length) : s,
  );
  // agentgateway's JSON functions: json() parses a string or bytes (a request body), toJson() writes.
  e.registerFunction('json(string): dyn', (s: string) => parseJson(s));
  e.registerFunction('json(bytes): dyn', (b: Uint8Array) => parseJson(new TextDecoder().decode(b)));
  e.registerFunction('toJson(dyn): string', (v: unknown) => JSON.stringify(celToJson(v)));
  e.registerFunction('to_json(dyn): string', (v: unknown) => JSON.stringify(celToJson(v)));
  e.registerType('CIDR', rt.Cidr);
  e.registerFunction('cidr(string): CIDR', (text: string) => new rt.Cidr(text));
  e.registerFunction({
    name: 'containsIP',
    receiverType: 'CIDR',
    returnType: 'bool',
    handler: (c: C, ip: unknown) => typeof ip === 'string' && rt.containsIP(c, ip),
    params: [{ name: 'ip', type: 'dyn' }],
  });
  return e;
}

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

export type CelEvaluator = ((ctx: Partial<Record<CelVariable, unknown>>) => unknown) & {
  /** The syntax tree, for what the expression reads. */
  readonly ast: ASTNode;
};

/** Parses and type-checks `source`; the message is the library's (it shows where) or the length limit. */
export function compileCelWith(
  env: Environment,
  source: string,
): { ok: true; evaluate: CelEvaluator } | { ok: false; message: string } {
  if (source.length > CEL_MAX_LENGTH)
    return { ok: false, message: `expression is longer than ${CEL_MAX_LENGTH} characters` };
  let evaluate: CelEvaluator;
  try {
    evaluate = env.parse(source) as unknown as CelEvaluator;
  } catch (err) {
    return { ok: false, message: (err as Error).message };
  }
  const checked = env.check(source) as { valid: boolean; error?: Error };
  if (!checked.valid) return { ok: false, message: checked.error?.message ?? 'invalid expression' };
  return { ok: true, evaluate };
}
