// Every error gwctl reports: a code, the exit status and the message shape, decided here only.
// Exit 2 means "the command line is wrong or the feature is missing"; exit 1 means "it ran and failed".

export const ERRORS = {
  GWCTL_ERR_USAGE: { exit: 2 },
  GWCTL_ERR_NOT_AVAILABLE: { exit: 2 },
  GWCTL_ERR_NO_TERMINAL: { exit: 2 },
  GWCTL_ERR_ADMIN_UNREACHABLE: { exit: 1 },
  GWCTL_ERR_ADMIN_STATUS: { exit: 1 },
  GWCTL_ERR_MALFORMED: { exit: 1 },
  GWCTL_ERR_TRACE_ENDED: { exit: 1 },
  GWCTL_ERR_TRACE_TIMEOUT: { exit: 1 },
  GWCTL_ERR_REQUEST_FAILED: { exit: 1 },
  GWCTL_ERR_WRITE_FAILED: { exit: 1 },
  GWCTL_ERR_KUBECONFIG: { exit: 1 },
  GWCTL_ERR_CLUSTER_UNREACHABLE: { exit: 1 },
  GWCTL_ERR_CLUSTER_STATUS: { exit: 1 },
  GWCTL_ERR_FORBIDDEN: { exit: 1 },
  GWCTL_ERR_NO_PROXY_POD: { exit: 1 },
  GWCTL_ERR_PORT_FORWARD: { exit: 1 },
} as const satisfies Record<string, { exit: number }>;

export type GwctlErrorCode = keyof typeof ERRORS;

export class GwctlError extends Error {
  readonly code: GwctlErrorCode;
  readonly exit: number;
  constructor(code: GwctlErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'GwctlError';
    this.code = code;
    this.exit = ERRORS[code].exit;
  }
}

export const usageError = (message: string) => new GwctlError('GWCTL_ERR_USAGE', message);

export const adminUnreachable = (port: number, cause: string) =>
  new GwctlError(
    'GWCTL_ERR_ADMIN_UNREACHABLE',
    `cannot reach the gw admin interface at 127.0.0.1:${port} (${cause}); is gw running?`,
  );

export const traceEnded = () =>
  new GwctlError('GWCTL_ERR_TRACE_ENDED', 'trace stream ended before the request finished');

/** The errno-style code of a failed connection (`ECONNREFUSED`), or the message when there is none. */
export function causeOf(err: unknown): string {
  const e = err as { code?: string; cause?: { code?: string; message?: string }; message?: string };
  return e.code ?? e.cause?.code ?? e.cause?.message ?? e.message ?? String(err);
}
