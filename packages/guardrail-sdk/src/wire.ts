// The contracts' constants (versions, paths, timeouts, the reject code) without their zod schemas, so
// a gateway worker can address a guardrail service before it needs the schemas to read a verdict.

/** The version of agentgateway's Guardrail Webhook API (its OpenAPI `info.version`) these shapes follow. */
export const CONTRACT_VERSION = '0.1.0';

/** Default webhook paths; a `webhook.headers[':path']` CEL expression replaces them. */
export const REQUEST_PATH = '/request';
export const RESPONSE_PATH = '/response';

/** How long the gateway waits for a verdict before the call counts as failed. */
export const DEFAULT_TIMEOUT_MS = 10_000;

/** Sent as `version` in every MCP processor call; a processor may refuse versions it does not know. */
export const MCP_CONTRACT_VERSION = 'gw.mcp-processor/v1';

/** Where the gateway POSTs each MCP phase, under the processor's origin. */
export const MCP_REQUEST_PATH = '/mcp/request';
export const MCP_RESPONSE_PATH = '/mcp/response';

/** How long the gateway waits for an MCP processor's verdict before the call counts as failed. */
export const MCP_DEFAULT_TIMEOUT_MS = 10_000;

/** The JSON-RPC error code of an MCP reject that names none. */
export const MCP_REJECT_CODE = -32003;
