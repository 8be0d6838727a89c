// The CRD sections the mappers read and the standalone shapes they write.
import type { BackendPolicies, FrontendPolicies as FrontendPoliciesSchema, TrafficPolicies } from '@gw/api';
import type { GwBackendSpec } from '@gw/api/crd/gwbackend';
import type { GwPolicySpec } from '@gw/api/crd/gwpolicy';
import { defined } from './context.ts';
import type { SectionMapper } from './section.ts';

export type { BackendPolicies, TrafficPolicies };
export type FrontendPolicies = ReturnType<(typeof FrontendPoliciesSchema)['parse']>;

export type TrafficSpec = NonNullable<GwPolicySpec['traffic']>;
export type FrontendSpec = NonNullable<GwPolicySpec['frontend']>;
/** GwPolicy spec.backend (BackendFull); GwBackend spec.policies is a subset of it. */
export type BackendSpec = NonNullable<GwPolicySpec['backend']>;
export type GwBackendPoliciesSpec = NonNullable<GwBackendSpec['policies']>;

/** The mapper of traffic field K. */
export type TrafficMapper<K extends keyof TrafficSpec> = SectionMapper<
  NonNullable<TrafficSpec[K]>,
  TrafficPolicies
>;
export type FrontendMapper<K extends keyof FrontendSpec> = SectionMapper<
  NonNullable<FrontendSpec[K]>,
  FrontendPolicies
>;
export type BackendMapper<K extends keyof BackendSpec> = SectionMapper<
  NonNullable<BackendSpec[K]>,
  BackendPolicies
>;

type CredentialLocationSpec = NonNullable<NonNullable<TrafficSpec['jwtAuthentication']>['location']>;
type TokenLocation = NonNullable<NonNullable<TrafficPolicies['jwtAuth']>['location']>;

/** A CRD CredentialLocation as the standalone's token location. */
export function tokenLocation(l: CredentialLocationSpec): TokenLocation {
  if (l.header) return { header: defined({ name: l.header.name, prefix: l.header.prefix }) };
  if (l.queryParameter) return { queryParameter: { name: l.queryParameter.name } };
  if (l.cookie) return { cookie: { name: l.cookie.name } };
  return { expression: l.expression ?? '' };
}
