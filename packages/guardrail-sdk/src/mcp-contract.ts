// The MCP guardrail processor contract: what the gateway POSTs to a processor for an MCP JSON-RPC
// request or its result, and the verdicts (allow, modify, reject) it accepts back, as zod schemas.
// agentgateway calls its processors over gRPC; gw's processors speak this JSON contract over HTTP.
import { z } from 'zod';

export {
  MCP_CONTRACT_VERSION,
  MCP_DEFAULT_TIMEOUT_MS,
  MCP_REJECT_CODE,
  MCP_REQUEST_PATH,
  MCP_RESPONSE_PATH,
} from './wire.ts';

const Json = z.record(z.string(), z.unknown());

const common = {
  version: z.string(),
  /** The JSON-RPC method, as the client sent it (`tools/call`, `tools/list`, …). */
  method: z.string(),
  /**
   * The request's params as the client sent them (names carry the gateway's target prefix, as the
   * client sees them); `{}` when the client sent none.
   */
  params: Json,
  /**
   * The client's request headers the processor is allowed to see (lower-case names; pseudo-headers
   * `:authority`, `:method`, `:path`, `:scheme` when allowed).
   */
  headers: z.record(z.string(), z.string()),
  /** The processor's `metadata` expressions, evaluated on the request (a failing one is left out). */
  metadata: z.record(z.string(), z.unknown()),
};

/** Request phase: `POST /mcp/request` before the request reaches any MCP server. */
export const McpRequestCall = z.object({ ...common, phase: z.literal('request') });
export type McpRequestCall = z.infer<typeof McpRequestCall>;

/** Response phase: `POST /mcp/response` with the result the client is about to get. */
export const McpResponseCall = z.object({
  ...common,
  phase: z.literal('response'),
  /** The JSON-RPC result, after the gateway's own MCP authorization filtered it. */
  result: Json,
  /** The MCP server (target) that answered; absent for a fan-out (`tools/list` across targets). */
  target: z.string().optional(),
});
export type McpResponseCall = z.infer<typeof McpResponseCall>;

export const McpProcessorCall = z.discriminatedUnion('phase', [McpRequestCall, McpResponseCall]);
export type McpProcessorCall = z.infer<typeof McpProcessorCall>;

const reason = z.string().optional();

export const McpAllow = z.object({ action: z.literal('allow'), reason });

/** Request phase: the params the request goes on with (the method cannot change). */
export const McpModifyRequest = z.object({ action: z.literal('modify'), params: Json, reason });

/** Response phase: the result the client gets instead. */
export const McpModifyResponse = z.object({ action: z.literal('modify'), result: Json, reason });

/**
 * The client gets a JSON-RPC error with this message (and `code`, default -32003, the gateway's
 * "forbidden"; and `data` when given) instead of the request's answer.
 */
export const McpReject = z.object({
  action: z.literal('reject'),
  message: z.string().min(1),
  code: z.number().int().optional(),
  data: z.unknown().optional(),
  reason,
});

export const McpRequestVerdict = z.discriminatedUnion('action', [McpAllow, McpModifyRequest, McpReject]);
export type McpRequestVerdict = z.infer<typeof McpRequestVerdict>;

export const McpResponseVerdict = z.discriminatedUnion('action', [McpAllow, McpModifyResponse, McpReject]);
export type McpResponseVerdict = z.infer<typeof McpResponseVerdict>;

/** Reads a verdict (already JSON-decoded) for `phase`, or says what is wrong with it. */
export function mcpVerdict(
  phase: 'request' | 'response',
  input: unknown,
): { ok: true; value: McpRequestVerdict | McpResponseVerdict } | { ok: false; error: string } {
  const r = (phase === 'request' ? McpRequestVerdict : McpResponseVerdict).safeParse(input);
  if (r.success) return { ok: true, value: r.data };
  return { ok: false, error: `invalid ${phase}-phase verdict: ${z.prettifyError(r.error)}` };
}

/** Verdict builders for processor authors. */
export const mcp = {
  allow: (reason?: string): z.input<typeof McpAllow> => ({ action: 'allow', ...(reason ? { reason } : {}) }),
  modifyParams: (params: Record<string, unknown>, reason?: string): z.input<typeof McpModifyRequest> => ({
    action: 'modify',
    params,
    ...(reason ? { reason } : {}),
  }),
  modifyResult: (result: Record<string, unknown>, reason?: string): z.input<typeof McpModifyResponse> => ({
    action: 'modify',
    result,
    ...(reason ? { reason } : {}),
  }),
  reject: (message: string, code?: number, data?: unknown): z.input<typeof McpReject> => ({
    action: 'reject',
    message,
    ...(code === undefined ? {} : { code }),
    ...(data === undefined ? {} : { data }),
  }),
};
