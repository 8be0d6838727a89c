// The guardrail webhook contract: what the gateway POSTs to a customer's webhook and the verdict it
// accepts back, as zod schemas. Wire-compatible with agentgateway's webhook API (OpenAPI 0.1.0).
import { z } from 'zod';

export { CONTRACT_VERSION, DEFAULT_TIMEOUT_MS, REQUEST_PATH, RESPONSE_PATH } from './wire.ts';

/** One message as the webhook sees it: text only, whatever the client's provider format was. */
export const Message = z.object({
  role: z.string(),
  content: z.string(),
});
export type Message = z.infer<typeof Message>;

export const PromptMessages = z.object({ messages: z.array(Message) });
export type PromptMessages = z.infer<typeof PromptMessages>;

export const ResponseChoice = z.object({ message: Message });
export type ResponseChoice = z.infer<typeof ResponseChoice>;

export const ResponseChoices = z.object({ choices: z.array(ResponseChoice) });
export type ResponseChoices = z.infer<typeof ResponseChoices>;

/** Request phase: sent to `POST /request` before the request is forwarded to the LLM. */
export const GuardrailsPromptRequest = z.object({ body: PromptMessages });
export type GuardrailsPromptRequest = z.infer<typeof GuardrailsPromptRequest>;

/** Response phase: sent to `POST /response` before the LLM's answer returns to the client. */
export const GuardrailsResponseRequest = z.object({ body: ResponseChoices });
export type GuardrailsResponseRequest = z.infer<typeof GuardrailsResponseRequest>;

// `reason` is optional and may be null (the OpenAPI says string | null); the gateway only logs it.
const reason = z.string().nullish();

/** Allow: the content goes on unchanged. */
export const PassAction = z
  .looseObject({ reason })
  // agentgateway decodes the action untagged, so any object that is neither a mask nor a reject is
  // a pass there. A `body` or `status_code` here means a mask or reject that is malformed, and
  // reading it as "allow" would fail open; gw treats it as an invalid verdict instead.
  .refine((a) => !('body' in a) && !('status_code' in a), {
    message: 'an action with body or status_code must be a valid mask or reject action',
  })
  .transform((a): { reason?: string } => (a.reason == null ? {} : { reason: a.reason }));
export type PassAction = z.infer<typeof PassAction>;

/** Reject: the client gets `status_code` with `body` as the (text) response body. */
export const RejectAction = z.object({
  body: z.string(),
  status_code: z.number().int().min(100).max(599),
  reason,
});
export type RejectAction = z.infer<typeof RejectAction>;

/** Modify, request phase: the messages that replace the prompt (same count as sent). */
export const PromptMaskAction = z.object({ body: PromptMessages, reason });
export type PromptMaskAction = z.infer<typeof PromptMaskAction>;

/** Modify, response phase: the choices that replace the answer (same count as sent). */
export const ResponseMaskAction = z.object({ body: ResponseChoices, reason });
export type ResponseMaskAction = z.infer<typeof ResponseMaskAction>;

/** The phase-neutral MaskAction of the OpenAPI: body is PromptMessages or ResponseChoices. */
export const MaskAction = z.object({ body: z.union([PromptMessages, ResponseChoices]), reason });
export type MaskAction = z.infer<typeof MaskAction>;

// Tried in agentgateway's order: mask, reject, pass.
export const RequestAction = z.union([PromptMaskAction, RejectAction, PassAction]);
export type RequestAction = z.infer<typeof RequestAction>;

// The OpenAPI document lists only pass and mask for /response, but agentgateway also applies a
// reject there (the client gets the status and body instead of the LLM's answer), and so does gw.
export const ResponseAction = z.union([ResponseMaskAction, RejectAction, PassAction]);
export type ResponseAction = z.infer<typeof ResponseAction>;

/** The webhook's answer to `POST /request`. */
export const GuardrailsPromptResponse = z.object({ action: RequestAction });
export type GuardrailsPromptResponse = z.infer<typeof GuardrailsPromptResponse>;

