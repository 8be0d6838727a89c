// Every error the proxy can answer a client with: a code, the HTTP status and the reason. Policies
// raise a GwError; the formatter of the client's protocol words it. The status and the body shape a
// client gets are decided here and nowhere else.

export const ERRORS = {
  GW_ERR_NO_ROUTE: { status: 404, message: 'route not found' },
  GW_ERR_NO_LISTENER: { status: 404, message: 'no listener for this host' },
  // RFC 9110 §15.5.20: the connection's TLS server name chose another listener than the Host names
  GW_ERR_MISDIRECTED: {
    status: 421,
    message: 'this connection is for another host: open one to this host (its TLS server name)',
  },
  GW_ERR_NO_BACKEND: { status: 500, message: 'route has no backends' },
  GW_ERR_INVALID_BACKEND: { status: 500, message: 'backend does not exist' },
  GW_ERR_BAD_REQUEST: { status: 400, message: 'bad request' },
  // A backend that serves one operation (an AgentCore runtime's POST invocations) and was sent another method.
  GW_ERR_METHOD_NOT_ALLOWED: { status: 405, message: 'method not allowed' },
  GW_ERR_DYNAMIC_NO_HOST: {
    status: 400,
    message: 'dynamic forward proxy: request has no host to forward to',
  },
  // dynamic.target (the config's CEL) gave no host:port for the request
  GW_ERR_DYNAMIC_TARGET: { status: 503, message: 'dynamic forward proxy: no target to dial' },
  GW_ERR_UNAUTHENTICATED: { status: 401, message: 'authentication required' },
  GW_ERR_JWT_INVALID: { status: 401, message: 'invalid JWT' },
  GW_ERR_FORBIDDEN: { status: 403, message: 'authorization denied' },
  GW_ERR_RATE_LIMITED: { status: 429, message: 'rate limit exceeded' },
  // a token budget (type: tokens) spent: OpenAI's clients tell the two apart by the error's type
  GW_ERR_TOKEN_RATE_LIMITED: { status: 429, message: 'token rate limit exceeded' },
  GW_ERR_CONCURRENCY_LIMITED: { status: 429, message: 'too many requests in flight' },
  GW_ERR_CSRF: { status: 403, message: 'cross-site request rejected (CSRF)' },
  GW_ERR_IP_DENIED: { status: 403, message: 'client address not allowed' },
  GW_ERR_REQUEST_TOO_LARGE: { status: 413, message: 'request body is larger than the buffer limit' },
  GW_ERR_TOO_MANY_HEADERS: { status: 431, message: 'request has more headers than the gateway takes' },
  GW_ERR_RESPONSE_TOO_LARGE: { status: 502, message: 'response body is larger than the buffer limit' },
  GW_ERR_UPSTREAM_CONNECT: { status: 503, message: 'upstream connect error' },
  GW_ERR_NO_ENDPOINT: { status: 503, message: 'the service has no endpoint to send the request to' },
  GW_ERR_UPSTREAM_RESET: { status: 502, message: 'upstream connection reset before response' },
  GW_ERR_UPSTREAM_PROTOCOL: { status: 502, message: 'upstream sent an invalid response' },
  GW_ERR_UPSTREAM_TLS: { status: 502, message: 'upstream TLS handshake failed' },
  GW_ERR_TIMEOUT: { status: 504, message: 'request timeout' },
  GW_ERR_REQUEST_BODY_TIMEOUT: {
    status: 408,
    message: 'request body timeout: the client stopped sending it',
  },
  GW_ERR_BACKEND_TIMEOUT: { status: 504, message: 'upstream request timeout' },
  GW_ERR_CLIENT_CLOSED: { status: 499, message: 'client closed the request' },
  GW_ERR_SHUTTING_DOWN: { status: 503, message: 'gateway is shutting down' },
  GW_ERR_OVERLOADED: { status: 503, message: 'request limit exceeded' },
  // An Upgrade (WebSocket) request to a route whose backend speaks HTTP requests only (ai, mcp, a2a).
  GW_ERR_UPGRADE_UNSUPPORTED: {
    status: 400,
    message: "this route's backend does not accept protocol upgrades",
  },
  GW_ERR_INTERNAL: { status: 500, message: 'internal error' },
  GW_ERR_LLM_BAD_REQUEST: { status: 400, message: 'invalid LLM request' },
  GW_ERR_LLM_UNKNOWN_MODEL: { status: 404, message: 'model not found' },
  GW_ERR_LLM_UNSUPPORTED_FORMAT: {
    status: 400,
    message: "the request's API format cannot be converted to the provider's",
  },
  GW_ERR_LLM_PROVIDER: { status: 502, message: 'the LLM provider sent an answer that is not its API' },
  // The status and message are the guard's rejection (default 403 and this text).
  GW_ERR_LLM_GUARDRAIL: { status: 403, message: 'The request was rejected due to inappropriate content' },
  // A guard service (webhook) that failed closed: unreachable, too slow, or no valid verdict.
  GW_ERR_LLM_GUARDRAIL_UNAVAILABLE: { status: 503, message: 'a guardrail service failed' },
  // A JSON-RPC client's body (A2A) that is not JSON (-32700), or JSON but not a JSON-RPC request (-32600).
  GW_ERR_JSONRPC_PARSE: { status: 400, message: 'the request body is not valid JSON' },
  GW_ERR_JSONRPC_INVALID: { status: 400, message: 'the request is not a JSON-RPC 2.0 request' },
  // mcpAuthentication: the identity provider's metadata or registration endpoint failed to answer.
  GW_ERR_MCP_AUTH_SERVER: { status: 502, message: 'the authorization server did not answer' },
  // oidc: a callback the gateway cannot match to a login it started (state, login cookie, code).
  GW_ERR_OIDC_CALLBACK: { status: 400, message: 'invalid OIDC callback' },
  // oidc: the provider refused the login (error parameter, rejected code, an ID token that does not verify).
  GW_ERR_OIDC_LOGIN: { status: 401, message: 'OIDC login failed' },
  // oidc: the OpenID provider's discovery, token endpoint or JWKS did not answer usefully.
  GW_ERR_OIDC_PROVIDER: { status: 502, message: 'the OpenID provider did not answer' },
  // backendAuth: the token source of a gcp, azure, oauthTokenExchange or crossAppAccess form failed.
  GW_ERR_BACKEND_AUTH: { status: 502, message: 'the credential for the backend could not be obtained' },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERRORS;

export class GwError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  /** The reason shown to the client; defaults to the catalogue text. */
  readonly detail: string;
  /** Headers the answer must carry (WWW-Authenticate on 401, x-ratelimit-* on 429). */
  headers: Record<string, string> | undefined;
  constructor(
    code: ErrorCode,
    detail?: string,
    options?: { cause?: unknown; headers?: Record<string, string>; status?: number },
  ) {
    const def = ERRORS[code];
    super(detail ?? def.message, options);
    this.name = 'GwError';
    this.code = code;
    // Only a configured answer (a guard's rejection) chooses its own status.
    this.status = options?.status ?? def.status;
    this.detail = detail ?? def.message;
    this.headers = options?.headers;
  }

  /**
   * Changes the headers the error's answer carries: a response policy (cors, responseHeaderModifier)
   * an error passes on its way out puts its headers on the gateway's answer too.
   */
  editHeaders(edit: (h: Record<string, string | string[]>) => void): void {
    const h: Record<string, string | string[]> = { ...this.headers };
    edit(h);
    this.headers = h as Record<string, string>;
  }
}

