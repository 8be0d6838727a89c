// spec.frontend.accessLog → accessLog: the filter and each added attribute are CEL (checked). otlp:
// the collector a Service backendRef (its cluster address; https:// when its port says appProtocol
// https or is 443) or a url, with its own filter and attributes.
import { type AccessLog, type BackendTLS, checkCel } from '@gw/api';
import { defined, type MapContext, nameMap, serviceAddress, serviceBackendTls } from '../context.ts';
import type { FrontendMapper, FrontendSpec } from '../spec.ts';

type AccessLogSpec = NonNullable<FrontendSpec['accessLog']>;
type Attributes = AccessLogSpec['attributes'];

export const accessLog: FrontendMapper<'accessLog'> = {
  map(al, ctx, out, at) {
    const af = at.field;
    ctx.rest(af, al, ['preset', 'filter', 'attributes', 'otlp']);
    if (al.filter !== undefined) ctx.check(checkCel(al.filter, [...at.path, 'filter']));
    const fields = (attributes: Attributes, field: string, path: (string | number)[]) => {
      attributes?.add?.forEach((a, i) => {
        ctx.check(checkCel(a.expression, [...path, 'add', i, 'expression']));
      });
      return {
        add: attributes?.add && added(ctx, `${field}.add`, attributes.add),
        remove: attributes?.remove && [...attributes.remove],
      };
    };
    const own = fields(al.attributes, `${af}.attributes`, [...at.path, 'attributes']);
    const otlp = al.otlp;
    let exported: NonNullable<AccessLog['otlp']> | undefined;
    if (otlp) {
      const of = `${af}.otlp`;
      const op = [...at.path, 'otlp'];
      if (otlp.filter !== undefined) ctx.check(checkCel(otlp.filter, [...op, 'filter']));
      let host = otlp.url;
      let backendTLS: BackendTLS | undefined;
      if (otlp.backendRef) {
        const svc = serviceAddress(ctx, `${of}.backendRef`, otlp.backendRef);
        host = svc && (svc.https ? `https://${svc.hostPort}` : svc.hostPort);
        backendTLS = serviceBackendTls(ctx, `${of}.backendRef`, svc);
      }
      if (host === undefined)
        ctx.problem(of, 'no collector to export to: access log records are not exported');
      else
        exported = defined({
          host,
          protocol: (otlp.protocol ?? 'GRPC').toLowerCase() as 'grpc' | 'http',
          path: otlp.path,
          filter: otlp.filter,
          fields:
            otlp.attributes && defined(fields(otlp.attributes, `${of}.attributes`, [...op, 'attributes'])),
          policies: backendTLS && { backendTLS },
        });
    }
    out.accessLog = defined({
      preset: al.preset === 'Otel' ? ('otel' as const) : undefined,
      filter: al.filter,
      ...own,
      otlp: exported,
    });
  },
};

const added = (ctx: MapContext, field: string, list: { name: string; expression: string }[]) =>
  nameMap(
    ctx,
    field,
    list.map((a) => ({ name: a.name, value: a.expression })),
    'attribute',
  );
