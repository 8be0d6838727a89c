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
