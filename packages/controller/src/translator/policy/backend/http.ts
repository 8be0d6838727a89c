// spec.backend.http → http: the upstream HTTP version and request timeout.
import { defined } from '../context.ts';
import type { BackendMapper } from '../spec.ts';

export const http: BackendMapper<'http'> = {
  map(spec, _ctx, out) {
    out.http = defined({ version: spec.version, requestTimeout: spec.requestTimeout });
  },
};
