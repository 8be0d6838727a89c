// spec.traffic.ipAccessControl → ipAccessControl: the same fields; the addresses and CIDRs checked.
import { checkIpAccessControl } from '@gw/api';
import { defined } from '../context.ts';
import type { TrafficMapper } from '../spec.ts';

export const ipAccessControl: TrafficMapper<'ipAccessControl'> = {
  map(spec, ctx, out, at) {
    out.ipAccessControl = defined({
      allow: spec.allow && [...spec.allow],
      deny: spec.deny && [...spec.deny],
      xffNumTrustedHops: spec.xffNumTrustedHops,
      skipPrivateIps: spec.skipPrivateIps,
      enforceFullChain: spec.enforceFullChain,
      maxXffLength: spec.maxXffLength,
    });
    ctx.check(checkIpAccessControl(out.ipAccessControl, at.path));
  },
};
