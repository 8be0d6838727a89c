// JSON-RPC 2.0 as MCP uses it: message shapes, the kind of a message, and the error codes the
// gateway answers with. Messages are relayed as parsed JSON, never re-validated field by field.

export type Id = string | number;

export interface Request {
  jsonrpc: '2.0';
  id: Id;
  method: string;
  params?: Params;
}
export interface Notification {
  jsonrpc: '2.0';
  method: string;
  params?: Params;
}
export interface RpcError {
  code: number;
  message: string;
  data?: unknown;
}
export interface Response {
  jsonrpc: '2.0';
  id: Id | null;
  result?: Record<string, unknown>;
  error?: RpcError;
}
export type Params = Record<string, unknown> & { _meta?: Record<string, unknown> };
export type Message = Request | Notification | Response;

/** Codes of JSON-RPC and the server-error range MCP servers use. */
export const CODE = {
  PARSE_ERROR: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL: -32603,
  /** The SDKs' "Session not found" (with HTTP 404, a client starts a new session). */
  SESSION_NOT_FOUND: -32001,
  /** An MCP authorization rule refused the item. */
  FORBIDDEN: -32003,
  /** A target could not be reached or failed. */
  UPSTREAM: -32004,
  /** A call or request took longer than allowed. */
  TIMEOUT: -32005,
  /** A rate limit refused the request (answered with HTTP 429). */
  RATE_LIMITED: -32006,
} as const;

export function isRequest(m: Message): m is Request {
  return 'method' in m && 'id' in m && m.id !== undefined && m.id !== null;
}
export function isNotification(m: Message): m is Notification {
  return 'method' in m && !('id' in m && m.id !== undefined && m.id !== null);
}
export function isResponse(m: Message): m is Response {
  return !('method' in m) && ('result' in m || 'error' in m);
}

/** A message in JSON-RPC's shape, or undefined (the caller answers "invalid request"). */
export function asMessage(v: unknown): Message | undefined {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return undefined;
  const m = v as Record<string, unknown>;
  if (m.jsonrpc !== '2.0') return undefined;
  if ('method' in m) {
    if (typeof m.method !== 'string') return undefined;
    if ('params' in m && m.params !== undefined && (typeof m.params !== 'object' || m.params === null))
      return undefined;
    if ('id' in m && m.id !== undefined && typeof m.id !== 'string' && typeof m.id !== 'number')
      return undefined;
    return m as unknown as Message;
  }
  if ('result' in m || 'error' in m) return m as unknown as Message;
  return undefined;
}

/** An error the gateway answers a request with: the code and words reach the client as they are. */
export class McpError extends Error {
  readonly code: number;
  readonly data: unknown;
  /** The HTTP status when the error answers the whole POST (session errors); else 200. */
  readonly httpStatus: number;
  constructor(code: number, message: string, data?: unknown, httpStatus = 200) {
    super(message);
    this.name = 'McpError';
    this.code = code;
    this.data = data;
    this.httpStatus = httpStatus;
  }
}

export function errorResponse(id: Id | null, code: number, message: string, data?: unknown): Response {
  const error: RpcError = { code, message };
  if (data !== undefined) error.data = data;
  return { jsonrpc: '2.0', id, error };
}

export function resultResponse(id: Id, result: Record<string, unknown>): Response {
  return { jsonrpc: '2.0', id, result };
}
