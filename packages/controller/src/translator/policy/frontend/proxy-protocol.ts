// spec.frontend.proxyProtocol → proxyProtocol: the PROXY header (V1, V2 or All) the Gateway's
// connections start with, required (Strict) or taken when present (Optional).
import type { FrontendMapper } from '../spec.ts';

export const proxyProtocol: FrontendMapper<'proxyProtocol'> = {
  map(spec, _ctx, out) {
    out.proxyProtocol = {
      version: spec.version === 'All' ? 'all' : spec.version === 'V1' ? 'v1' : 'v2',
      mode: spec.mode === 'Optional' ? 'optional' : 'strict',
    };
  },
};
