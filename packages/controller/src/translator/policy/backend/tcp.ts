// spec.backend.tcp → tcp: keepalive (enabled when set) and connect timeout.
import { defined } from '../context.ts';
import type { BackendMapper, BackendPolicies, BackendSpec } from '../spec.ts';

/** A CRD tcp block as the proxy's `tcp` policy (a guard service's too). */
export function tcpPolicy(spec: NonNullable<BackendSpec['tcp']>): BackendPolicies['tcp'] {
  const ka = spec.keepalive;
  return defined({
    keepalives: ka && { enabled: true, time: ka.time, interval: ka.interval, retries: ka.retries },
    connectTimeout: spec.connectTimeout,
  });
}

export const tcp: BackendMapper<'tcp'> = {
  map(spec, _ctx, out) {
    out.tcp = tcpPolicy(spec);
  },
};