/** The webhook's answer to `POST /response`. */
export const GuardrailsResponseResponse = z.object({ action: ResponseAction });
export type GuardrailsResponseResponse = z.infer<typeof GuardrailsResponseResponse>;

export type Phase = 'request' | 'response';

/** A verdict in the spec's words (allow, modify, reject), for code that acts on it. */
export type Verdict<Body> =
  | { kind: 'allow'; reason?: string }
  | { kind: 'modify'; body: Body; reason?: string }
  | { kind: 'reject'; statusCode: number; body: string; reason?: string };

export type ParseResult<T> = { ok: true; value: T } | { ok: false; error: string };

function parseWith<T>(schema: z.ZodType<T>, input: unknown, what: string): ParseResult<T> {
  const r = schema.safeParse(input);
  if (r.success) return { ok: true, value: r.data };
  return { ok: false, error: `invalid ${what}: ${z.prettifyError(r.error)}` };
}

export function parsePromptRequest(input: unknown): ParseResult<GuardrailsPromptRequest> {
  return parseWith(GuardrailsPromptRequest, input, 'request-phase body');
}

export function parseResponseRequest(input: unknown): ParseResult<GuardrailsResponseRequest> {
  return parseWith(GuardrailsResponseRequest, input, 'response-phase body');
}

export function parsePromptResponse(input: unknown): ParseResult<GuardrailsPromptResponse> {
  return parseWith(GuardrailsPromptResponse, input, 'request-phase verdict');
}

export function parseResponseResponse(input: unknown): ParseResult<GuardrailsResponseResponse> {
  return parseWith(GuardrailsResponseResponse, input, 'response-phase verdict');
}

function withReason<T extends object>(v: T, r: string | null | undefined): T & { reason?: string } {
  return r == null ? v : { ...v, reason: r };
}

function toVerdict<Body>(action: {
  body?: unknown;
  status_code?: number | undefined;
  reason?: string | null | undefined;
}): Verdict<Body> {
  if (typeof action.status_code === 'number' && typeof action.body === 'string') {
    return withReason({ kind: 'reject', statusCode: action.status_code, body: action.body }, action.reason);
  }
  if (action.body !== undefined)
    return withReason({ kind: 'modify', body: action.body as Body }, action.reason);
  return withReason({ kind: 'allow' }, action.reason);
}

/** Reads a request-phase verdict (already JSON-decoded) into allow / modify / reject. */
export function promptVerdict(input: unknown): ParseResult<Verdict<PromptMessages>> {
  const r = parsePromptResponse(input);
  return r.ok ? { ok: true, value: toVerdict<PromptMessages>(r.value.action) } : r;
}

/** Reads a response-phase verdict (already JSON-decoded) into allow / modify / reject. */
export function responseVerdict(input: unknown): ParseResult<Verdict<ResponseChoices>> {
  const r = parseResponseResponse(input);
  return r.ok ? { ok: true, value: toVerdict<ResponseChoices>(r.value.action) } : r;
}

/**
 * A mask must keep the shape of what was sent: as many messages (or choices) as the gateway sent,
 * so the gateway can put each one back where it came from. Returns the problem, or undefined.
 */
export function maskCountProblem(
  sent: number,
  masked: number,
  what: 'messages' | 'choices',
): string | undefined {
  return sent === masked ? undefined : `mask returned ${masked} ${what}, the gateway sent ${sent}`;
}

/** Verdict builders for webhook authors. */
export function pass(why?: string): { action: PassAction } {
  return { action: why === undefined ? {} : { reason: why } };
}

export function maskMessages(messages: Message[], why?: string): { action: PromptMaskAction } {
  return { action: withReason({ body: { messages } }, why) };
}

export function maskChoices(choices: ResponseChoice[], why?: string): { action: ResponseMaskAction } {
  return { action: withReason({ body: { choices } }, why) };
}

export function reject(statusCode: number, body: string, why?: string): { action: RejectAction } {
  return { action: withReason({ body, status_code: statusCode }, why) };
}
