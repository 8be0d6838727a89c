// spec.traffic.phase: PostRouting (the default) merges the section into its targets' routes;
// PreRouting sends it as a gateway-phase policy (attachment.ts), which the CRD's rules limit to
// Gateway and ListenerSet targets and to the policies that run before routing.
import type { TrafficMapper } from '../spec.ts';

export const phase: TrafficMapper<'phase'> = {
  map() {},
};
