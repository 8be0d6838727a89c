// spec.traffic.cors → cors.
import { defined } from '../context.ts';
import type { TrafficMapper } from '../spec.ts';

export const cors: TrafficMapper<'cors'> = {
  map(c, _ctx, out) {
    out.cors = defined({
      allowCredentials: c.allowCredentials,
      allowHeaders: c.allowHeaders && [...c.allowHeaders],
      allowMethods: c.allowMethods && [...c.allowMethods],
      allowOrigins: c.allowOrigins && [...c.allowOrigins],
      exposeHeaders: c.exposeHeaders && [...c.exposeHeaders],
      // seconds in the CRD, a duration in the standalone
      maxAge: c.maxAge === undefined ? undefined : `${c.maxAge}s`,
    });
  },
};
