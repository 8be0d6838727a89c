// Every error the proxy can answer a client with: a code, the HTTP status and the short text body.
// The status and body shape are decided here and nowhere else.

export const ERRORS = {
  GW_ERR_NO_ROUTE: { status: 404, message: 'route not found' },
  GW_ERR_NO_LISTENER: { status: 404, message: 'no listener for this host' },
  GW_ERR_NO_BACKEND: { status: 500, message: 'route has no backends' },
  GW_ERR_BAD_REQUEST: { status: 400, message: 'bad request' },
  GW_ERR_DYNAMIC_NO_HOST: {
    status: 400,
    message: 'dynamic forward proxy: request has no host to forward to',
  },
  GW_ERR_UNAUTHENTICATED: { status: 401, message: 'authentication required' },
  GW_ERR_JWT_INVALID: { status: 401, message: 'invalid JWT' },
  GW_ERR_FORBIDDEN: { status: 403, message: 'authorization denied' },
  GW_ERR_RATE_LIMITED: { status: 429, message: 'rate limit exceeded' },
  GW_ERR_CSRF: { status: 403, message: 'cross-site request rejected (CSRF)' },
  GW_ERR_REQUEST_TOO_LARGE: { status: 413, message: 'request body is larger than the buffer limit' },
  GW_ERR_RESPONSE_TOO_LARGE: { status: 502, message: 'response body is larger than the buffer limit' },
  GW_ERR_UPSTREAM_CONNECT: { status: 503, message: 'upstream connect error' },
  GW_ERR_UPSTREAM_RESET: { status: 502, message: 'upstream connection reset before response' },
  GW_ERR_UPSTREAM_PROTOCOL: { status: 502, message: 'upstream sent an invalid response' },
  GW_ERR_UPSTREAM_TLS: { status: 502, message: 'upstream TLS handshake failed' },
  GW_ERR_TIMEOUT: { status: 504, message: 'request timeout' },
  GW_ERR_BACKEND_TIMEOUT: { status: 504, message: 'upstream request timeout' },
  GW_ERR_CLIENT_CLOSED: { status: 499, message: 'client closed the request' },
  GW_ERR_SHUTTING_DOWN: { status: 503, message: 'gateway is shutting down' },
  GW_ERR_INTERNAL: { status: 500, message: 'internal error' },
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
    options?: { cause?: unknown; headers?: Record<string, string> },
  ) {
    const def = ERRORS[code];
    super(detail ?? def.message, options);
    this.name = 'GwError';
    this.code = code;
    this.status = def.status;
    this.detail = detail ?? def.message;
    this.headers = options?.headers;
  }
}

/** The body a client gets for an error: one text line, so curl users see the reason at once. */
export function errorBody(err: GwError): string {
  return `${err.detail}\n`;
}
