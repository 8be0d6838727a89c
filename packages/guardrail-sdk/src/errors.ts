// The webhook handler's error catalogue: each code's HTTP status and the JSON body a caller gets,
// decided here and nowhere else.

export const ERRORS = {
  GW_ERR_GUARDRAIL_NOT_FOUND: 404,
  GW_ERR_GUARDRAIL_METHOD: 405,
  GW_ERR_GUARDRAIL_BODY_TOO_LARGE: 413,
  GW_ERR_GUARDRAIL_CONTENT_TYPE: 415,
  GW_ERR_GUARDRAIL_BAD_JSON: 400,
  GW_ERR_GUARDRAIL_INVALID_BODY: 400,
  GW_ERR_GUARDRAIL_INVALID_VERDICT: 500,
  GW_ERR_GUARDRAIL_CALLBACK: 500,
} as const;

export type ErrorCode = keyof typeof ERRORS;

/** The body of every error answer: `{"error": {"code": "GW_ERR_…", "message": "…"}}`. */
export interface ErrorBody {
  error: { code: ErrorCode; message: string };
}

export class GuardrailError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  constructor(code: ErrorCode, message: string) {
    super(message);
    this.name = 'GuardrailError';
    this.code = code;
    this.status = ERRORS[code];
  }

  toBody(): ErrorBody {
    return { error: { code: this.code, message: this.message } };
  }
}
