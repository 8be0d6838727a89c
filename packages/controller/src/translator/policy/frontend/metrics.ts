// spec.frontend.metrics → metrics: labels added by CEL to the Gateway's request metrics
// (attributes.add, by name), as the standalone's frontendPolicies.metrics.fields.add. A label name
// that is not a Prometheus one, or one gw sets itself, and CEL that does not parse are Invalid at
// the entry.
import { checkMetrics } from '@gw/api';
import type { FrontendMapper } from '../spec.ts';

export const metrics: FrontendMapper<'metrics'> = {
  map(spec, ctx, out, at) {
    const add = spec.attributes.add ?? [];
    add.forEach((a, i) => {
      const problems = checkMetrics({ fields: { add: { [a.name]: a.expression } } }, [], []);
      ctx.check(problems.map((p) => ({ ...p, path: [...at.path, 'attributes', 'add', i] })));
    });
    if (add.length === 0) return;
    out.metrics = { fields: { add: Object.fromEntries(add.map((a) => [a.name, a.expression])) } };
  },
};
