// spec.traffic.extProc → extProc: a Service (or a plain http url) called over gRPC (Envoy ext_proc v3) for request and
// response headers, and the bodies per BodySendMode (FullDuplexStreamed, processingOptions' default,
// included), with the attributes and metadata context its CEL gives. With no address to call, every
// request is denied. The conditional form: each entry so
// (../conditional.ts).

import { checkExtProcCel } from '@gw/api';
import { withConditional } from '../conditional.ts';
import { addDenyAll, defined, grpcAddress, lowerFirst, serviceCallTls } from '../context.ts';
import type { TrafficMapper } from '../spec.ts';

export const extProc: TrafficMapper<'extProc'> = withConditional(
  {
    map(spec, ctx, out, at) {
      ctx.rest(at.field, spec, [
        'backendRef',
        'url',
        'failureMode',
        'requestBodyMode',
        'responseBodyMode',
        'processingOptions',
        'metadataContext',
        'requestAttributes',
        'responseAttributes',
      ]);
      // The CEL of the attributes and the metadata context (and the gRPC metadata keys) as the
      // standalone loader checks them, at this policy's field paths.
      ctx.check(
        checkExtProcCel(
          {
            metadataContext: spec.metadataContext,
            requestAttributes: spec.requestAttributes,
            responseAttributes: spec.responseAttributes,
          },
          at.path,
        ),
      );
      const svc = grpcAddress(ctx, at.field, spec);
      const po = spec.processingOptions;
      const modes = {
        requestBodyMode: po?.requestBodyMode ?? spec.requestBodyMode ?? 'None',
        responseBodyMode: po?.responseBodyMode ?? spec.responseBodyMode ?? 'None',
      };
      if (!svc) {
        ctx.problem(at.field, 'no external processing service to call: every request is denied');
        addDenyAll(out);
        return;
      }
      let failureMode = lowerFirst(spec.failureMode ?? 'FailClosed');
      if (!svc.resolved && failureMode === 'failOpen') {
        // FailOpen is for an outage of a service that exists; a dangling reference is a mistake.
        ctx.problem(at.field, 'failureMode is FailClosed until the backendRef resolves');
        failureMode = 'failClosed';
      }
      const mode = (m: 'None' | 'Buffered' | 'BufferedPartial' | 'FullDuplexStreamed') =>
        lowerFirst(m) as 'none' | 'buffered' | 'bufferedPartial' | 'fullDuplexStreamed';
      out.extProc = {
        host: svc.hostPort,
        ...serviceCallTls(ctx, `${at.field}.backendRef`, svc),
        failureMode,
        ...defined({
          metadataContext: spec.metadataContext,
          requestAttributes: spec.requestAttributes,
          responseAttributes: spec.responseAttributes,
        }),
        processingOptions: defined({
          requestBodyMode: mode(modes.requestBodyMode),
          responseBodyMode: mode(modes.responseBodyMode),
          requestHeaderMode: po && lowerFirst(po.requestHeaderMode),
          responseHeaderMode: po && lowerFirst(po.responseHeaderMode),
          requestTrailerMode: po && lowerFirst(po.requestTrailerMode),
          responseTrailerMode: po && lowerFirst(po.responseTrailerMode),
          allowModeOverride: po?.allowModeOverride || undefined,
        }),
      };
    },
  },
  { keys: ['extProc'] },
);