/**
 * The protocols a client may expect an error in: plain HTTP text, an OpenAI- or Anthropic-shaped JSON
 * error (LLM clients), a JSON-RPC error (MCP, A2A), or a gRPC status (any gRPC request).
 */
/**
 * `status`: Google's API error object (`{error: {code, status, message}}`, AIP-193), which A2A's
 * HTTP+JSON binding answers errors with.
 */
export type ErrorFormat = 'http' | 'openai' | 'anthropic' | 'jsonrpc' | 'grpc' | 'status';

export interface ErrorAnswer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/** A JSON-RPC request id: a string or a number as the client sent it; null when none could be read. */
export type JsonRpcId = string | number | null;

type Formatter = (
  err: GwError,
  id: JsonRpcId,
) => {
  status?: number;
  type: string;
  body: string;
  headers?: Record<string, string>;
};

/** OpenAI's own error codes, which clients test for, where gw's error is one of them. */
const OPENAI_CODES: Partial<Record<string, string>> = {
  GW_ERR_LLM_UNKNOWN_MODEL: 'model_not_found',
  GW_ERR_RATE_LIMITED: 'rate_limit_exceeded',
  GW_ERR_TOKEN_RATE_LIMITED: 'rate_limit_exceeded',
};

const FORMATTERS: Record<ErrorFormat, Formatter> = {
  // One text line, so curl users see the reason at once.
  http: (e) => ({ type: 'text/plain; charset=utf-8', body: `${e.detail}\n` }),
  // OpenAI's error object: the SDKs pick the error class by status and show error.message.
  openai: (e) =>
    json({
      error: {
        message: e.detail,
        type: e.code === 'GW_ERR_TOKEN_RATE_LIMITED' ? 'tokens' : openaiType(e.status),
        param: null,
        code: OPENAI_CODES[e.code] ?? e.code.toLowerCase(),
      },
    }),
  // Anthropic's error envelope, with its documented error types.
  anthropic: (e) => json({ type: 'error', error: { type: anthropicType(e.status), message: e.detail } }),
  // JSON-RPC 2.0: the request's id, null only when it could not be read (a body that is not JSON,
  // an answer before the body was read).
  jsonrpc: (e, id) =>
    json({
      jsonrpc: '2.0',
      id,
      error: {
        code: e.code === 'GW_ERR_JSONRPC_PARSE' ? -32700 : e.status === 400 ? -32600 : -32000,
        message: e.detail,
        data: { code: e.code, status: e.status },
      },
    }),
  status: (e) =>
    json({
      error: { code: e.status, status: STATUS_NAMES[GRPC_STATUS[e.code]] ?? 'UNKNOWN', message: e.detail },
    }),
  // gRPC carries errors in a trailers-only response: HTTP 200 with grpc-status and grpc-message.
  grpc: (e) => ({
    status: 200,
    type: 'application/grpc',
    body: '',
    headers: { 'grpc-status': String(GRPC_STATUS[e.code]), 'grpc-message': encodeGrpcMessage(e.detail) },
  }),
};

