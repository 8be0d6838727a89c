// spec.backend.tcp → tcp: keepalive (enabled when set) and connect timeout.
import { defined } from '../context.ts';
import type { BackendMapper } from '../spec.ts';

export const tcp: BackendMapper<'tcp'> = {
  map(spec, _ctx, out) {
    const ka = spec.keepalive;
    out.tcp = defined({
      keepalives: ka && { enabled: true, time: ka.time, interval: ka.interval, retries: ka.retries },
      connectTimeout: spec.connectTimeout,
    });
  },
};
