// A guard's rejection as the error the client gets: the configured status and message, in the
// client's own error format (the route words GwErrors by the path the client called).
import type { LlmGuardIR } from '../../config/ir.ts';
import { GwError } from '../../errors.ts';

export function rejection(g: LlmGuardIR): GwError {
  const r = g.rejection;
  const headers = { ...r.headers?.add, ...r.headers?.set };
  return new GwError('GW_ERR_LLM_GUARDRAIL', r.message, {
    status: r.status,
    ...(Object.keys(headers).length > 0 ? { headers } : {}),
  });
}

/** A guard service's own rejection (a webhook's `status_code` and `body`), in the client's format. */
export function serviceRejection(status: number, message: string): GwError {
  // A 1xx is not an answer a client can be given: the default rejection status stands in.
  return new GwError('GW_ERR_LLM_GUARDRAIL', message, { status: status < 200 ? 403 : status });
}

/** A guard service that failed closed: a 5xx naming the guard and how it failed, never a stack. */
export function serviceFailure(g: LlmGuardIR, phase: string, how: string): GwError {
  return new GwError('GW_ERR_LLM_GUARDRAIL_UNAVAILABLE', `guardrail ${g.name} failed (${phase}): ${how}`);
}
