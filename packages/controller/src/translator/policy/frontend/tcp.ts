// spec.frontend.tcp → tcp: keepalive probes on each client connection (enabled when set), as a
// backend's tcp.keepalive is for the connections to it, and the cap on open connections.
import { defined } from '../context.ts';
import type { FrontendMapper } from '../spec.ts';

export const tcp: FrontendMapper<'tcp'> = {
  map(spec, _ctx, out) {
    const ka = spec.keepalive;
    const tcp = defined({
      keepalives: ka
        ? defined({ enabled: true, time: ka.time, interval: ka.interval, retries: ka.retries })
        : undefined,
      maxConnections: spec.maxConnections,
    });
    if (Object.keys(tcp).length > 0) out.tcp = tcp;
  },
};
