// A node:http handler for MCP guardrail processors: it checks each call against the contract, runs
// the author's callback for its phase and checks the verdict before it goes back to the gateway.
import { z } from 'zod';
import {
  type CallContext,
  DEFAULT_MAX_BODY_BYTES,
  type GuardrailHandler,
  type JsonEndpoint,
  jsonEndpoints,
  valid,
} from './handler.ts';
import {
  MCP_REQUEST_PATH,
  MCP_RESPONSE_PATH,
  McpRequestCall,
  type McpRequestVerdict,
  McpResponseCall,
  type McpResponseVerdict,
  mcpVerdict,
} from './mcp-contract.ts';

type Awaitable<T> = T | Promise<T>;

export interface McpProcessorCallbacks {
  /** Request phase: the client's JSON-RPC request, before any MCP server sees it. */
  onRequest?: (call: McpRequestCall, ctx: CallContext) => Awaitable<z.input<typeof McpRequestVerdict>>;
  /** Response phase: the result the client is about to get. */
  onResponse?: (call: McpResponseCall, ctx: CallContext) => Awaitable<z.input<typeof McpResponseVerdict>>;
}

/**
 * Returns a `(req, res)` listener for `http.createServer` serving `POST /mcp/request` and
 * `POST /mcp/response`; a phase without a callback is not served (404).
 */
export function createMcpProcessorHandler(
  callbacks: McpProcessorCallbacks,
  options: { maxBodyBytes?: number } = {},
): GuardrailHandler {
  const routes = new Map<string, JsonEndpoint>();
  const { onRequest, onResponse } = callbacks;
  if (onRequest)
    routes.set(MCP_REQUEST_PATH, async (json, ctx) => {
      const call = valid(
        parsed(McpRequestCall.safeParse(json), 'request-phase call'),
        'GW_ERR_GUARDRAIL_INVALID_BODY',
      );
      return valid(mcpVerdict('request', await onRequest(call, ctx)), 'GW_ERR_GUARDRAIL_INVALID_VERDICT');
    });
  if (onResponse)
    routes.set(MCP_RESPONSE_PATH, async (json, ctx) => {
      const call = valid(
        parsed(McpResponseCall.safeParse(json), 'response-phase call'),
        'GW_ERR_GUARDRAIL_INVALID_BODY',
      );
      return valid(mcpVerdict('response', await onResponse(call, ctx)), 'GW_ERR_GUARDRAIL_INVALID_VERDICT');
    });
  return jsonEndpoints(routes, options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES);
}

function parsed<T>(
  r: { success: true; data: T } | { success: false; error: z.ZodError },
  what: string,
): { ok: true; value: T } | { ok: false; error: string } {
  return r.success
    ? { ok: true, value: r.data }
    : { ok: false, error: `invalid ${what}: ${z.prettifyError(r.error)}` };
}
