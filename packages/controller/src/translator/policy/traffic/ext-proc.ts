// spec.traffic.extProc → extProc: a Service called over gRPC (Envoy ext_proc v3) for request and
// response headers, and the bodies per BodySendMode (FullDuplexStreamed included). With no address to
// call, every request is denied.
import { addDenyAll, lowerFirst, serviceAddress } from '../context.ts';
import type { TrafficMapper } from '../spec.ts';

export const extProc: TrafficMapper<'extProc'> = {
  map(spec, ctx, out, at) {
    const svc = serviceAddress(ctx, `${at.field}.backendRef`, spec.backendRef);
    if (!svc) {
      ctx.problem(at.field, 'no external processing service to call: every request is denied');
      addDenyAll(out);
      return;
    }
    let failureMode = lowerFirst(spec.failureMode);
    if (!svc.resolved && failureMode === 'failOpen') {
      // FailOpen is for an outage of a service that exists; a dangling reference is a mistake.
      ctx.problem(at.field, 'failureMode is FailClosed until the backendRef resolves');
      failureMode = 'failClosed';
    }
    const mode = (m: 'None' | 'Buffered' | 'BufferedPartial' | 'FullDuplexStreamed') =>
      lowerFirst(m) as 'none' | 'buffered' | 'bufferedPartial' | 'fullDuplexStreamed';
    out.extProc = {
      host: svc.hostPort,
      failureMode,
      processingOptions: {
        requestBodyMode: mode(spec.requestBodyMode),
        responseBodyMode: mode(spec.responseBodyMode),
      },
    };
  },
};
