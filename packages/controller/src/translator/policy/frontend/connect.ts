// spec.frontend.connect → connect: what an HTTP CONNECT request gets, Deny (405) or Route (routed by
// its authority to a backend that gets a TCP connection); Tunnel is named, not applied.
import type { FrontendMapper } from '../spec.ts';

export const connect: FrontendMapper<'connect'> = {
  map(spec, ctx, out, at) {
    if (spec.mode === 'Tunnel') {
      ctx.unsupported(`${at.field}.mode Tunnel`);
      return;
    }
    out.connect = { mode: spec.mode === 'Route' ? 'route' : 'deny' };
  },
};
