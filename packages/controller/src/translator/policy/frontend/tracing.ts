// spec.frontend.tracing (agentgateway's flat shape) → tracing: the OTLP collector is a Service
// backendRef (its cluster address; https:// when its port says appProtocol https or is 443; the
// backendTLS of GwPolicies on that Service as the export's policies) or a url;
// protocol and path as written; resources and attributes.add lists become the standalone's maps of CEL;
// sampling and filter are CEL. Each expression is checked at its CRD path.
import { type BackendTLS, checkCel } from '@gw/api';
import { defined, nameMap, serviceAddress, serviceBackendTls } from '../context.ts';
import type { FrontendMapper } from '../spec.ts';

export const tracing: FrontendMapper<'tracing'> = {
  map(t, ctx, out, at) {
    ctx.rest(at.field, t, [
      'backendRef',
      'url',
      'protocol',
      'path',
      'randomSampling',
      'clientSampling',
      'filter',
      'resources',
      'attributes',
    ]);
    for (const k of ['randomSampling', 'clientSampling', 'filter'] as const) {
      const expr = t[k];
      if (expr !== undefined) ctx.check(checkCel(expr, [...at.path, k]));
    }
    t.resources?.forEach((r, i) => {
      ctx.check(checkCel(r.expression, [...at.path, 'resources', i, 'expression']));
    });
    t.attributes?.add?.forEach((a, i) => {
      ctx.check(checkCel(a.expression, [...at.path, 'attributes', 'add', i, 'expression']));
    });
    let host = t.url;
    let backendTLS: BackendTLS | undefined;
    if (t.backendRef) {
      const svc = serviceAddress(ctx, `${at.field}.backendRef`, t.backendRef);
      host = svc && (svc.https ? `https://${svc.hostPort}` : svc.hostPort);
      backendTLS = serviceBackendTls(ctx, `${at.field}.backendRef`, svc);
    }
    if (host === undefined) {
      ctx.problem(at.field, 'no collector to export to: requests are not traced');
      return;
    }
    const named = (field: string, list: { name: string; expression: string }[] | undefined) =>
      list &&
      nameMap(
        ctx,
        `${at.field}.${field}`,
        list.map((e) => ({ name: e.name, value: e.expression })),
        'attribute',
      );
    out.tracing = defined({
      host,
      protocol: (t.protocol ?? 'GRPC').toLowerCase() as 'grpc' | 'http',
      path: t.path,
      resources: named('resources', t.resources),
      attributes: named('attributes.add', t.attributes?.add),
      remove: t.attributes?.remove && [...t.attributes.remove],
      randomSampling: t.randomSampling,
      clientSampling: t.clientSampling,
      filter: t.filter,
      policies: backendTLS && { backendTLS },
    });
  },
};
