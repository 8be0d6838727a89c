// spec.frontend.connect → connect: what an HTTP CONNECT request gets: Deny (405), Route (routed by its
// authority to a backend that gets a TCP connection) or Tunnel (a 200, then the bytes are a new
// connection to the Gateway's own listener port the CONNECT names).
import type { FrontendMapper } from '../spec.ts';

const MODES = { Deny: 'deny', Route: 'route', Tunnel: 'tunnel' } as const;

export const connect: FrontendMapper<'connect'> = {
  map(spec, _ctx, out) {
    out.connect = { mode: MODES[spec.mode as keyof typeof MODES] ?? 'deny' };
  },
};
