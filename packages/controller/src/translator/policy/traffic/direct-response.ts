// spec.traffic.directResponse → directResponse: a status, and a body or a CEL body, and CEL headers;
// or the conditional form of those (../conditional.ts).
import { checkCel } from '@gw/api';
import { withConditional } from '../conditional.ts';
import { defined, nameMap } from '../context.ts';
import type { TrafficMapper } from '../spec.ts';

export const directResponse: TrafficMapper<'directResponse'> = withConditional(
  {
    map(spec, ctx, out, at) {
      ctx.rest(at.field, spec, ['status', 'body', 'bodyExpression', 'headers']);
      // the CRD requires status (of the plain form, and of each conditional entry)
      if (spec.status === undefined) return;
      if (spec.bodyExpression !== undefined)
        ctx.check(checkCel(spec.bodyExpression, [...at.path, 'bodyExpression']));
      spec.headers?.forEach((h, i) => {
        ctx.check(checkCel(h.value, [...at.path, 'headers', i, 'value']));
      });
      out.directResponse = defined({
        status: spec.status,
        body: spec.body,
        bodyExpression: spec.bodyExpression,
        headers: spec.headers && nameMap(ctx, `${at.field}.headers`, spec.headers, 'header'),
      });
    },
  },
  { keys: ['directResponse'] },
);
