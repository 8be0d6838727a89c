// extAuthz: asks an external authorization service, over Envoy's ext_authz v3 gRPC API or plain HTTP,
// whether the request may pass. Allowed: the service's header changes and metadata (`extauthz.*` in
// CEL) apply. Denied: the client gets the service's answer. No answer within the timeout (default
// 200ms, as Envoy) or an error: `failureMode: failClosed` (default) answers 403 (or the status of
// agentgateway's `{denyWithStatus}`), `failOpen` lets it pass.
// includeRequestBody sends (the head of) the request body along; policies.backendTLS is TLS to the service;
// `cache` reuses allowed answers by key (cache.ts).
import { compileCel } from '../../cel/cel.ts';
import type { BackendTlsIR, ExtAuthzIR } from '../../config/ir.ts';
import { GwError } from '../../errors.ts';
import { Lazy } from '../../lazy.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import { withConditional } from '../conditional.ts';
import { serviceAuthOf, serviceHeadersOf } from '../service-call.ts';
import { decisionCache } from './cache.ts';
import type { Check } from './decision.ts';
import { httpCheck } from './http-check.ts';
import { bodyOptions, type CheckBody, readCheckBody } from './request-body.ts';

// grpc-js and the generated ext_authz messages load with the first config that asks over gRPC.
const grpc = new Lazy(() => import('./grpc-check.ts'));

/** The gRPC form; what can be wrong in its config (CEL) fails the build, before anything loads. */
function grpcCheckOf(
  cfg: Extract<ExtAuthzIR, { grpc: unknown }>['grpc'],
  tls: BackendTlsIR | undefined,
  serviceHeaders: Record<string, string>,
  auth: ((ctx: RequestContext) => Promise<Record<string, string>>) | undefined,
): Check {
  const metadata = Object.entries(cfg.requestMetadata ?? {}).map(([k, v]) => [k, compileCel(v)] as const);
  const check = grpc.derive((m) => m.grpcCheck(cfg, metadata, tls, serviceHeaders, auth));
  return (ctx, body) => (check.value ? check.value(ctx, body) : check.ready.then((c) => c(ctx, body)));
}

export const extAuthz = withConditional({
  name: 'extAuthz',
  build(config: ExtAuthzIR) {
    const failOpen = config.failureMode?.toLowerCase() === 'failopen';
    const tls = config.policies?.backendTLS;
    const serviceHeaders = serviceHeadersOf(config.policies) ?? {};
    const auth = serviceAuthOf(config.policies);
    const check =
      'grpc' in config
        ? grpcCheckOf(config.grpc, tls, serviceHeaders, auth)
        : httpCheck(config.http, tls, serviceHeaders, auth);
    // With http.body the expression is the check's body (agentgateway): nothing of the request is read.
    const readBody =
      'http' in config && config.http.body ? undefined : bodyOptions(config.includeRequestBody);
    const cache = config.cache ? decisionCache(config.cache) : undefined;
    return async (ctx, next) => {
      const start = ctx.obs ? performance.now() : null;
      const key = cache?.keyOf(ctx);
      const hit = key === undefined ? undefined : cache?.get(key);
      if (hit) {
        hit.apply(ctx);
        ctx.obs?.event(ctx, 'extAuthz', { result: 'allowed', cached: true }, start);
        await next(ctx);
        if (hit.onResponse && ctx.response) hit.onResponse(ctx.response.headers);
        return;
      }
      let body: CheckBody | undefined;
      if (readBody) {
        try {
          body = await readCheckBody(ctx, readBody);
        } catch (err) {
          ctx.obs?.event(ctx, 'extAuthz', { result: 'bodyTooLarge', limit: readBody.limit }, start, 'warn');
          throw err;
        }
      }
      const d = await check(ctx, body);
      // What went to the service, never the body itself: its size and whether it was cut short.
      const sent = body ? { body: { bytes: body.data.length, partial: body.partial } } : {};
      if (d.kind === 'failure') {
        ctx.obs?.event(
          ctx,
          'extAuthz',
          { result: 'failure', reason: d.reason, failOpen, ...sent },
          start,
          'warn',
        );
        if (!failOpen)
          throw new GwError('GW_ERR_FORBIDDEN', 'external authorization failed', {
            ...(config.failureStatus !== undefined ? { status: config.failureStatus } : {}),
          });
        return next(ctx);
      }
      if (d.kind === 'deny') {
        if (d.metadata) ctx.ext.extauthz = d.metadata;
        const status = d.response.status;
        ctx.obs?.event(ctx, 'extAuthz', { result: 'denied', status, ...sent }, start, 'warn');
        if (d.response instanceof GwError) throw d.response;
        // The request goes no further; its body is not read.
        ctx.body = null;
        ctx.response = d.response;
        return;
      }
      d.apply(ctx);
      if (key !== undefined) cache?.put(key, d, ctx);
      ctx.obs?.event(ctx, 'extAuthz', { result: 'allowed', ...sent }, start);
      await next(ctx);
      if (d.onResponse && ctx.response) d.onResponse(ctx.response.headers);
    };
  },
});
