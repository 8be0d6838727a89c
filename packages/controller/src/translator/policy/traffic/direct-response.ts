// spec.traffic.directResponse → directResponse.
import { defined } from '../context.ts';
import type { TrafficMapper } from '../spec.ts';

export const directResponse: TrafficMapper<'directResponse'> = {
  map(spec, _ctx, out) {
    out.directResponse = defined({ status: spec.status, body: spec.body });
  },
};
