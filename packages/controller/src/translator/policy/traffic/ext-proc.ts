// spec.traffic.extProc → extProc: a Service called over gRPC (Envoy ext_proc v3) for request and
// response headers, and the bodies per BodySendMode. FullDuplexStreamed is not supported yet (named;
// the policy then fails closed). With no address to call, or a mode refused, every request is denied.
import { addDenyAll, lowerFirst, serviceAddress } from '../context.ts';
import type { TrafficMapper } from '../spec.ts';

export const extProc: TrafficMapper<'extProc'> = {
  map(spec, ctx, out, at) {
    const svc = serviceAddress(ctx, `${at.field}.backendRef`, spec.backendRef);
    let ok = svc !== undefined;
    for (const k of ['requestBodyMode', 'responseBodyMode'] as const)
      if (spec[k] === 'FullDuplexStreamed') {
        ctx.problem(`${at.field}.${k}`, 'FullDuplexStreamed is not supported yet: every request is denied');
        ok = false;
      }
    if (!svc || !ok) {
      if (!svc) ctx.problem(at.field, 'no external processing service to call: every request is denied');
      addDenyAll(out);
      return;
    }
    let failureMode = lowerFirst(spec.failureMode);
    if (!svc.resolved && failureMode === 'failOpen') {
      // FailOpen is for an outage of a service that exists; a dangling reference is a mistake.
      ctx.problem(at.field, 'failureMode is FailClosed until the backendRef resolves');
      failureMode = 'failClosed';
    }
    const mode = (m: 'None' | 'Buffered' | 'BufferedPartial') =>
      lowerFirst(m) as 'none' | 'buffered' | 'bufferedPartial';
    out.extProc = {
      host: svc.hostPort,
      failureMode,
      processingOptions: {
        requestBodyMode: mode(spec.requestBodyMode as 'None'),
        responseBodyMode: mode(spec.responseBodyMode as 'None'),
      },
    };
  },
};