/**
 * The answer a client gets for `err` in the given format. `jsonrpcId` is the id of the JSON-RPC
 * request being answered, when the gateway read it (only the jsonrpc format uses it).
 */
export function errorResponse(err: GwError, format: ErrorFormat, jsonrpcId: JsonRpcId = null): ErrorAnswer {
  const f = FORMATTERS[format](err, jsonrpcId);
  const body = Buffer.from(f.body);
  return {
    status: f.status ?? err.status,
    headers: {
      ...err.headers,
      ...f.headers,
      'content-type': f.type,
      'content-length': String(body.length),
    },
    body,
  };
}

/** The format for a request: gRPC requests always get a gRPC status, others their route's format. */
export function errorFormatFor(contentType: unknown, routeFormat: ErrorFormat | undefined): ErrorFormat {
  if (typeof contentType === 'string' && contentType.startsWith('application/grpc')) return 'grpc';
  return routeFormat ?? 'http';
}

function json(v: unknown): { type: string; body: string } {
  return { type: 'application/json', body: JSON.stringify(v) };
}

export function openaiType(status: number): string {
  if (status === 429) return 'requests';
  if (status >= 500) return 'server_error';
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  return 'invalid_request_error';
}

export function anthropicType(status: number): string {
  switch (status) {
    case 400:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 503:
      return 'overloaded_error';
    default:
      return status < 500 ? 'invalid_request_error' : 'api_error';
  }
}

