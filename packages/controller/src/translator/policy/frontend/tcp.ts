// spec.frontend.tcp → tcp: keepalive probes on each client connection (enabled when set), as a
// backend's tcp.keepalive is for the connections to it.
import { defined } from '../context.ts';
import type { FrontendMapper } from '../spec.ts';

export const tcp: FrontendMapper<'tcp'> = {
  map(spec, _ctx, out) {
    const ka = spec.keepalive;
    if (ka)
      out.tcp = {
        keepalives: defined({ enabled: true, time: ka.time, interval: ka.interval, retries: ka.retries }),
      };
  },
};
