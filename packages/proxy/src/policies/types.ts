// What a policy module provides: a build function from its validated config to a layer.
import type { BackendPolicies, NotBuiltBackendPolicy, NotBuiltTrafficPolicy, TrafficPolicies } from '@gw/api';
import type { GlobalIR, RoutePolicies } from '../config/ir.ts';
import type { Layer } from '../pipeline/layer.ts';

/**
 * Route-level policies; backend connection settings (backendTLS) are handled by the upstream, and the
 * MCP rules and guardrails by the mcp backend kind and `a2a` by the
 * a2a backend kind and `ai` by the ai backend kind (the loader hands them to it). Those refused by name (NotBuilt…) have no module.
 */
export type PolicyName = Exclude<
  keyof TrafficPolicies,
  | 'backendTLS'
  | 'backendTunnel'
  | 'hostRewrite'
  | 'mcpAuthorization'
  | 'mcpGuardrails'
  | 'mcpRemoteRateLimit'
  | 'a2a'
  | 'ai'
  | NotBuiltTrafficPolicy
>;
/**
 * A backend's own policies: those of BackendPolicies that are layers (not connection settings). Each
 * shares its definition with the route policy of the same name.
 */
export type BackendPolicyName = Exclude<
  keyof BackendPolicies,
  'backendTLS' | 'backendTunnel' | 'hostRewrite' | 'http' | 'tcp' | 'ai' | NotBuiltBackendPolicy
> &
  PolicyName;
/** As the IR holds it: credentials are Secrets (config/seal.ts). */
export type PolicyConfig<K extends PolicyName> = NonNullable<RoutePolicies[K]>;

/** How the route key of a listener's gateway-phase policies ends (`<gateway>/<listener>/gateway-phase`). */
export const GATEWAY_PHASE_KEY = '/gateway-phase';

export interface BuildEnv {
  global: GlobalIR;
  /** The whole effective policy of the route, for policies that depend on another (retry ↔ buffer). */
  policies: RoutePolicies;
  /** The route's key, for state that belongs to it. */
  route: string;
  /** Memory shared by every worker of the proxy under `key` (zeroed when new). */
  shared(key: string, bytes: number): SharedArrayBuffer;
}

/** A block of memory every worker of the proxy shares (zeroed when first allocated). */
export interface SharedMemoryNeed {
  key: string;
  bytes: number;
}

export interface PolicyDefinition<K extends PolicyName> {
  name: K;
  build(config: PolicyConfig<K>, env: BuildEnv): Layer;
  /**
   * The blocks `build` will ask `env.shared` for, with the same keys. The main thread allocates them
   * before any worker builds the route, so every worker gets the same buffers; a policy whose state
   * is per worker leaves this out.
   */
  sharedMemory?(config: PolicyConfig<K>, env: Pick<BuildEnv, 'route'>): SharedMemoryNeed[];
}
