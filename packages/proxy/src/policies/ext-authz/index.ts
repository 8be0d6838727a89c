// extAuthz: asks an external authorization service, over Envoy's ext_authz v3 gRPC API or plain HTTP,
// whether the request may pass. Allowed: the service's header changes and metadata (`extauthz.*` in
// CEL) apply. Denied: the client gets the service's answer. No answer within the timeout (default
// 200ms, as Envoy) or an error: `failureMode: failClosed` (default) answers 403, `failOpen` lets it pass.
import type { ExtAuthz } from '@gw/api';
import { compileCel } from '../../cel/cel.ts';
import { GwError } from '../../errors.ts';
import { Lazy } from '../../lazy.ts';
import { withConditional } from '../conditional.ts';
import type { Check } from './decision.ts';
import { httpCheck } from './http-check.ts';

// grpc-js and the generated ext_authz messages load with the first config that asks over gRPC.
const grpc = new Lazy(() => import('./grpc-check.ts'));

/** The gRPC form; what can be wrong in its config (CEL) fails the build, before anything loads. */
function grpcCheckOf(cfg: Extract<ExtAuthz, { grpc: unknown }>['grpc']): Check {
  const metadata = Object.entries(cfg.requestMetadata ?? {}).map(([k, v]) => [k, compileCel(v)] as const);
  const check = grpc.derive((m) => m.grpcCheck(cfg, metadata));
  return (ctx) => (check.value ? check.value(ctx) : check.ready.then((c) => c(ctx)));
}

export const extAuthz = withConditional({
  name: 'extAuthz',
  build(config: ExtAuthz) {
    const failOpen = config.failureMode?.toLowerCase() === 'failopen';
    const check = 'grpc' in config ? grpcCheckOf(config.grpc) : httpCheck(config.http);
    return async (ctx, next) => {
      const start = ctx.obs ? performance.now() : null;
      const d = await check(ctx);
      if (d.kind === 'failure') {
        ctx.obs?.event(ctx, 'extAuthz', { result: 'failure', reason: d.reason, failOpen }, start, 'warn');
        if (!failOpen) throw new GwError('GW_ERR_FORBIDDEN', 'external authorization failed');
        return next(ctx);
      }
      if (d.kind === 'deny') {
        if (d.metadata) ctx.ext.extauthz = d.metadata;
        const status = d.response.status;
        ctx.obs?.event(ctx, 'extAuthz', { result: 'denied', status }, start, 'warn');
        if (d.response instanceof GwError) throw d.response;
        // The request goes no further; its body is not read.
        ctx.body = null;
        ctx.response = d.response;
        return;
      }
      d.apply(ctx);
      ctx.obs?.event(ctx, 'extAuthz', { result: 'allowed' }, start);
      await next(ctx);
      if (d.onResponse && ctx.response) d.onResponse(ctx.response.headers);
    };
  },
});
