// spec.traffic.extAuth → extAuthz: a Service (or a url) called over gRPC (Envoy ext_authz) or HTTP, over
// TLS when its port says appProtocol https (or is 443) or the url is https, as token endpoints are. forwardBody → includeRequestBody
// (a body over maxSize is answered 413). With no address to call every request is denied; a dangling
// Service forces FailClosed. Its CEL fields and the headers it may send are checked like the standalone's.
// cache: allowed answers kept by key until their ttl, as the standalone's.
// The conditional form: each entry so (../conditional.ts).
import { checkExtAuthz } from '@gw/api';
import { parseByteSize } from '@gw/api/runtime';
import { withConditional } from '../conditional.ts';
import {
  addDenyAll,
  defined,
  lowerFirst,
  type MapContext,
  quote,
  type ServiceAddress,
  serviceAddress,
  serviceCallTls,
  urlAddress,
} from '../context.ts';
import type { TrafficMapper, TrafficPolicies, TrafficSpec } from '../spec.ts';

export const extAuth: TrafficMapper<'extAuth'> = withConditional(
  {
    map(spec, ctx, out, at) {
      ctx.rest(at.field, spec, [
        'backendRef',
        'url',
        'grpc',
        'http',
        'failureMode',
        'timeout',
        'forwardBody',
        'cache',
      ]);
      const svc =
        spec.url !== undefined
          ? extAuthUrl(ctx, at.field, spec)
          : spec.backendRef && serviceAddress(ctx, `${at.field}.backendRef`, spec.backendRef);
      const ext = extAuthz(ctx, at.field, spec, svc);
      ctx.check(checkExtAuthz(ext, at.path));
      if (svc) out.extAuthz = ext;
      else {
        ctx.problem(at.field, 'no authorization service to call: every request is denied');
        addDenyAll(out);
      }
    },
  },
  { keys: ['extAuthz'] },
);

type ExtAuthSpec = Omit<NonNullable<TrafficSpec['extAuth']>, 'conditional'>;

/** The service by url: TLS for https; the path is not used (the http form has its own path). */
function extAuthUrl(ctx: MapContext, field: string, spec: ExtAuthSpec): ServiceAddress | undefined {
  const u = urlAddress(ctx, `${field}.url`, spec.url as string);
  if (u && u.path !== '/')
    ctx.problem(
      `${field}.url`,
      `the url's path ${quote(u.path)} is not used: ${spec.grpc ? 'a gRPC service has none' : 'set http.path'}`,
    );
  return u;
}
type ExtAuthz = NonNullable<TrafficPolicies['extAuthz']>;

/** The standalone form; without a Service address it is only checked, never shipped. */
function extAuthz(
  ctx: MapContext,
  field: string,
  spec: ExtAuthSpec,
  svc: ServiceAddress | undefined,
): ExtAuthz {
  const host = svc?.hostPort ?? '';
  let failureMode = lowerFirst(spec.failureMode ?? 'FailClosed');
  if (svc && !svc.resolved && failureMode === 'failOpen') {
    // FailOpen is for an outage of a service that exists; a dangling reference is a mistake.
    ctx.problem(field, 'failureMode is FailClosed until the backendRef resolves');
    failureMode = 'failClosed';
  }
  const c = spec.cache;
  const common = {
    failureMode,
    ...forwardBody(ctx, field, spec.forwardBody),
    // allowed answers reused by key until the ttl (a duration or CEL) ends
    ...(c
      ? {
          cache: {
            key: [...c.key],
            ttl: c.ttl,
            ...(c.maxEntries !== undefined ? { maxEntries: c.maxEntries } : {}),
          },
        }
      : {}),
    // TLS as the GwPolicies on the Service say, else with the system's roots when it says https
    ...serviceCallTls(ctx, `${field}.backendRef`, svc, spec.timeout),
  };
  if (spec.grpc) {
    const g = spec.grpc;
    return {
      grpc: defined({
        host,
        contextExtensions: g.contextExtensions && { ...g.contextExtensions },
        requestMetadata: g.requestMetadata && { ...g.requestMetadata },
        timeout: spec.timeout,
      }),
      ...common,
    };
  }
  const h = spec.http ?? {};
  return {
    http: defined({
      host,
      path: h.path,
      redirect: h.redirect,
      body: h.body,
      allowedRequestHeaders: h.allowedRequestHeaders && [...h.allowedRequestHeaders],
      addRequestHeaders: h.addRequestHeaders && { ...h.addRequestHeaders },
      allowedResponseHeaders: h.allowedResponseHeaders && [...h.allowedResponseHeaders],
      responseMetadata: h.responseMetadata && { ...h.responseMetadata },
      timeout: spec.timeout,
    }),
    ...common,
  };
}

/** forwardBody.maxSize (a number or a quantity) → includeRequestBody.maxRequestBytes. */
function forwardBody(
  ctx: MapContext,
  field: string,
  f: ExtAuthSpec['forwardBody'],
): { includeRequestBody?: { maxRequestBytes: number } } {
  if (!f) return {};
  const bytes = parseByteSize(f.maxSize);
  if (bytes === undefined || bytes < 1 || bytes > 4294967295) {
    // the CRD's rules refuse it first; an object that skipped them still gets no unbounded buffer
    ctx.problem(`${field}.forwardBody.maxSize`, 'must be at least 1 byte and fit within uint32');
    return { includeRequestBody: { maxRequestBytes: 1 } };
  }
  return { includeRequestBody: { maxRequestBytes: bytes } };
}
