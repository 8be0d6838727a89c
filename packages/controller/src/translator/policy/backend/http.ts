// spec.backend.http → http: the upstream HTTP version and request timeout.
import { defined } from '../context.ts';
import type { BackendMapper, BackendPolicies, BackendSpec } from '../spec.ts';

/** A CRD http block as the proxy's `http` policy (a guard service's too). */
export function httpPolicy(spec: NonNullable<BackendSpec['http']>): BackendPolicies['http'] {
  return defined({ version: spec.version, requestTimeout: spec.requestTimeout });
}

export const http: BackendMapper<'http'> = {
  map(spec, _ctx, out) {
    out.http = httpPolicy(spec);
  },
};
