// spec.backend.extAuth → the backend's extAuthz: translated as spec.traffic.extAuth is (its Service or
// url, gRPC or HTTP, TLS, forwardBody, the conditional form), and checked for the requests sent to
// this backend after the route's policies. Without a service to call, the backend denies every
// request (its authorization gets the deny-all rule), as the traffic form does for the route.
import type { BackendMapper, TrafficPolicies } from '../spec.ts';
import { extAuth as trafficExtAuth } from '../traffic/ext-auth.ts';

export const extAuth: BackendMapper<'extAuth'> = {
  map(spec, ctx, out, at) {
    const t: TrafficPolicies = {};
    trafficExtAuth.map(spec, ctx, t, at);
    if (t.extAuthz) out.extAuthz = t.extAuthz;
    // a fresh policy: the deny-all rule is its only authorization
    const deny = [t.authorization ?? []].flat()[0];
    if (deny) out.authorization = deny;
  },
};
