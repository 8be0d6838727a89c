// spec.frontend.accessLog → accessLog: the filter and each added attribute are CEL (checked).
import { checkCel } from '@gw/api';
import { defined, nameMap } from '../context.ts';
import type { FrontendMapper } from '../spec.ts';

export const accessLog: FrontendMapper<'accessLog'> = {
  map(al, ctx, out, at) {
    const af = at.field;
    ctx.rest(af, al, ['filter', 'attributes']);
    if (al.filter !== undefined) ctx.check(checkCel(al.filter, [...at.path, 'filter']));
    al.attributes?.add?.forEach((a, i) => {
      ctx.check(checkCel(a.expression, [...at.path, 'attributes', 'add', i, 'expression']));
    });
    out.accessLog = defined({
      filter: al.filter,
      add:
        al.attributes?.add &&
        nameMap(
          ctx,
          `${af}.attributes.add`,
          al.attributes.add.map((a) => ({ name: a.name, value: a.expression })),
          'attribute',
        ),
      remove: al.attributes?.remove && [...al.attributes.remove],
    });
  },
};