/** gRPC status codes (grpc/doc/statuscodes.md) for each error. */
const GRPC_STATUS: Record<ErrorCode, number> = {
  GW_ERR_NO_ROUTE: 12, // UNIMPLEMENTED, as gRPC maps HTTP 404
  GW_ERR_NO_LISTENER: 12,
  GW_ERR_MISDIRECTED: 14, // UNAVAILABLE: the client may retry on a new connection
  GW_ERR_NO_BACKEND: 13, // INTERNAL
  GW_ERR_INVALID_BACKEND: 13,
  GW_ERR_BAD_REQUEST: 3, // INVALID_ARGUMENT
  GW_ERR_METHOD_NOT_ALLOWED: 12, // UNIMPLEMENTED
  GW_ERR_DYNAMIC_NO_HOST: 3,
  GW_ERR_DYNAMIC_TARGET: 14, // UNAVAILABLE
  GW_ERR_UNAUTHENTICATED: 16, // UNAUTHENTICATED
  GW_ERR_JWT_INVALID: 16,
  GW_ERR_FORBIDDEN: 7, // PERMISSION_DENIED
  GW_ERR_RATE_LIMITED: 8, // RESOURCE_EXHAUSTED
  GW_ERR_TOKEN_RATE_LIMITED: 8,
  GW_ERR_CONCURRENCY_LIMITED: 8,
  GW_ERR_CSRF: 7,
  GW_ERR_IP_DENIED: 7,
  GW_ERR_REQUEST_TOO_LARGE: 8,
  GW_ERR_TOO_MANY_HEADERS: 8,
  GW_ERR_RESPONSE_TOO_LARGE: 8,
  GW_ERR_UPSTREAM_CONNECT: 14, // UNAVAILABLE
  GW_ERR_NO_ENDPOINT: 14,
  GW_ERR_UPSTREAM_RESET: 14,
  GW_ERR_UPSTREAM_PROTOCOL: 14,
  GW_ERR_UPSTREAM_TLS: 14,
  GW_ERR_TIMEOUT: 4, // DEADLINE_EXCEEDED
  GW_ERR_REQUEST_BODY_TIMEOUT: 4,
  GW_ERR_BACKEND_TIMEOUT: 4,
  GW_ERR_CLIENT_CLOSED: 1, // CANCELLED
  GW_ERR_SHUTTING_DOWN: 14,
  GW_ERR_OVERLOADED: 14,
  GW_ERR_UPGRADE_UNSUPPORTED: 3,
  GW_ERR_INTERNAL: 13,
  GW_ERR_LLM_BAD_REQUEST: 3,
  GW_ERR_LLM_UNKNOWN_MODEL: 5, // NOT_FOUND
  GW_ERR_LLM_UNSUPPORTED_FORMAT: 3,
  GW_ERR_LLM_PROVIDER: 14,
  GW_ERR_LLM_GUARDRAIL: 7,
  GW_ERR_LLM_GUARDRAIL_UNAVAILABLE: 14,
  GW_ERR_JSONRPC_PARSE: 3,
  GW_ERR_JSONRPC_INVALID: 3,
  GW_ERR_MCP_AUTH_SERVER: 14,
  GW_ERR_OIDC_CALLBACK: 3,
  GW_ERR_OIDC_LOGIN: 16,
  GW_ERR_OIDC_PROVIDER: 14,
  GW_ERR_BACKEND_AUTH: 14,
};

/** The names of the canonical status codes GRPC_STATUS uses (google.rpc.Code). */
const STATUS_NAMES: Record<number, string> = {
  1: 'CANCELLED',
  3: 'INVALID_ARGUMENT',
  4: 'DEADLINE_EXCEEDED',
  5: 'NOT_FOUND',
  7: 'PERMISSION_DENIED',
  8: 'RESOURCE_EXHAUSTED',
  12: 'UNIMPLEMENTED',
  13: 'INTERNAL',
  14: 'UNAVAILABLE',
  16: 'UNAUTHENTICATED',
};

/** grpc-message is percent-encoded (gRPC over HTTP/2: Status-Message). */
function encodeGrpcMessage(s: string): string {
  return s.replace(/[^\x20-\x24\x26-\x7e]/gu, (c) =>
    [...Buffer.from(c)].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join(''),
  );
}
