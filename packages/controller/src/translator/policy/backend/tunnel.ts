// spec.backend.tunnel (or GwBackend spec.policies.tunnel) → backendTunnel: the backend is reached
// through an HTTP forward proxy. A Service backendRef becomes its cluster DNS name
// (`<name>.<namespace>.svc.cluster.local:<port>`; TLS to the proxy when the port says appProtocol https
// or is 443); a url becomes `proxy.host` (TLS to the proxy with system CAs for https). `mode` keeps its
// spelling (Auto, Connect).
//
// A tunnel that cannot be built (no or two addresses, a missing Service or port, a kind other than a
// Service) fails closed: the backend is not used, rather than reached without the proxy the user put
// in front of it. The backendRef is local (no namespace field), so no ReferenceGrant applies.
import { defined, type MapContext, quote, serviceAddress } from '../context.ts';
import type { BackendMapper, BackendPolicies, BackendSpec } from '../spec.ts';

type TunnelSpec = NonNullable<BackendSpec['tunnel']>;
type BackendTunnel = NonNullable<BackendPolicies['backendTunnel']>;

export const tunnel: BackendMapper<'tunnel'> = {
  map(spec, ctx, out, at) {
    ctx.rest(at.field, spec, ['backendRef', 'url', 'mode']);
    const proxy = proxyOf(ctx, at.field, spec);
    if (!proxy) {
      ctx.problem(at.field, 'no forward proxy to reach the backend through: the backend is not used');
      ctx.failClosed = true;
      return;
    }
    out.backendTunnel = defined({
      proxy: { host: proxy.host },
      policies: proxy.tls ? { backendTLS: {} } : undefined,
      mode: spec.mode,
    }) as BackendTunnel;
  },
};

/** The proxy's host:port and whether it is spoken to over TLS; undefined (a problem said why) when none. */
function proxyOf(
  ctx: MapContext,
  field: string,
  spec: TunnelSpec,
): { host: string; tls: boolean } | undefined {
  if (spec.backendRef !== undefined && spec.url !== undefined) {
    ctx.problem(field, 'exactly one of backendRef or url must be set, not both');
    return undefined;
  }
  if (spec.backendRef !== undefined) {
    const svc = serviceAddress(ctx, `${field}.backendRef`, spec.backendRef);
    return svc?.resolved ? { host: svc.hostPort, tls: svc.https } : undefined;
  }
  if (spec.url === undefined) {
    ctx.problem(field, 'exactly one of backendRef or url must be set');
    return undefined;
  }
  let u: URL;
  try {
    u = new URL(spec.url);
  } catch {
    ctx.problem(`${field}.url`, `${quote(spec.url)} is not a URL`);
    return undefined;
  }
  const tls = u.protocol === 'https:';
  if ((u.protocol !== 'http:' && !tls) || u.username || u.password || !u.hostname) {
    ctx.problem(`${field}.url`, `${quote(spec.url)} must be http(s)://host[:port] without userinfo`);
    return undefined;
  }
  if (u.pathname !== '/' || u.search)
    ctx.problem(
      `${field}.url`,
      `a forward proxy is addressed by host and port: ${quote(u.pathname + u.search)} is ignored`,
    );
  return { host: `${u.hostname}:${u.port || (tls ? 443 : 80)}`, tls };
}
